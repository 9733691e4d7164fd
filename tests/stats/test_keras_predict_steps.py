"""A Keras ``model.predict`` captured with stepscope.start()/stop() (decision 583): Keras
traces its dataset and step functions first (three top-level ``tf.function-graph_building``
spans, 8 to 12 ms, 20 and 30 ms apart), then calls ``one_step_on_data_distributed`` once a
batch. The set-up's period is the coarsest and it covered 22% of the traced time the batches
did (over decision 538's 10%): it made 2 steps of the script's 40. Laid out as
/tmp/kpred13/pred.py's capture was (13:28 UTC)."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from tests.support.analysis import MS
from tests.support.timeline import Timeline

STEP = "one_step_on_data_distributed"
BUILD = "tf.function-graph_building"


def _traced(builds: tuple[tuple[float, float], ...], convert_ms: float) -> Timeline:
    """Keras's set-up before the batches: its functions traced (``builds``: each graph
    building's start and length, ms), each followed by a conversion of ``convert_ms``."""
    tl = Timeline()
    for at, dur in builds:
        tl.t = at
        tl.ev(BUILD, dur)
        tl.ev("convert_to_tensor", convert_ms)
    return tl


def _predict(batches: int = 40) -> tuple[Profile, list[float]]:
    """The set-up (three graph buildings, each followed by a conversion), then ``batches`` calls of
    the step function (the first 90 ms: it traces inside), each followed by an eager op and a
    handle's deletion, then the outputs' concatenation. Returns the profile and the step
    calls' starts in ms."""
    tl = _traced(((11.7, 8.1), (31.3, 12.3), (61.4, 9.8)), 0.2)
    ev, starts = tl.ev, []
    tl.t = 108.1
    for k in range(batches):
        starts.append(tl.t)
        ev(STEP, 90.8 if k == 0 else 1.5)
        ev("TFE_Py_FastPathExecute_C", 0.1)
        ev("TFE_DeleteTensorHandle", 0.002, gap=0.6)
    ev("TFE_Py_FastPathExecute_C", 8.5)  # the outputs' concatenation
    return tl.profile(), starts


def test_graph_building_before_the_batches_makes_no_steps() -> None:
    profile, starts = _predict()
    found = infer_steps(profile)
    assert found is not None
    assert BUILD not in found.description
    assert f"top-level event '{STEP}'" in found.description
    # step 0 from the capture's start (decision 476), then one step per batch from its call
    assert len(found) >= len(starts) - 1
    assert [round(ns / MS, 3) for ns in found.start_ns[1:].tolist()] == [
        round(ms, 3) for ms in starts[1 : len(found)]
    ]


def _predict_fetching(
    batches: int = 32, last_ms: float = 0.7
) -> tuple[Profile, list[float], float]:
    """As /tmp/keras14/runs/predict was captured (decision 595): each batch fetched (an eager
    op), the batch before freed (a handle's deletion; none before the first), then the step
    function called (a tf.function: stat ``tf_function_call``); after the last call the
    fetch finds the data's end, Keras concatenates the outputs and deletes the iterator.
    ``last_ms``: the last call's duration. Returns the profile, the calls' starts and the last
    call's end (ms)."""
    tl = _traced(((5.2, 7.2), (16.8, 8.6), (33.0, 8.6)), 0.1)
    ev, starts = tl.ev, []
    tl.t = 110.4
    for k in range(batches):
        ev(EXECUTE, 8.0 if k == 0 else 0.2)  # next(iterator)
        if k:
            ev(DELETE, 0.001)  # the batch before, freed
        starts.append(tl.t)
        dur = 117.0 if k == 0 else last_ms if k == batches - 1 else 0.7
        ev(STEP, dur, gap=0.3, stats={"tf_function_call": "notTraced-nonXla"})
    last_end = tl.t - 0.3
    ev(EXECUTE, 0.09)  # next(iterator): the data's end
    ev(EXECUTE, 8.93)  # the outputs' join, as captured: a few long ops, then per batch's part
    ev(EXECUTE, 2.28)
    for k in range(batches):  # its tensors converted (two of them slow), joined, freed
        ev(EXECUTE, 0.02)
        for dur in (0.008, 4.2 if k in (16, 28) else 0.05, 0.04, 0.037):
            ev("convert_to_tensor", dur)
        ev(EXECUTE, 0.022)
        for _ in range(4):
            ev(DELETE, 0.0005, gap=0.0005)
    ev("convert_to_tensor", 3.09)
    for _ in range(batches):
        ev(DELETE, 0.0005, gap=0.0003)
    for dur in (8.88, 1.52, 10.81):
        ev(EXECUTE, dur)
        ev(DELETE, 0.001)
    ev(DELETE, 90.6)  # the iterator's deletion
    return tl.profile(), starts, last_end


EXECUTE = "TFE_Py_FastPathExecute_C"
DELETE = "TFE_DeleteTensorHandle"


def test_the_iterators_deletion_after_the_batches_leaves_them_the_steps() -> None:
    """After the last batch Keras joins its outputs (51 ms traced) and deletes the iterator
    (90.6 ms): 142 ms after the batches' 28 ms, so the batches' call was judged a burst
    (decision 411) and the capture read 15 steps of a worker thread's callback (no steps at
    all here, without it). Each event counted up to a period, the batches are the loop
    (decision 595)."""
    profile, starts, _ = _predict_fetching()
    found = infer_steps(profile)
    assert found is not None
    assert f"32 repeats of top-level event '{STEP}'" in found.description, found.description
    assert [round(ns / MS, 3) for ns in found.start_ns[1:31].tolist()] == [
        round(ms, 3) for ms in starts[1:31]
    ]


def test_the_last_batch_of_a_predict_is_a_step() -> None:
    """Each period from one call to the next holds the next batch's fetch and the freeing of
    the batch before (its head); after the last call the fetch finds the data's end and the
    join follows: neither the same work nor the cycle's members in order, so the last batch
    was in no step (31 for the script's 32). The call is a tf.function's: it ran the batch
    (decision 596)."""
    profile, starts, last_end = _predict_fetching()
    found = infer_steps(profile)
    assert found is not None
    assert "the last one ends with its work" in found.description, found.description
    assert len(found) == len(starts) == 32
    assert round(found.start_ns[-1] / MS, 3) == round(starts[-1], 3)
    assert round(found.end_ns[-1] / MS, 3) == round(last_end, 3)  # the last call's end


def test_a_last_call_that_returned_at_once_is_no_step() -> None:
    """The other side: a last call that found the data's end inside it and returned at once
    (0.05 ms against the others' 0.7) ran no batch."""
    profile, starts, _ = _predict_fetching(last_ms=0.05)
    found = infer_steps(profile)
    assert found is not None and len(found) == len(starts) - 1
