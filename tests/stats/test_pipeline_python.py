"""Steps held up by the tf.data pipeline's Python (decision 495): Keras ``fit`` over a
``tf.py_function`` map, tf.data's injected prefetch having each element ready, so the step's
``IteratorGetNext`` does not wait; the step's thread waits instead in its ``FunctionRun`` and
``TFE_Py_*`` calls, whose work is done, while the map's Python holds the GIL. Synthetic
traces in the shape of the real capture (/tmp/keras11/run1, 06:50 UTC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.model import open_run
from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.input.input_pipeline import TF_DATA_FIX
from stepscope.stats.steps.breakdown import StepDb, build_step_db
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS, build
from tests.support.keras_steps import Event, keras_steps

STEPS = 8
STEP_MS = 10.0
FUNCTION = "__inference_multi_step_on_iterator_276"
# (thread, name, start, duration in ms from the step's start): one Keras train step.
# The model's ops run 1.2-2.5 ms on the executor's thread; the step's thread waits in
# FunctionRun until 5.55 (its work done at 2.5), then 2.4 ms more in TFE_Py_ExecuteCancelable
# taking the GIL back; the map's Python runs 1.5-7.9 ms on tf.data's thread.
KERAS_STEP: list[Event] = [
    ("main", "multi_step_on_iterator", 0.1, 9.6),
    ("main", "TFE_Py_ExecuteCancelable", 1.0, 7.0),
    ("main", "EagerExecute", 1.02, 4.58),
    ("main", f"EagerLocalExecute: {FUNCTION}", 1.03, 4.57),
    ("main", "EagerKernelExecute", 1.04, 4.56),
    ("main", "KernelAndDeviceFunc::Run", 1.05, 4.55),
    ("main", "FunctionRun", 1.06, 4.49),
    ("main", "ThreadpoolListener::Record", 1.07, 0.0),
    ("get_next", "IteratorGetNextOp::DoCompute", 1.1, 0.05),
    ("get_next", "Iterator::Root", 1.11, 0.03),
    ("get_next", "Iterator::Root::Prefetch", 1.12, 0.02),
    ("compute", "StatefulPartitionedCall/sequential/dense/MatMul:_MklMatMul", 1.2, 1.0),
    ("compute", "StatefulPartitionedCall/sgd/Mul:Mul", 2.2, 0.3),
    ("pool", "EagerPyFunc:EagerPyFunc", 1.5, 6.4),
]
THREADS = {
    "main": (1, "MainThread"),
    "compute": (2, "tf_Compute/1"),
    "get_next": (3, "tf_data_iterator_get_next/1"),
    "pool": (4, "tf_data_private_threadpool/1"),
}
# FunctionRun's self time less the ops (2.5-5.55) + KernelAndDeviceFunc::Run's (5.55-5.6) +
# TFE_Py_ExecuteCancelable's while the map runs (5.6-7.9)
HELD_MS = 3.05 + 0.05 + 2.3


def _trace(events: list[Event] = KERAS_STEP) -> XSpaceBuilder:
    return keras_steps([events] * STEPS, THREADS, STEP_MS)


def _db(builder: XSpaceBuilder) -> StepDb:
    return build_step_db(build(builder))


def _ms(db: StepDb, limit: str) -> float:
    return round(float(db.limit_ns()[limit].mean()) / MS, 3)


def test_a_step_held_by_the_maps_python_is_input() -> None:
    """It read "bound by compute: 96.0%": the waits in FunctionRun and TFE_Py_* counted as
    the model's compute, and no input."""
    db = _db(_trace())
    assert db.n_steps >= STEPS - 2
    assert _ms(db, "input") == pytest.approx(HELD_MS + _control_input_ms())
    assert float(db.limits.held_ns.mean()) / MS == pytest.approx(HELD_MS)
    # the held time is not "the batch built inside the step"
    assert int(db.staged_ns.sum()) == 0
    control = _db(_trace([e for e in KERAS_STEP if e[0] != "pool"]))
    assert _ms(db, "compute") == pytest.approx(_ms(control, "compute") - HELD_MS)


def _control_input_ms() -> float:
    return _ms(_db(_trace([e for e in KERAS_STEP if e[0] != "pool"])), "input")


def test_without_the_maps_python_the_waits_stay_compute() -> None:
    """The control: the same step with no Python in the pipeline: nothing held."""
    db = _db(_trace([e for e in KERAS_STEP if e[0] != "pool"]))
    assert _ms(db, "input") < 0.1
    assert int(db.limits.held_ns.sum()) == 0
    assert _ms(db, "compute") > 8.0


def test_the_maps_python_beside_the_models_ops_or_the_steps_python_is_not_held() -> None:
    """The map's Python only while the model's ops run, or while the step's thread runs its
    own Python (untraced, or a Python frame's own time): no call of the step is waiting on
    it, or nothing tells a wait from the step's own work (decision 381)."""
    beside = [e for e in KERAS_STEP if e[0] != "pool"]
    for start, dur in ((1.2, 1.3), (0.1, 0.9), (8.0, 1.7)):
        db = _db(_trace([*beside, ("pool", "EagerPyFunc:EagerPyFunc", start, dur)]))
        assert int(db.limits.held_ns.sum()) == 0, (start, dur)
        assert _ms(db, "input") == _control_input_ms()


