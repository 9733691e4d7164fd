"""Collective work of every framework is its own breakdown category (collective wait), never
host compute or input (`stepscope.vocab.collectives`, issue #26)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from stepscope.stats import EventType, build_step_db, classify_events
from stepscope.stats.collective_calls import CollectiveCalls, collective_calls
from stepscope.stats.events import CATEGORY_NAMES, device_type_of_name, host_type_of_name
from stepscope.vocab import collectives
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import gloo_job
from tests.support.analysis import MS, build, fixture_profile

HOST_COLLECTIVES = [
    "gloo:all_reduce",  # PyTorch gloo's worker thread
    "gloo:broadcast",
    "c10d::allreduce_",  # process-group ops
    "c10d::_allgather_base_",
    "c10d::barrier",
    "_c10d_functional::all_reduce",
    "_c10d_functional::wait_tensor",
    "record_param_comms",
    "nccl:all_reduce",  # NCCL's CPU-side enqueue
    "mpi:all_reduce",
    "MPI_Allreduce",
    "HorovodAllreduce",
    "all-reduce.3",  # XLA on CPU
    "all-gather-start.1",
    "reduce-scatter",
    "collective-permute-done.2",
    "all-to-all.7",
    "psum",
    "allreduce/CollectiveReduceV2:CollectiveReduceV2",  # TensorFlow name:type
    "CollectiveGatherV2",
    "replica_1/NcclAllReduce:NcclAllReduce",
]
NOT_COLLECTIVES = [
    "aten::mm",
    "torch/distributed/distributed_c10d.py(725): WORLD",  # Python frames of torch.distributed
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "CollectiveAssignGroupV2",  # setup, no data moved for the step
    "group/CollectiveInitializeCommunicator:CollectiveInitializeCommunicator",
    "all-reduce-scatter-fusion",  # a fusion, not the collective
    "model/dense/MatMul:MatMul",
    "IteratorGetNext",
    "c10d::_register_process_group",
]


@pytest.mark.parametrize("name", HOST_COLLECTIVES)
def test_host_collectives_of_every_framework_are_recognized(name: str) -> None:
    assert collectives.is_host_collective(name)
    assert host_type_of_name(name) == EventType.HOST_COLLECTIVE


@pytest.mark.parametrize("name", NOT_COLLECTIVES)
def test_other_host_work_is_not_a_collective(name: str) -> None:
    assert not collectives.is_host_collective(name)
    assert host_type_of_name(name) != EventType.HOST_COLLECTIVE


@pytest.mark.parametrize(
    "name",
    [
        "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
        "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
        "rcclKernel_AllGather",
        "all-reduce.12",  # the ops line of a TPU
        # custom all-reduce kernels over NVLink (decision 1057): vLLM on a B200 (the fixture's)
        "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>"
        "(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)",
        "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 4, 8>(float*)",
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)",
        "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(params)",
    ],
)
def test_device_collectives(name: str) -> None:
    assert device_type_of_name(name) == EventType.DEVICE_COLLECTIVES


@pytest.mark.parametrize(
    "name",
    [
        "triton_poi_fused_all_reduce_0",  # Inductor's copy into a collective's buffer
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(...)",
        "void cub::DeviceReduceKernel<float>(float*)",
    ],
)
def test_device_kernels_that_are_no_collectives(name: str) -> None:
    assert device_type_of_name(name) != EventType.DEVICE_COLLECTIVES


def test_vllms_custom_all_reduce_is_collective_time() -> None:
    """vLLM on a B200: its tensor-parallel all-reduce runs as PyTorch symmetric memory's
    `multimem_all_reduce_kernel` (73 of them, 2.12 ms, a fifth of the kernel time), not as
    NCCL; it was counted as device compute (decision 1057)."""
    profile = fixture_profile("kineto/b200_vllm_fp8_rank0.json.gz")
    types = classify_events(profile)
    names = profile.strings.strings
    multimem = np.array(["multimem_all_reduce_kernel" in names[k] for k in profile.name.tolist()])
    assert multimem.sum() == 73
    assert (types[multimem] == EventType.DEVICE_COLLECTIVES).all()
    collective_ns = profile.end_at(np.flatnonzero(multimem)) - profile.start_ns[multimem]
    assert collective_ns.sum() / 1e6 == pytest.approx(2.120, abs=0.001)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("gloo:all_reduce", "all_reduce"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", "all_reduce"),
        ("CollectiveReduceV2", "all_reduce"),
        ("c10d::_allgather_base_", "all_gather"),
        ("ncclKernel_ReduceScatter_RING", "reduce_scatter"),
        ("reduce-scatter.1", "reduce_scatter"),
        ("c10d::broadcast_", "broadcast"),
        ("collective-permute.2", "send_recv"),
        ("c10d::barrier", "barrier"),
    ],
)
def test_collective_kinds(name: str, kind: str) -> None:
    assert collectives.collective_kind(name) == kind


def test_vocab_imports_nothing_from_stepscope() -> None:
    """The lowest layer: its tables are read by capture, import and analysis alike (a
    table may read another vocab table)."""
    root = Path(collectives.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else ["stepscope (relative)"]
            outside = [n for n in names if n.split(".")[0] == "stepscope"]
            assert not [n for n in outside if not n.startswith("stepscope.vocab.")], path.name


def _gloo_rank(wait_ms: int) -> XSpaceBuilder:
    """A CPU DDP rank as torch.profiler records it: the step thread computes forward and
    backward, then sits in the Python frame `backward` while gloo's thread all-reduces the
    gradients (``wait_ms`` of it waiting for a late rank)."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main, gloo = host.line(1, "MainThread"), host.line(2, "pt_gloo_runloop")
    step_ms = 4 + wait_ms + 1
    for k in range(4):
        t0 = 1_000 * MS + k * step_ms * MS
        main.event("train", t0, step_ms * MS, {"step_num": k, "_r": 1})
        main.event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, MS // 2)
        main.event("aten::addmm", t0 + MS, MS)
        main.event("backward (_tensor.py:625)", t0 + 2 * MS, (1 + wait_ms + 1) * MS)
        main.event("aten::mm", t0 + 2 * MS, MS)
        main.event("c10d::allreduce_", t0 + 3 * MS, MS // 10)
        gloo.event("gloo:all_reduce", t0 + 3 * MS, (wait_ms + 1) * MS)
        # backward of the first layer, overlapped with the first bucket's all-reduce
        main.event("aten::mm", t0 + 4 * MS, MS)
    return builder


def test_gloo_all_reduce_is_collective_wait_not_host_compute() -> None:
    """Before issue #26 a rank waiting 20 ms per step in gloo's all-reduce showed 24 ms of
    host compute and no collective time."""
    profile = build(_gloo_rank(wait_ms=20))
    types = classify_events(profile)
    names = [profile.strings.strings[i] for i in profile.name.tolist()]
    assert {int(types[k]) for k, n in enumerate(names) if n.startswith("gloo:")} == {
        int(EventType.HOST_COLLECTIVE)
    }
    db = build_step_db(profile)
    cats = db.category_ns()
    assert db.n_steps == 4
    # from the all-reduce's start to its end, though the step thread's `backward` frame
    # covers it (waiting, not computing), less the op computed meanwhile (overlapped)
    assert cats["collective_wait"].tolist() == [20 * MS] * 4
    assert cats["host_compute"].tolist() == [3 * MS] * 4
    assert cats["input"].tolist() == [MS // 2] * 4


def _slow_compute_rank() -> XSpaceBuilder:
    """The rank slow in compute of a CPU DDP job under load, as seen on a real 2-rank gloo
    job: an all-reduce span on gloo's thread lasts 8 ms into the step (its thread descheduled
    before closing it) while the step thread's forward matmul, itself descheduled, takes 9 ms;
    in backward a 3 ms `aten::mm` holds the 1 ms all-reduce of the first bucket; the step
    then waits 1 ms in its own `c10d::allreduce_` inside AccumulateGrad."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main, gloo = host.line(1, "MainThread"), host.line(2, "pt_gloo_runloop")
    for k in range(4):
        t0 = 1_000 * MS + k * 30 * MS
        main.event("train", t0, 20 * MS, {"step_num": k, "_r": 1})
        gloo.event("gloo:all_reduce", t0 - 6 * MS, 14 * MS)
        main.event("aten::matmul", t0, 9 * MS)
        main.event("aten::mm", t0, 9 * MS)
        main.event("backward (_tensor.py:625)", t0 + 12 * MS, 7 * MS)
        main.event("aten::mm", t0 + 12 * MS, 3 * MS)
        gloo.event("gloo:all_reduce", t0 + 13 * MS, MS)
        main.event("AccumulateGrad", t0 + 16 * MS, 2 * MS)
        main.event("c10d::allreduce_", t0 + 16 * MS, MS)
    return builder


def test_compute_running_beside_a_collective_is_never_collective_wait() -> None:
    """A real 2-rank job gave the slow rank's 9 ms matmul as collective wait (1.46 -> 10.14
    ms at one step where the script measured a 1.3 ms all-reduce): an op with nothing of its
    thread inside it computes, whatever collective runs on another thread meanwhile."""
    profile = build(_slow_compute_rank())
    types = classify_events(profile)
    names = [profile.strings.strings[i] for i in profile.name.tolist()]
    assert {int(types[k]) for k, n in enumerate(names) if n == "aten::mm"} == {
        int(EventType.HOST_COMPUTE)
    }
    # frames holding a collective still wait in it: `backward` (gloo's thread's) and
    # AccumulateGrad (its own thread's c10d op)
    assert {int(types[k]) for k, n in enumerate(names) if n.startswith(("back", "Acc"))} == {
        int(EventType.HOST_ENCLOSING)
    }
    cats = build_step_db(profile).category_ns()
    # only the step's own c10d wait; the ops' 12 ms and the frames' 3 ms are compute
    assert cats["collective_wait"].tolist() == [MS] * 4
    assert cats["host_compute"].tolist() == [15 * MS] * 4
    assert cats["other"].tolist() == [4 * MS] * 4


@pytest.mark.parametrize(
    ("name", "waits"),
    [
        ("$_tensor.py:570 Tensor.backward", True),  # stepscope's and TensorFlow's Python tracer
        ("torch/_tensor.py(625): backward", True),  # Kineto's
        ("backward (_tensor.py:625)", True),  # the sampler's
        ("KernelAndDeviceFunc::Run", True),
        ("TFE_Py_ExecuteCancelable", True),
        ("aten::mm", False),
        ("aten::matmul", False),
        ("autograd::engine::evaluate_function: AddmmBackward0", False),
        ("model/dense/MatMul:MatMul", False),
        ("ExecutorDoneCallback", False),
    ],
)
def test_only_frames_wait_for_other_threads(name: str, waits: bool) -> None:
    assert collectives.is_waiting_frame(name) is waits


def test_a_tensorflow_op_type_is_read_after_the_last_colon() -> None:
    """TensorFlow events are ``name:type``; a name holding colons of its own still ends in
    its type."""
    assert collectives.is_host_collective("replica_1/grad:ring:CollectiveReduceV2")
    assert not collectives.is_host_collective("replica_1/grad:ring:MatMul")


def test_collective_kinds_by_name() -> None:
    names = [
        "ncclKernel_AllReduce_RING_LL_Sum_float",
        "ncclDevKernel_AllGather_RING_LL",
        "ReduceScatter",
        "gloo:broadcast",
        "barrier",
        "Send",
        "ncclKernel_Unknown",
    ]
    assert [collectives.collective_kind(n) for n in names] == [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "barrier",
        "send_recv",
        "other",
    ]


def _calls_of(names: list[str]) -> CollectiveCalls:
    """A host whose four 10 ms steps each hold one 1 ms call of every name in ``names``."""
    builder = XSpaceBuilder("calls")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(4):
        main.event("train", k * 10 * MS, 10 * MS, {"step_num": k, "_r": 1})
        for j, name in enumerate(names):
            main.event(name, k * 10 * MS + (2 + 2 * j) * MS, MS)
    profile = build(builder)
    return collective_calls(profile, build_step_db(profile))


def test_a_hosts_calls_come_from_the_layer_that_has_them() -> None:
    """gloo's own spans are the calls; PyTorch's dispatch op (c10d::allreduce_) only when
    nothing below it was traced; a host without collectives has none (and says so)."""
    gloo = _calls_of(["gloo:all_reduce", "c10d::allreduce_"])
    assert (gloo.layer, gloo.lanes, gloo.n_calls, gloo.runup_measured) == (
        "host collectives",
        ("all_reduce",),
        4,
        True,
    )
    assert gloo.lane.dtype == np.int32 and gloo.step.tolist() == [0, 1, 2, 3]
    assert _calls_of(["gloo:all_reduce"]).layer == "host collectives"
    assert _calls_of(["c10d::allreduce_"]).layer == "dispatch ops"
    none = _calls_of(["aten::addmm"])
    assert (none.layer, none.lanes, none.n_calls) == ("", (), 0)
    assert none.lane.dtype == np.int32
    assert none.runup_ns.shape == (0, len(CATEGORY_NAMES)) and none.runup_ns.dtype == np.int64


def test_a_calls_run_up_is_the_work_since_the_previous_exit() -> None:
    """In a gloo job, the time before each all-reduce since the previous one ended (or the
    step began), by category: 1 ms of input, 4 ms of compute, 0.1 ms untraced."""
    builders = gloo_job(2, input_ms=lambda rank, step: 1.0, compute_ms=lambda rank, step: 4.0)
    profile = build(builders[0])
    calls = collective_calls(profile, build_step_db(profile))
    runup = dict(zip(CATEGORY_NAMES, calls.runup_ns[2].tolist(), strict=True))
    assert {k: v for k, v in runup.items() if v} == {
        "input": MS,
        "host_compute": 4 * MS,
        "other": MS // 10,
    }
