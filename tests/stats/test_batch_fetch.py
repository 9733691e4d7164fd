"""Inferred steps over a DataLoader begin at their batch's fetch (decisions 606 and 607): step 0
after the set-up before the loop's first batch (Lightning's sanity check, hooks and checks),
every later one before its lead (an optimizer step or a loss that leads: the epoch's edges)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from tests.support.analysis import MS
from tests.support.epochs import epochs_loop
from tests.support.fit_loop import NEXT, SEED, fit_loop

TRAIN = 8


def _steps(profile: Profile, n: int) -> tuple[np.ndarray, np.ndarray, str]:
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == n, found.description
    return np.asarray(found.start_ns) / MS, np.asarray(found.end_ns) / MS, found.description


def _events(profile: Profile, name: str) -> np.ndarray:
    """The starts (ms) of the events named ``name``, in time order."""
    at = np.flatnonzero(profile.name == profile.strings.id_of(name))
    return np.sort(profile.start_ns[at]) / MS


def test_step_0_begins_at_the_first_batchs_fetch_after_lightnings_set_up() -> None:
    """Lightning makes the training iterator (its workers start), then runs its hooks and
    checks, then fetches batch 0: the script's first batch, timed from
    ``on_train_epoch_start``, begins at that fetch (lit1: 202.8 ms; stepscope read 256.2
    from the set-up's first op)."""
    profile, marks, firsts = epochs_loop(train=TRAIN, setup=(50.0, 20.0))
    starts, _, text = _steps(profile, 3 * TRAIN)
    assert abs(starts[0] - firsts[0]) < 1e-3
    setup = firsts[0]  # from the thread's first op at 0
    assert f"step 0 from its batch's fetch, after {setup:.2f} ms of set-up (in no step)" in text
    # the later epochs still begin at their iter() (decision 562)
    assert np.allclose(starts[[TRAIN, 2 * TRAIN]], marks[1:], atol=0.01)


def test_step_0_begins_at_the_pass_made_just_before_its_fetch() -> None:
    """``for batch in loader:`` after set-up code: the pass's ``iter()`` (the workers'
    start), then at once the fetch; the script's clock, started before the ``for``, counts
    the ``iter()`` but not the set-up."""
    profile, marks, _ = epochs_loop(train=TRAIN, setup=(50.0, 0.0))
    starts, _, text = _steps(profile, 3 * TRAIN)
    assert abs(starts[0] - marks[0]) < 1e-3
    assert abs(marks[0] - 50.05) < 1e-3
    assert "after 50.05 ms of set-up" in text
    # a single-process loader's pass begins with its base seed's ops
    profile, _ = fit_loop(setup_ms=30.0)
    starts, _, _ = _steps(profile, 40)
    assert abs(starts[0] - _events(profile, SEED[0])[0]) < 1e-3


def test_without_set_up_step_0_is_unchanged() -> None:
    profile, marks, _ = epochs_loop(train=TRAIN)
    starts, _, text = _steps(profile, 3 * TRAIN)
    assert starts[0] == 0.0 == marks[0]
    assert "set-up" not in text


def test_each_step_begins_at_its_batchs_fetch_before_its_lead() -> None:
    """The optimizer step leads a fit over single-process loaders (decision 585): each step
    ran from its optimizer step to the next and held the next batch's fetch; now from its own
    fetch. The epoch's last step ends with its own work and holds its own fetch."""
    profile, spans = fit_loop(epochs=3)
    starts, ends, text = _steps(profile, 60)
    fetches = _events(profile, NEXT)
    # each training batch's fetch: the last one before its optimizer step
    own = np.array([fetches[fetches < begin].max() for begin, _ in spans])
    assert np.allclose(starts[1:], own[1:], atol=1e-3)
    assert starts[0] == 0.0  # the pass's seed, then its fetch
    for k in (19, 39):
        assert abs(ends[k] - spans[k][1]) < 1e-3
    inner = [k for k in range(59) if k not in (19, 39)]
    assert np.allclose(ends[inner], starts[[k + 1 for k in inner]])
    assert "59 steps from their batch's DataLoader fetch, before the lead" in text


def test_an_epochs_first_step_led_by_its_optimizer_step_holds_its_workers_start() -> None:
    """With workers, the epoch's first fetch follows its ``iter()``: once the step begins at
    the fetch, decision 562 moves it to the ``iter()`` (lit_p2: 167.1 ms for the script's
    166.8; it read 107.9 from the optimizer step)."""
    profile, _ = fit_loop(epochs=3, workers=True)
    starts, _, text = _steps(profile, 60)
    marks = _events(profile, "iter(DataLoader)")
    assert len(marks) == 3
    assert np.allclose(starts[[20, 40]], marks[1:], atol=1e-3)
    assert "the first step of 2 later epochs from its DataLoader's iter()" in text
