"""A TensorFlow custom loop over tf.data (decision 641): ``for x, y in ds: train_step(x, y)``.
Its steps are inferred from the ``tf.function``'s call, and each batch's fetch (an eager
``IteratorGetNext`` between two calls) begins the step of that batch, not the end of the one
before: a slow fetch is in the iteration the script times with it."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.events import EventType
from stepscope.stats.steps.breakdown import build_step_db
from tests.support.analysis import MS
from tests.support.timeline import Timeline

STEP = "train_step"
FETCH = "TFE_Py_FastPathExecute_C"


def _call(t: Timeline, ms: float) -> None:
    """The tf.function's call, its ops running inside it."""
    at = t.t
    t.ev(STEP, ms, gap=0.03, stats={"tf_function_call": "notTraced"})
    t.line.event("MatMul", int((at + 0.1) * MS), int((ms - 0.2) * MS), {})


def _loop(fetch_ms: list[float], call_ms: float = 3.0) -> tuple[Profile, list[float]]:
    """The loop thread: before the first call its first fetch; then per batch the call of
    ``call_ms`` and the next batch's fetch of ``fetch_ms[k]`` (the last one finds the data's
    end). Returns the profile and the script's iteration times (fetch, then call, in ms)."""
    t = Timeline()
    fetches = [0.4, *fetch_ms]
    iterations = []
    for k in range(len(fetch_ms)):
        begin = t.t
        at, dur = t.t, fetches[k]
        t.ev(FETCH, dur, gap=0.02)  # next(iterator): an eager op waiting for tf.data
        t.line.event("IteratorGetNext", int((at + 0.01) * MS), int((dur - 0.02) * MS), {})
        _call(t, 250.0 if k == 0 else call_ms)
        iterations.append(t.t - begin)
    at = t.t
    t.ev(FETCH, 0.2)  # the data's end
    t.line.event("IteratorGetNext", int((at + 0.01) * MS), int(0.18 * MS), {})
    return t.profile(), iterations


def test_a_slow_fetch_is_in_the_step_of_its_batch() -> None:
    fetch = [0.4] * 30
    for k in (3, 9, 10, 17, 24):
        fetch[k - 1] = 4.7  # batch k's fetch, made after call k - 1
    profile, script = _loop(fetch)
    db = build_step_db(profile)
    assert db.n_steps == 30
    assert "at its batch's traced fetch (an input wait) before its lead" in db.description
    got = db.dur_ns / MS
    # each step is the script's iteration (the last one's end is decision 475's: it holds
    # the data's end here, after the loop for the script)
    assert np.allclose(got[1:-1], script[1:-1], atol=0.01)
    assert got[3] > 7.5 and got[2] < 3.6  # batch 3's fetch in step 3, not step 2
    # its input is that step's: the breakdown's input wait
    input_col = db.type_ns[:, int(EventType.HOST_WAIT_INPUT) // 10]
    assert input_col[3] > 4 * MS and input_col[2] < 1 * MS


def test_a_stray_input_wait_moves_no_step() -> None:
    # a loop fetching inside its call (a tf.function over an iterator, as Keras's fit does),
    # with an eager read of some other iterator after the call in 2 of 30 steps: no loop
    # shape, the steps stay from call to call
    t = Timeline()
    for k in range(30):
        _call(t, 250.0 if k == 0 else 3.0)
        if k in (7, 19):
            at = t.t
            t.ev(FETCH, 2.0, gap=0.03)
            t.line.event("IteratorGetNext", int((at + 0.01) * MS), int(1.9 * MS), {})
    db = build_step_db(t.profile())
    assert db.n_steps == 30
    assert "traced fetch" not in db.description
    assert round(float(db.dur_ns[7]) / MS, 2) == 5.06  # call, the read, gaps
