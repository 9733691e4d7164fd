"""A ``tf.function`` loop captured from its start, unannotated, as
tests/capture/test_warmup_loops.py runs it: per iteration the call (``train_step``, its
graph's execution nested) and ``float()`` of its loss, whose handle is freed
(``TFE_DeleteTensorHandle``) once the statement ends. Laid out as /tmp/flakes/tfl1/f6's
capture was (19:24 UTC, load 6.0): in one period the handles were freed on another Python
thread, where the last reference went (decision 1095)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.tensorflow import FUNCTION_CALL_STAT, TENSOR_RELEASE
from tests.support.analysis import MS
from tests.support.timeline import Timeline

STEP = "train_step"
EXECUTE = "EagerLocalExecute: __inference_train_step_130"
ITERATIONS = 12
# the calls after the first, as captured (ms): load stretches some
CALLS = (8.9, 11.6, 1.9, 5.9, 3.5, 1.6, 1.3, 4.5, 3.6, 11.6, 3.3)


def _loop(elsewhere: int | None) -> tuple[Profile, list[float]]:
    """The capture, the handles of iteration ``elsewhere`` freed on another thread; the
    iterations' starts (ms)."""
    tl = Timeline()
    other = tl.plane.line(7, "python")  # another Python thread
    starts = []
    tl.ev(TENSOR_RELEASE, 0.007, gap=0.3)  # before the loop
    for k in range(ITERATIONS):
        at = tl.t
        starts.append(at)
        dur = 537.0 if k == 0 else CALLS[k - 1]
        tl.ev(STEP, dur, gap=0.2, stats={FUNCTION_CALL_STAT: "notTraced-nonXla"})
        tl.line.event(EXECUTE, int((at + 0.1) * MS), int((dur - 0.2) * MS))
        if k == elsewhere:
            other.event(TENSOR_RELEASE, int(tl.t * MS), int(0.019 * MS))
            tl.t += 3.6  # the loop's thread waited for a core meanwhile
        else:
            tl.ev(TENSOR_RELEASE, 0.002, gap=0.2)
    return tl.profile(), starts


def test_a_period_whose_handle_another_thread_freed_is_a_step() -> None:
    """Its period held the call alone on the loop's thread, and the rule that leaves out a
    period holding none of the steps' work but the repeat's (a DataLoader pass's end,
    decision 413) left it out: 11 steps for the script's 12, and the period's time (15.56 ms)
    in none. A freed handle is no step's work (`cycle.released`)."""
    profile, starts = _loop(elsewhere=2)
    found = infer_steps(profile)
    assert found is not None and len(found) == ITERATIONS, found.description if found else None
    assert "without the steps' work" not in found.description
    assert np.round(found.start_ns[1:] / MS, 3).tolist() == np.round(starts[1:], 3).tolist()


def test_the_same_loop_freeing_every_handle_itself_keeps_its_steps() -> None:
    profile, starts = _loop(elsewhere=None)
    found = infer_steps(profile)
    assert found is not None and len(found) == ITERATIONS, found.description if found else None
    assert np.round(found.start_ns[1:] / MS, 3).tolist() == np.round(starts[1:], 3).tolist()
