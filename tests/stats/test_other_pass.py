"""A step followed by a pass over another DataLoader ends with its own work (decision 585):
a Lightning fit over single-process loaders, whose optimizer step leads, held the
validation loop in an epoch's last step (decision 568)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from tests.support.analysis import MS
from tests.support.fit_loop import STEP, fit_loop


def _kept_in_step(profile: Profile) -> np.ndarray:
    """The steps' durations (ms) of a 3-epoch fit whose work after each epoch's last batch
    stays in that step: 60 steps, none cut before another loader's pass."""
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == 60
    assert "another DataLoader's pass" not in found.description
    return (np.asarray(found.end_ns) - np.asarray(found.start_ns)) / MS


def test_an_epochs_last_step_ends_before_the_validation_pass() -> None:
    profile, spans = fit_loop(epochs=3)
    found = infer_steps(profile)
    assert found is not None
    assert STEP in found.description
    assert len(found) == 60
    ends = np.asarray(found.end_ns) / MS
    # each epoch's last step ends with its optimizer step, not 60 ms later at the next
    # epoch's first one (the validation's 6 forwards between them)
    for k in (19, 39):
        assert abs(ends[k] - spans[k][1]) < 1e-3
    assert "2 steps before another DataLoader's pass" in found.description
    # the other steps keep their bounds: each ends where the next begins
    starts = np.asarray(found.start_ns) / MS
    inner = [k for k in range(59) if k not in (19, 39)]
    assert np.allclose(ends[inner], starts[[k + 1 for k in inner]])


def test_work_in_a_step_that_fetches_nothing_stays_in_it() -> None:
    """An evaluation on tensors at hand (no loader's fetch) after a step: the script that
    times its iteration counts it, and so does the step."""
    dur = _kept_in_step(fit_loop(epochs=3, val=1, val_fetches=False)[0])
    assert dur[19] > 10.0 and dur[39] > 10.0


def test_an_evaluation_over_a_loader_inside_the_pass_stays_in_its_step() -> None:
    """A plain loop that evaluates over a validation loader every 20 steps, inside its
    iteration, then fetches its next batch from the same pass: the script timing that
    iteration counts the evaluation (/tmp/lit13/evalloop.py: 15.66 ms against 1.5)."""
    dur = _kept_in_step(fit_loop(epochs=3, new_pass=False)[0])
    assert dur[19] > 60.0 and dur[39] > 60.0