def test_a_custom_loops_eager_get_next_then_its_wait_for_the_gil() -> None:
    """``for x, y in ds: train_step(x, y)``: the loop's eager ``IteratorGetNext`` waits for
    the element (input already), then its ``TFE_Py_FastPathExecute_C`` waits 2 ms more for
    the GIL the map's Python holds: input too."""
    events = [
        ("main", "TFE_Py_FastPathExecute_C", 0.0, 4.0),
        ("main", "EagerExecute", 0.05, 1.95),
        ("main", "EagerLocalExecute: IteratorGetNext", 0.06, 1.94),
        ("main", "KernelAndDeviceFunc::Run", 0.1, 1.9),
        ("main", "IteratorGetNextOp::DoCompute", 0.12, 1.85),
        ("main", "train_step", 4.2, 5.7),
        ("main", "TFE_Py_ExecuteCancelable", 4.5, 5.3),
        ("main", "KernelAndDeviceFunc::Run", 4.6, 5.1),
        ("main", "FunctionRun", 4.65, 5.0),
        ("compute", "StatefulPartitionedCall/dense/MatMul:_MklMatMul", 4.7, 4.9),
        ("pool", "EagerPyFunc:EagerPyFunc", 0.0, 4.0),
    ]
    db = _db(_trace(events))
    # the wait for the element (0.12-1.97), and the calls' own time around it while the
    # map runs: TFE_Py_FastPathExecute_C's (0-0.05, 2.0-4.0), KernelAndDeviceFunc::Run's
    # (0.1-0.12, 1.97-2.0)
    assert float(db.limits.held_ns.mean()) / MS == pytest.approx(2.05 + 0.05)
    assert _ms(db, "input") == pytest.approx(1.85 + 2.1)


def test_the_overview_gives_the_maps_python_its_fix(tmp_path: Path) -> None:
    """Input first, and tf.data's fix (decision 469's text) led by the Python's own: no
    prefetch or parallel map overlaps Python holding the GIL. There was no input advice."""
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(_trace().build(), run_dir / "vm.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    page = output.to_json(get_tool("overview_page").build(ctx))
    bound = page["bound_by"]
    assert bound["limits"][0]["key"] == "input", bound["headline"]
    assert "held in TensorFlow's calls while the tf.data pipeline's Python" in bound["headline"]
    details = page["recommendation"]["details"]
    assert "tf.data map's Python (tf.py_function / numpy_function)" in details[0]
    # every step alike: nothing to compare the calls' ends with, so the GIL is said as a
    # case ("If it computes, it holds the GIL ...", decision 526)
    assert "xpress the map with tf ops" in details[0] and TF_DATA_FIX in details[0]
    assert not any("Prepare batches ahead of the step (a DataLoader" in d for d in details)


def test_the_input_finding_names_the_held_steps_and_their_fix() -> None:
    """The diagnostics' input finding: it was led by the ready element's IteratorGetNext and
    fixed by "Prepare batches ahead of the step: tf.data .prefetch(...)" (already there)."""
    profile = build(_trace())
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    found = {f.id: f for f in diagnose_host(data)}
    finding = found["input_bound"]
    assert finding.summary.endswith(
        "mostly with the step's thread held in TensorFlow's calls while the tf.data map's "
        "Python ran."
    )
    assert finding.fix.startswith("54.0% of the step time (5.40 ms per step) the step waits")
    assert TF_DATA_FIX in finding.fix


def test_the_steps_wait_for_its_all_reduce_is_not_held_by_the_maps_python() -> None:
    """A MultiWorkerMirroredStrategy worker: its function waits 3 ms (2.5-5.5) for its
    gradients' all-reduce on a collective thread while the map's Python runs (it sleeps, in
    the user's job: no GIL held). That wait is the collective's, not input: a worker of a
    two-worker job read 27.8% of its steps "held ... while the tf.data pipeline's Python
    ran", its all-reduce 22.4% in XProf's categories (decision 1053)."""
    threads = {**THREADS, "collective": (5, "collective_ops/1")}
    reduce = ("collective", "sgd/CollectiveReduceV2:CollectiveReduceV2", 2.5, 3.0)
    db = build_step_db(build(keras_steps([[*KERAS_STEP, reduce]] * STEPS, threads, STEP_MS)))
    assert float(db.limits.held_ns.mean()) / MS == pytest.approx(HELD_MS - 3.0)
    assert _ms(db, "input") == pytest.approx(HELD_MS - 3.0 + _control_input_ms())
    # the wait goes back to what the step waited for (here the function's run, compute)
    without = build_step_db(build(keras_steps([KERAS_STEP] * STEPS, threads, STEP_MS)))
    waited = _ms(db, "compute") + _ms(db, "collectives")
    assert waited == pytest.approx(_ms(without, "compute") + _ms(without, "collectives") + 3.0)
