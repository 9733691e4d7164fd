"""A TensorFlow worker late from its tf.data map's Python is late from its input (decision
670): two workers of one job built in code in the shape of /tmp/tfjob16/j1 (a
MultiWorkerMirroredStrategy loop over tf.data, worker1's map a slow ``tf.numpy_function``
decode). Worker1's step thread waits in its ``FunctionRun`` while the map's Python holds
the GIL and no model op runs, then arrives late at the all-reduce. Its own page counts that
wait as input (decision 495); the job's straggler read "from host compute ... the same
work, slower" from XProf's categories."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.collective_calls import collective_calls
from stepscope.stats.diagnostics.multi import _straggler_fix
from stepscope.stats.stragglers import Rank, find_stragglers, held_by
from tests.support.analysis import MS, build
from tests.support.keras_steps import Event, keras_steps

STEPS = 12
STEP_MS = 10.0
THREADS = {
    "main": (1, "MainThread"),
    "compute": (2, "tf_Compute/1"),
    "collective": (3, "collective_ops/1"),
    "pool": (4, "tf_data_private_threadpool/1"),
}
# one step of a worker: its tf.function call (the step's thread waits in it), the model's ops
# 1-3 ms, its all-reduce from its arrival to 9.0 (both workers leave it together)
CALL: list[Event] = [
    ("main", "TFE_Py_ExecuteCancelable", 0.5, 9.0),
    ("main", "KernelAndDeviceFunc::Run", 0.55, 8.85),
    ("main", "FunctionRun", 0.6, 8.7),
    ("compute", "sequential/dense/MatMul:_MklMatMul", 1.0, 2.0),
]
FAST = [*CALL, ("collective", "allreduce/CollectiveReduceV2:CollectiveReduceV2", 3.2, 5.8)]
# worker1: the map's Python runs 3-8 ms with no model op beside it; it arrives at 8.2
SLOW = [
    *CALL,
    ("pool", "EagerPyFunc:EagerPyFunc", 3.0, 5.0),
    ("collective", "allreduce/CollectiveReduceV2:CollectiveReduceV2", 8.2, 0.8),
]


def _ranks() -> list[Rank]:
    out = []
    for host, events in (("vm.worker0", FAST), ("vm.worker1", SLOW)):
        profile = build(keras_steps([events] * STEPS, THREADS, STEP_MS))
        db = build_step_db(profile)
        out.append(Rank(host, db, collective_calls(profile, db)))
    return out


def test_a_worker_late_from_its_maps_python_is_late_from_input() -> None:
    """Before: its reason was host compute, as XProf's categories count the wait."""
    ranks = _ranks()
    held = ranks[1].steps.limits.held_ns
    assert float(held.mean()) / MS > 4.0  # its own page: input, held by the map's Python
    pod = find_stragglers(ranks)
    (s,) = pod.stragglers
    assert s.host == "vm.worker1"
    assert s.reason == "input"
    assert s.pipeline
    assert s.reason_ns / len(s.steps) / MS > 4.0
    assert s.reason_peers_ns / len(s.steps) / MS < 0.5
    assert "from input, the tf.data pipeline's Python (tf.py_function / numpy_function)" in (
        held_by(pod)
    )
    assert "the same work, slower" not in s.explanation
    fix = _straggler_fix(s.reason, False, "tensorflow", s.pipeline)
    assert "Express the map with tf ops" in fix


def test_without_the_maps_python_the_late_worker_stays_host_compute() -> None:
    """The control: worker1 late from 5 ms more of its own ops, no Python in its map."""
    slow = [*CALL[:3], ("compute", "sequential/dense/MatMul:_MklMatMul", 1.0, 7.0)]
    slow.append(("collective", "allreduce/CollectiveReduceV2:CollectiveReduceV2", 8.2, 0.8))
    ranks = []
    for host, events in (("vm.worker0", FAST), ("vm.worker1", slow)):
        profile = build(keras_steps([events] * STEPS, THREADS, STEP_MS))
        db = build_step_db(profile)
        ranks.append(Rank(host, db, collective_calls(profile, db)))
    (s,) = find_stragglers(ranks).stragglers
    assert s.host == "vm.worker1"
    assert s.reason == "host_compute"
    assert not s.pipeline
