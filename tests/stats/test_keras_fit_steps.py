"""A Keras ``model.fit`` captured with stepscope.start()/stop() and no annotations (decision
595): the Python thread calls ``multi_step_on_iterator`` once a batch (the first call traces
and compiles for 233 ms, the others take 2 ms every 2.4 ms), then Keras deletes the dataset's
iterator in one ``TFE_DeleteTensorHandle`` of 158.55 ms, which waits for tf.data's threads.
That one call outweighed the 31 warm batches' traced time, so the per-batch call was judged
a burst (decision 411) and a worker thread's ``ExecutorDoneCallback`` (about every second
batch) made 16 steps of the script's 32. Laid out as /tmp/coord13/runs/kfit was captured
(/tmp/ui12/keras_fit.py: 32 batches of a tf.data map through ``tf.py_function``)."""

from __future__ import annotations

import pytest

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.tensorflow import FUNCTION_CALL_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.timeline import Timeline

STEP = "multi_step_on_iterator"
EXECUTE = "TFE_Py_FastPathExecute_C"
DELETE = "TFE_DeleteTensorHandle"


def _fit(batches: int = 32, teardown_ms: float = 158.55) -> tuple[Profile, list[float]]:
    """Keras's set-up ops, then ``batches`` calls of the step function (each followed by two
    eager ops and three handle deletions, as Keras's metrics and logs are read), two worker
    threads running each batch's graph in turn, then the logs' last ops and the iterator's
    deletion of ``teardown_ms``. Returns the profile and the step calls' starts in ms."""
    tl = Timeline()
    ev, starts = tl.ev, []
    workers = [tl.plane.line(2, "tf_Compute/1"), tl.plane.line(3, "tf_Compute/2")]
    for dur in (1.1, 0.04, 0.73, 0.05, 0.77, 15.66):  # Keras's set-up
        ev(EXECUTE, dur)
        ev(DELETE, 0.002)
    for k in range(batches):
        t = tl.t
        starts.append(t)
        call = 232.75 if k == 0 else 2.0
        # the batch's graph on a worker thread: its ops, then the executor's done callback
        worker = workers[k % 2]
        for j in range(4):
            worker.event("ExecutorState::Process", int((t + 0.1 + 0.3 * j) * MS), int(0.2 * MS))
        worker.event("ExecutorDoneCallback", int((t + call - 0.05) * MS), int(0.01 * MS))
        ev(STEP, call, stats={FUNCTION_CALL_STAT: "notTraced-nonXla"})
        ev(EXECUTE, 0.04)
        ev(DELETE, 0.001)
        ev(EXECUTE, 0.03)
        ev(DELETE, 0.001)
        ev(DELETE, 0.001, gap=0.1)
    ev(EXECUTE, 5.89)  # the epoch's logs
    ev("convert_to_tensor", 0.7)
    ev(DELETE, teardown_ms)  # the dataset iterator's deletion
    return tl.profile(), starts


def test_the_iterators_teardown_after_the_last_batch_leaves_the_batches_the_steps() -> None:
    profile, starts = _fit()
    found = infer_steps(profile)
    assert found is not None
    assert f"32 repeats of top-level event '{STEP}'" in found.description, found.description
    assert len(found) == len(starts) == 32
    assert [round(ns / MS, 3) for ns in found.start_ns[1:].tolist()] == [
        round(ms, 3) for ms in starts[1:]
    ]
    # the last batch ends with its work, not with the teardown
    assert round(found.end_ns[-1] / MS, 3) < round(starts[-1] + 3, 3)


def test_a_burst_then_a_long_call_is_still_no_loop() -> None:
    """The other side: decision 411's burst, 9 calls 10 ms apart after a first 1.5 s, then
    a loop whose 40 fetches each take 25 ms of a 30 ms step (each event under the burst's
    period counts whole). The burst is over long before the loop's work is."""
    builder = XSpaceBuilder("host")
    line = builder.plane("/host:CPU").line(1, "main")
    fetch = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    for k in range(40):
        line.event(fetch, int((1600 + 30 * k) * MS), 25 * MS)
    for at in [0.0, *(1505.5 + 10 * k for k in range(8))]:
        line.event("aten::empty", int(at * MS), int(0.1 * MS))
    found = infer_steps(build(builder))
    assert found is not None and fetch in found.description, found
    assert len(found) == 39


TRAIN = "EagerLocalExecute: __inference_multi_step_on_iterator_247"
TEST = "EagerLocalExecute: __inference_multi_step_on_iterator_436"


