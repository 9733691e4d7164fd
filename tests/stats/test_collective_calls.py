"""One host's collective calls (`stepscope.stats.collective_calls`), field by field, on hosts
built in code: which events are calls, their step, lane, sequence number and position, and the
run-up before each, by category, worked out by hand from the module's rules."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import build_step_db
from stepscope.stats import collective_calls as module
from stepscope.stats.collective_calls import CollectiveCalls, collective_calls
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.gpu_fixtures import fixture_profile, kernel_details

US = 1_000
INPUT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
AR, BC = "gloo:all_reduce", "gloo:broadcast"
NCCL_AR, NCCL_AG = "ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_AllGather_RING_LL"


def _calls(builder: XSpaceBuilder) -> tuple[CollectiveCalls, np.ndarray]:
    profile = build(builder)
    db = build_step_db(profile)
    return collective_calls(profile, db), db.step_num


def _runups(calls: CollectiveCalls) -> list[dict[str, int]]:
    """Each call's run-up, the categories with time only."""
    return [
        {c: int(v) for c, v in zip(CATEGORY_NAMES, row.tolist(), strict=True) if v}
        for row in calls.runup_ns
    ]


def _int64(calls: CollectiveCalls) -> None:
    for name in ("seq", "step", "ordinal", "arrive_ns", "exit_ns", "runup_ns"):
        assert getattr(calls, name).dtype == np.int64, name
    assert calls.lane.dtype == np.int32


