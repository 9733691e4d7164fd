"""An epoch's first step begins at its DataLoader's ``iter()``, the workers' start (decision
562): a user timing each batch from the epoch's start counts it there, as input."""

from __future__ import annotations

import numpy as np

from stepscope.stats import build_step_db
from stepscope.stats.events import EventType
from stepscope.stats.steps.infer import infer_steps
from tests.support.analysis import MS
from tests.support.epochs import ITER_MS, epochs_loop

TRAIN = 8


def _starts_ms(profile: object) -> np.ndarray:
    found = infer_steps(profile)  # type: ignore[arg-type]
    assert found is not None
    assert len(found) == 3 * TRAIN, found.description
    return np.asarray(found.start_ns) / MS


def test_an_epochs_first_step_begins_where_its_loader_starts_its_workers() -> None:
    profile, marks, _ = epochs_loop(train=TRAIN)
    starts = _starts_ms(profile)
    # epochs 2 and 3 begin at their iter(); step 0 keeps its rule (the capture's start)
    assert np.allclose(starts[[TRAIN, 2 * TRAIN]], marks[1:], atol=0.01)
    assert "the first step of 2 later epochs from its DataLoader's iter()" in (
        infer_steps(profile).description  # type: ignore[union-attr]
    )
    db = build_step_db(profile)
    # the workers' start is the epoch's first step's input, as the fetch after it is
    wait = db.type_ns[:, EventType.HOST_WAIT_INPUT // 10] / MS
    assert wait[TRAIN] >= ITER_MS + 2.0 and wait[2 * TRAIN] >= ITER_MS + 2.0
    assert np.all(wait[TRAIN + 1 : 2 * TRAIN] < 2.1)  # the others: their fetch alone


def test_a_validation_loaders_iter_moves_nothing_but_its_own_pass() -> None:
    profile, marks, _ = epochs_loop(train=TRAIN, val=4)
    starts = _starts_ms(profile)
    assert np.allclose(starts[[TRAIN, 2 * TRAIN]], marks[1:], atol=0.01)


def test_a_pass_without_a_mark_begins_at_its_fetch() -> None:
    profile, _, firsts = epochs_loop(train=TRAIN, marked=False)
    starts = _starts_ms(profile)
    assert np.allclose(starts[[TRAIN, 2 * TRAIN]], firsts[1:], atol=0.01)