def _fit_validating(
    epochs: int = 2, batches: int = 8, val: int = 4, constants: float = 0.0
) -> tuple[Profile, list[float]]:
    """A fit with ``validation_data``, as /tmp/keras14/runs/val was captured (decision 597):
    per epoch ``batches`` training calls, then the validation's set-up and ``val`` calls of
    the evaluation's step function, by the same Python name (each call's runtime span names
    its concrete function), then the iterators' deletions. The first training call and the
    first validation call trace and compile. ``constants``: Keras's ``tf.constant`` calls
    as /tmp/jaxtf15/runs/k_val holds them, two before the first batch this many ms apart
    and two at each validation's set-up (decision 642). Returns the profile and the
    training calls' starts in ms."""
    tl = Timeline()
    ev, starts = tl.ev, []

    def call(function: str, dur: float) -> None:
        at = tl.t
        ev(STEP, dur, stats={FUNCTION_CALL_STAT: "notTraced-nonXla"})
        tl.line.event(function, int((at + 0.05) * MS), int((dur - 0.1) * MS))
        ev(EXECUTE, 0.04)
        ev(DELETE, 0.001)
        ev(EXECUTE, 0.03)
        ev(DELETE, 0.001)
        ev(DELETE, 0.001, gap=0.1)

    if constants:
        ev("tf.constant", 0.02, gap=constants)
        ev("tf.constant", 0.02)
    ev(EXECUTE, 1.1)
    for epoch in range(epochs):
        for k in range(batches):
            starts.append(tl.t)
            call(TRAIN, 230.0 if epoch == k == 0 else 2.0 + 0.3 * (k % 3))
        ev(EXECUTE, 2.8)  # the validation's set-up
        if constants:
            ev("tf.constant", 0.02, gap=0.3)
            ev("tf.constant", 0.02)
        ev("convert_to_tensor", 30.6)
        for k in range(val):
            call(TEST, 322.9 if epoch == k == 0 else 3.0)
        ev(EXECUTE, 6.1)
        ev(DELETE, 78.9)  # the iterators' deletions
        ev(DELETE, 253.4)
    return tl.profile(), starts


@pytest.mark.parametrize("val", [4, 12])
def test_a_fit_with_validation_has_its_training_batches_as_steps(val: int) -> None:
    """Keras calls the validation's step function by the training one's name; their calls
    together had no regular period (the validation's compile and the iterators' deletions
    between epochs) and the fit read no steps at all. The training calls are the steps; the
    epoch's last one ends with its own work, before the validation. Whichever loop is
    longer: the first call's function is the training's."""
    profile, starts = _fit_validating(val=val)
    found = infer_steps(profile)
    assert found is not None, "no steps"
    assert f"16 repeats of top-level event '{STEP}'" in found.description, found.description
    assert "1 step before another function's calls" in found.description
    assert len(found) == len(starts) == 16
    begin = [round(ns / MS, 3) for ns in found.start_ns.tolist()]
    assert begin[1:] == [round(ms, 3) for ms in starts[1:]]
    # epoch 0's last step ends with its own work, long before epoch 1's first call
    assert found.end_ns[7] / MS < starts[7] + 3 < starts[8] - 300


def test_a_constant_made_twice_before_the_batches_is_no_loop() -> None:
    """Keras's fit makes two constants before its first batch (45.5 ms apart under load)
    and two at each validation's start: of the 5 periods of those calls only the first lies
    outside the validation's spans, and that single period, the coarsest, was taken for a
    steady rhythm: "6 repeats of top-level event 'tf.constant'" for 16 batches
    (/tmp/jaxtf15/runs/k_val: 7 steps for 64). A rhythm needs two periods of its own."""
    profile, starts = _fit_validating(constants=45.5)
    found = infer_steps(profile)
    assert found is not None, "no steps"
    assert f"16 repeats of top-level event '{STEP}'" in found.description, found.description
    assert len(found) == len(starts) == 16


def test_the_validation_batches_times_are_said() -> None:
    """The validation's calls are in no step; their own times, a batch each, are said in the
    steps' description (decision 643): 2 epochs of 4 validation batches, the first compiling."""
    profile, _ = _fit_validating(val=4)
    found = infer_steps(profile)
    assert found is not None
    assert (
        "; the other function's 8 calls (validation or evaluation batches, in 2 runs) are in "
        "no step: the first 322.90 ms, the others 3.00 ms (median; 3.00 to 3.00)"
    ) in found.description
