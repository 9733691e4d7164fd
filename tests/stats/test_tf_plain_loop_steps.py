"""A TensorFlow user's plain loop, unannotated: ``stepscope.start(); for x in ds: train(x);
stepscope.stop()``, ``ds`` a tf.data pipeline and ``train`` a ``tf.function`` that builds its
Keras model and optimizer on its first call (decision 1046). Laid out as /tmp/tfplain/loop.py's
capture was (13:42 UTC): the iterator made and its first batch fetched (eager ops), then per
batch the call, the loss's handle freed, the next ``GetNext`` and the batch before freed;
after the last call the ``GetNext`` finds the data's end and the iterator is deleted (334 ms,
waiting for tf.data's threads). Two TF worker threads run the graph, each with an
``ExecutorDoneCallback`` per execution."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.tensorflow import FUNCTION_CALL_STAT
from tests.support.analysis import MS
from tests.support.timeline import Timeline

STEP = "train"
EXECUTE = "TFE_Py_FastPathExecute_C"
DELETE = "TFE_DeleteTensorHandle"
INIT = "EagerLocalExecute: __inference_initialize_variables_234"
TRAIN = "EagerLocalExecute: __inference_train_297"
BATCHES = 30
# the calls after the first, as captured (ms): load stretches some
CALLS = (7.6, 1.6, 1.0, 4.7, 1.1, 5.2, 1.3, 1.3, 1.0, 0.7, 14.7, 1.6, 1.0, 1.1, 5.3)


def _loop(deletion_ms: float = 334.45) -> tuple[Profile, list[float], float]:
    """The capture; returns the profile, the calls' starts (ms) and the iterator's deletion's
    start (ms)."""
    tl = Timeline()
    ev, starts = tl.ev, []
    workers = [tl.plane.line(2 + k, f"tf_Compute/{k}") for k in range(2)]
    ev(EXECUTE, 4.1)  # iter(ds)
    ev(EXECUTE, 34.6)
    ev(EXECUTE, 12.7)  # the first GetNext
    for k in range(BATCHES):
        at = tl.t
        starts.append(at)
        dur = 684.7 if k == 0 else CALLS[(k - 1) % len(CALLS)]
        ev(STEP, dur, gap=0.03, stats={FUNCTION_CALL_STAT: "notTraced-nonXla"})
        if k == 0:  # the first call traces, then creates the variables, then trains
            tl.line.event(INIT, int((at + 412.0) * MS), int(26.7 * MS))
            tl.line.event(TRAIN, int((at + 600.0) * MS), int(80.0 * MS))
        else:
            tl.line.event(TRAIN, int((at + 0.05) * MS), int((dur - 0.1) * MS))
        for n, line in enumerate(workers):  # the graph's executions on TF's threads
            begin = at + (0.1 if k else 600.1) + 0.02 * n
            line.event("ExecutorState::Process", int(begin * MS), int(0.3 * MS))
            line.event("ExecutorDoneCallback", int((begin + 0.35) * MS), int(0.005 * MS))
        ev(DELETE, 0.001, gap=0.03)  # the loss
        ev(EXECUTE, 0.5 if k % 3 else 2.0, gap=0.03)  # the next GetNext (the data's end last)
        if k < BATCHES - 1:
            ev(DELETE, 0.001, gap=0.02)  # the batch before
    deletion = tl.t
    ev(DELETE, deletion_ms)  # the iterator's
    return tl.profile(), starts, deletion


def test_the_loops_calls_of_its_function_are_the_steps() -> None:
    """The first call ran ``__inference_initialize_variables`` before its own function, and
    taking that as the call's function made every later call another loop's: no call of
    ``train`` was a step, and a worker thread's ``ExecutorDoneCallback`` was (17 steps for
    the script's 30, step 0 42.61 ms for its 743.01)."""
    profile, starts, _ = _loop()
    found = infer_steps(profile)
    assert found is not None
    assert f"30 repeats of top-level event '{STEP}'" in found.description, found.description
    assert "other function" not in found.description
    assert len(found) == BATCHES
    assert [round(ns / MS, 3) for ns in found.start_ns[1:].tolist()] == [
        round(ms, 3) for ms in starts[1:]
    ]
    # step 0 holds the first call, its tracing and compile
    assert found.start_ns[0] / MS < starts[0] and found.end_ns[0] / MS >= starts[0] + 684.7


def test_the_iterators_deletion_is_in_no_step() -> None:
    """After the last call the same names come once more as in every period (the loss
    freed, ``GetNext``, a deletion), but the deletion is the iterator's, 334 ms against
    periods of ~2 ms: the last step ends before it (it was 335 ms for the script's 0.87)."""
    profile, starts, deletion = _loop()
    found = infer_steps(profile)
    assert found is not None and len(found) == BATCHES, found
    assert round(found.start_ns[-1] / MS, 3) == round(starts[-1], 3)
    assert found.end_ns[-1] / MS <= deletion
    assert "the last one ends with its work" in found.description


def test_a_last_deletion_as_short_as_the_others_is_the_last_steps() -> None:
    """The other side: when the last iteration's deletion takes no longer than a period, it
    is the same work as every period's and the last step holds it (decision 360's rule)."""
    profile, _, deletion = _loop(deletion_ms=0.001)
    found = infer_steps(profile)
    assert found is not None and len(found) == BATCHES, found
    assert round(found.end_ns[-1] / MS, 3) == round(deletion + 0.001, 3)