def _gloo_host() -> XSpaceBuilder:
    """Steps 0 [2, 10) ms and 1 [12, 20) ms (2 [20, 30) is the last: dropped, as XProf does),
    gloo calls of two kinds on two threads, with and without group and sequence stats."""
    b = XSpaceBuilder("h")
    cpu = b.plane("/host:CPU")
    main, g1, g2 = cpu.line(1, "MainThread"), cpu.line(2, "gloo"), cpu.line(3, "gloo")
    for k, (lo, hi) in enumerate([(2, 10), (12, 20), (20, 30)]):
        main.event("train", lo * MS, (hi - lo) * MS, {"step_num": k, "_r": 1})
    g1.event(AR, MS // 2, MS // 4, {"Seq": 0, "seq": 4})  # 0: before any step
    main.event(INPUT, 2 * MS, MS)
    main.event("aten::addmm", 3 * MS, 2 * MS)
    pga = {"Process Group Name": "pgA"}
    g1.event(AR, 5 * MS, MS, {"Seq": 3, "seq": 9, **pga, "pg_name": "x"})  # 1: the first of each
    g2.event(BC, 6 * MS, MS, {"seq": 5, "pg_name": "pgB"})  # 2: back to back with 1
    g1.event(AR, 8 * MS, 1, pga)  # 3: a call of 1 ns is a call
    g1.event(AR, 9 * MS, 0, pga)  # a span of no length is none
    main.event("c10d::allreduce_", 8 * MS, 20 * US)  # dispatch only: gloo's spans are the calls
    g1.event(AR, 10 * MS, MS // 2, pga)  # 4: at step 0's end, in the gap before step 1
    g2.event(BC, 12 * MS, MS, {"pg_name": "pgB"})  # 6: at step 1's start
    g1.event(AR, 12 * MS, MS, pga)  # 5: at the same time (its thread comes first)
    main.event("aten::mm", 13 * MS, 4 * MS)
    g1.event(AR, 15 * MS, MS, pga)  # 7: inside the compute
    g2.event(BC, 25 * MS, MS)  # 8: in the dropped last step
    return b


def test_a_hosts_calls_field_by_field() -> None:
    calls, step_num = _calls(_gloo_host())
    assert step_num.tolist() == [0, 1]
    assert calls.layer == "host collectives" and calls.runup_measured
    assert calls.lanes == ("all_reduce", "all_reduce pgA", "broadcast pgB", "broadcast")
    assert calls.lane.tolist() == [0, 1, 2, 1, 1, 1, 2, 1, 3]
    assert calls.seq.tolist() == [0, 3, 5, -1, -1, -1, -1, -1, -1]  # Seq (even 0) before seq
    assert calls.step.tolist() == [-1, 0, 0, 0, -1, 1, 1, 1, -1]
    assert calls.ordinal.tolist() == [0, 0, 0, 1, 0, 0, 0, 1, 0]  # per (step, lane)
    arrive_us = [500, 5000, 6000, 8000, 10000, 12000, 12000, 15000, 25000]
    assert (calls.arrive_ns // US).tolist() == arrive_us
    assert (calls.exit_ns - calls.arrive_ns).tolist() == [
        MS // 4, MS, MS, 1, MS // 2, MS, MS, MS, MS,
    ]  # fmt: skip
    _int64(calls)


def test_a_hosts_run_ups_by_category() -> None:
    """From the previous exit (or arrival, whichever is later) to the arrival: call 1 from
    call 0's exit at 0.75 ms (before step 0), call 2 back to back (none), call 4 over the
    gap between the steps, call 6 arriving with call 5 (none), call 8 after step 1."""
    calls, _ = _calls(_gloo_host())
    assert _runups(calls) == [
        {},
        {"input": MS, "host_compute": 2 * MS, "other": 1_250 * US},
        {},
        {"other": MS},
        # c10d::allreduce_ from 8 ms + 1 ns (call 3's exit) is waiting on a collective
        {"collective_wait": 20 * US - 1, "other": 2 * MS - 20 * US},
        {"other": 1_500 * US},
        {},
        {"host_compute": 2 * MS},
        {"host_compute": MS, "other": 8 * MS},  # aten::mm until 17 ms, then nothing
    ]


def _step_start_host(calls_at_ms: tuple[float, ...]) -> XSpaceBuilder:
    b = XSpaceBuilder("h")
    cpu = b.plane("/host:CPU")
    main, gloo = cpu.line(1, "MainThread"), cpu.line(2, "gloo")
    for k in range(3):
        main.event("train", (2 + 10 * k) * MS, 10 * MS, {"step_num": k, "_r": 1})
        main.event(INPUT, (2 + 10 * k) * MS, MS)
        main.event("aten::addmm", (3 + 10 * k) * MS, 3 * MS)
    for at in calls_at_ms:
        gloo.event(AR, int(at * MS), MS // 2)
    return b


def test_the_first_calls_run_up_starts_at_its_step() -> None:
    """The first call of the profile has no previous exit: its run-up starts at its step's
    start (step 0 at 2 ms: 1 ms of input, then compute until the call at 6 ms); a call at
    its step's very start has none."""
    calls, step_num = _calls(_step_start_host((6,)))
    assert step_num[calls.step].tolist() == [0] and calls.runup_measured
    assert _runups(calls) == [{"input": MS, "host_compute": 3 * MS}]
    calls, _ = _calls(_step_start_host((12, 16)))
    assert step_num[calls.step].tolist() == [1, 1] and calls.runup_measured
    assert _runups(calls) == [{}, {"input": MS // 2, "host_compute": 3 * MS}]


def test_run_ups_too_large_to_measure_are_said_to_be(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond MAX_RUNUP_PAIRS (event, segment) pairs the run-ups are zeros, and say so. Here
    the pairs are the input and the compute in the one segment [2, 6) ms before the call."""
    builder = _step_start_host((6,))
    monkeypatch.setattr(module, "MAX_RUNUP_PAIRS", 2)
    calls, _ = _calls(builder)
    assert calls.runup_measured and calls.runup_ns.any()
    monkeypatch.setattr(module, "MAX_RUNUP_PAIRS", 1)
    calls, _ = _calls(builder)
    assert not calls.runup_measured and calls.n_calls == 1
    assert calls.runup_ns.shape == (1, len(CATEGORY_NAMES)) and not calls.runup_ns.any()
    _int64(calls)


def test_calls_at_the_same_time_keep_their_order_and_positions() -> None:
    """Forty calls in one step, two at a time on two threads: arrival ties keep the threads'
    order, and each call's position counts its own lane's calls only (enough calls that an
    unstable sort would mix them)."""
    b = XSpaceBuilder("h")
    cpu = b.plane("/host:CPU")
    main, g1, g2 = cpu.line(1, "MainThread"), cpu.line(2, "gloo"), cpu.line(3, "gloo")
    for k in range(3):
        main.event("train", k * 100 * MS, 100 * MS, {"step_num": k, "_r": 1})
        main.event("aten::addmm", k * 100 * MS, MS)
    for j in range(20):
        g1.event(AR, (101 + 2 * j) * MS, MS)
        g2.event(BC, (101 + 2 * j) * MS, MS)
    calls, step_num = _calls(b)
    assert step_num[calls.step].tolist() == [1] * 40
    assert calls.lane.tolist() == [0, 1] * 20
    assert calls.ordinal.tolist() == [j for j in range(20) for _ in (0, 1)]


def test_positions_count_per_step_and_lane() -> None:
    """Lanes 0 and 1 in steps 0 to 2: step 0's lane 1 and step 2's lane 0 are told apart."""
    b = XSpaceBuilder("h")
    cpu = b.plane("/host:CPU")
    main, gloo = cpu.line(1, "MainThread"), cpu.line(2, "gloo")
    for k in range(4):
        main.event("train", k * 10 * MS, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::addmm", k * 10 * MS, MS)
    for at, name in [(2, BC), (3, BC), (4, AR), (12, AR), (13, BC), (22, AR), (23, AR), (24, BC)]:
        gloo.event(name, at * MS, MS // 2)
    calls, step_num = _calls(b)
    assert calls.lanes == ("broadcast", "all_reduce")
    assert step_num[calls.step].tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    assert calls.lane.tolist() == [0, 0, 1, 1, 0, 1, 1, 0]
    assert calls.ordinal.tolist() == [0, 1, 0, 0, 0, 0, 1, 0]


def test_calls_of_a_host_without_steps() -> None:
    b = XSpaceBuilder("h")
    gloo = b.plane("/host:CPU").line(2, "gloo")
    for at in (1, 3):
        gloo.event(AR, at * MS, MS)
    calls, step_num = _calls(b)
    assert len(step_num) == 0 and calls.step.tolist() == [-1, -1]
    assert calls.ordinal.tolist() == [0, 1] and calls.runup_measured
    # the first call has no run-up (no step to start from); the second, the 1 ms between
    assert _runups(calls) == [{}, {"other": MS}]
    _int64(calls)


def test_a_host_with_one_call_at_its_steps_start() -> None:
    calls, _ = _calls(_step_start_host((2,)))
    assert calls.step.tolist() == [0] and calls.runup_measured
    assert calls.runup_ns.shape == (1, len(CATEGORY_NAMES)) and not calls.runup_ns.any()
    _int64(calls)


def test_no_calls_is_an_empty_record_of_the_same_types() -> None:
    b = XSpaceBuilder("h")
    b.plane("/host:CPU").line(1, "MainThread").event("aten::addmm", 0, MS)
    calls, _ = _calls(b)
    assert (calls.layer, calls.lanes, calls.n_calls, calls.runup_measured) == ("", (), 0, True)
    for name in ("lane", "seq", "step", "ordinal", "arrive_ns", "exit_ns"):
        assert len(getattr(calls, name)) == 0, name
    assert calls.runup_ns.shape == (0, len(CATEGORY_NAMES))
    _int64(calls)


class _Gpu:
    """A GPU host whose launches are on their own thread (the profile's first events)."""

    def __init__(self) -> None:
        self.builder = XSpaceBuilder("gpu")
        host = self.builder.plane("/host:CPU")
        self.launches, self.main = host.line(1, "launcher"), host.line(2, "python")
        self.corr = 0

    def stream(self, gpu: int, stream: int):
        return self.builder.plane(f"/device:GPU:{gpu}").line(stream, f"Stream #{stream}")

    def launch(self, at: int, name: str, start: int, dur: int, line, stats=None) -> None:
        self.corr += 1
        self.launches.event("cudaLaunchKernel", at, 5 * US, {"correlation_id": self.corr})
        details = {"correlation_id": self.corr, "kernel_details": kernel_details()}
        line.event(name, start, dur, {**details, **(stats or {})})


def test_device_calls_belong_to_the_step_that_launched_them() -> None:
    """The host runs ahead (5 ms steps) while the GPU takes 10 ms per step, as in training
    whose CPU enqueues the next steps' kernels while the GPU works: each step's all-reduce
    belongs to the step that launched it, although its launch falls in an earlier step's
    device span. Kernels on a second GPU (fewer collectives) are another rank's."""
    gpu = _Gpu()
    gemm, nccl = gpu.stream(0, 7), gpu.stream(0, 14)
    other_gpu = gpu.stream(1, 14)
    for k in range(6):
        t, d = k * 5 * MS, 2 * MS + k * 10 * MS
        gpu.main.event("train", t, 5 * MS, {"step_num": k, "_r": 1})
        gpu.launch(t + 10 * US, "sm80_xmma_gemm", d, 8 * MS, gemm)
        gpu.launch(t + 3 * MS, NCCL_AR, d + 8 * MS, MS, nccl, {"Seq": k})
        if k < 2:
            gpu.launch(t + 4 * MS, NCCL_AG, d + 9 * MS, MS // 2, other_gpu)
    calls, step_num = _calls(gpu.builder)
    assert calls.layer == "device kernels" and calls.lanes == ("all_reduce",)
    assert step_num.tolist() == [1, 2, 3, 4]  # the first and last steps are dropped
    assert calls.seq.tolist() == [0, 1, 2, 3, 4, 5]
    assert calls.step.tolist() == [-1, 0, 1, 2, 3, -1]  # step k's call is step k's
    assert calls.ordinal.tolist() == [0, 0, 0, 0, 0, 1]
    assert (calls.arrive_ns // MS).tolist() == [10, 20, 30, 40, 50, 60]
    _int64(calls)


def test_device_calls_without_a_launch_go_by_their_start() -> None:
    """A kernel whose launch was not recorded (the capture began after it) counts in the
    step whose span holds its start; the group name (first of its stats) makes the lane."""
    gpu = _Gpu()
    gemm, nccl = gpu.stream(0, 7), gpu.stream(0, 14)
    for k in range(4):
        t = k * 10 * MS
        gpu.main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        gpu.launch(t + 10 * US, "sm80_xmma_gemm", t + 20 * US, 6 * MS, gemm)
    group = {"Process Group Name": "0", "pg_name": "ignored"}
    nccl.event(NCCL_AR, 16 * MS, MS, group)  # no launch: in step 1 by its start
    gpu.launch(22 * MS, NCCL_AR, 26 * MS, MS, nccl, {"pg_name": "1"})
    calls, step_num = _calls(gpu.builder)
    assert calls.layer == "device kernels"
    assert calls.lanes == ("all_reduce 0", "all_reduce 1")
    assert step_num[calls.step].tolist() == [1, 2] and calls.lane.tolist() == [0, 1]


def test_device_calls_of_a_profile_without_steps_are_in_no_step() -> None:
    """No step found (no marker, one launch): the call is in no step. Placed by the steps'
    launch windows (decision 1072), it read the first of no windows: an IndexError where
    the spans' placing before it answered -1."""
    gpu = _Gpu()
    gpu.launch(MS, NCCL_AR, 2 * MS, MS, gpu.stream(0, 14))
    profile = build(gpu.builder)
    db = build_step_db(profile)
    assert db.n_steps == 0
    calls = collective_calls(profile, db)
    assert calls.layer == "device kernels" and calls.step.tolist() == [-1]


def test_the_mi300x_ranks_calls_are_four_buckets_per_step() -> None:
    """A real DDP trace (ResNet on an MI300X) whose GPU runs two steps behind its CPU: each
    step launches 4 all-reduce buckets. The 5 kernels running when the capture began
    (launched before it: the device's backlog) are no step's, as in the step breakdown
    (decision 1072; they were the first step's, 9 calls). Before that, every call fell in
    the first step: their launches lie in its device span."""
    profile = fixture_profile("kineto/mi300x_resnet_training_rank0.json.gz")
    db = build_step_db(profile)
    calls = collective_calls(profile, db)
    assert calls.layer == "device kernels"
    assert int((calls.step < 0).sum()) == 5
    assert np.bincount(calls.step[calls.step >= 0], minlength=db.n_steps).tolist() == [4, 4, 4]


def test_device_calls_go_by_their_launch_not_their_start() -> None:
    """Step 1's all-gather (launched at 15.5 ms, in step 1's marker) starts at 16 ms, while
    step 0's gemm runs until 17 ms on another stream: by its start it lies in step 0's span,
    but step 1 launched it (the step breakdown counts it in step 1 too). The parameters'
    broadcast, launched at 1 ms before the first step, belongs to no step although it runs
    during step 0's work."""
    gpu = _Gpu()
    gemm, nccl = gpu.stream(0, 7), gpu.stream(0, 14)
    gpu.launch(MS, "ncclKernel_Broadcast_RING_LL", 5 * MS + MS // 2, MS // 2, nccl)
    for k in range(4):
        t = 5 * MS + k * 10 * MS
        gpu.main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        gpu.launch(t + 10 * US, "sm80_xmma_gemm", t + 20 * US, (12 if k == 0 else 6) * MS, gemm)
        if k == 1:
            gpu.launch(t + MS // 2, NCCL_AG, t + MS, MS, nccl)
        gpu.launch(t + MS, NCCL_AR, t + 7 * MS, MS, nccl)
    calls, step_num = _calls(gpu.builder)
    assert calls.lanes == ("broadcast", "all_reduce", "all_gather")
    assert calls.lane.tolist() == [0, 1, 2, 1, 1, 1]
    assert [step_num[s] if s >= 0 else -1 for s in calls.step.tolist()] == [-1, 0, 1, 1, 2, 3]


def test_of_steps_starting_together_a_time_belongs_to_the_one_listed_last() -> None:
    """Ten steps listed twice (a marker per step on two threads, say: rows k and k + 10
    start at the same nanosecond, row k + 10 ends later): a time inside both belongs to the
    one listed last, whatever order a sort gives equal starts."""
    starts = np.r_[np.arange(10), np.arange(10)] * 100
    ends = starts + np.repeat([50, 80], 10)
    steps = module._steps_of(starts, ends, np.arange(10) * 100 + 10)
    assert steps.tolist() == list(range(10, 20))
