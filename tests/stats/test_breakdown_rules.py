"""One synthetic trace per rule of the step-time breakdown (XProf's ``event_span.h`` and
``xplane_to_step_events.cc``, and stepscope's additions: collective wait, the "bound by"
limits): each test builds the smallest trace in which the rule decides where time goes, and
checks the step's categories (or its "bound by" limits) as the overview shows them.

The rule -> test map is in docs/testing.md ("Breakdown rules"). Rules tested elsewhere on
traces of their own: group vs window attribution, device work by launch time, late device
work and sequential steps, held zero-length events, producer threads' input
(tests/stats/test_breakdown.py); the selection rules and the fetch before a step
(tests/stats/test_steps.py); waits for a computation (test_wait_attribution.py); dispatch
runs (test_dispatch_bound.py); staged input (test_staging.py); gloo's collective wait
(test_collectives.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from stepscope.stats import EventType, build_step_db
from stepscope.stats.steps.breakdown import StepDb, _as_xprof, _joined
from stepscope.stats.steps.limit_table import LimitTable
from stepscope.stats.steps.limits import LIMIT_NAMES
from stepscope.vocab.profiler import LAST_STEP_WHOLE_STAT, STEP_ANCHOR
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

US = 1_000
STEP_MS = 10
# (line, name, start in ms from the step's start, duration in ms, stats)
Event = tuple[str, str, float, float, dict[str, Any]]
# where each line goes: host threads, or the GPU's stream / its derived lines
HOST_LINES = {"main": 1, "worker": 2, "tf_data_iterator": 3}
DEVICE_LINES = {"stream": 7, "XLA Modules": 8, "XLA Ops": 9}


def _trace(events: Sequence[Event], steps: int = 1, gap_ms: float = 0) -> XSpaceBuilder:
    """``steps`` 10 ms steps (``train`` markers on ``main``, ``gap_ms`` apart), each holding
    ``events`` (times from its start); device lines only when an event uses one."""
    builder = XSpaceBuilder("rules")
    host = builder.plane("/host:CPU")
    lines = {name: host.line(i, name) for name, i in HOST_LINES.items()}
    if any(line in DEVICE_LINES for line, *_ in events):
        gpu = builder.plane("/device:GPU:0")
        lines.update({name: gpu.line(i, name) for name, i in DEVICE_LINES.items()})
    for k in range(steps):
        t0 = 1_000 * MS + k * int((STEP_MS + gap_ms) * MS)
        lines["main"].event("train", t0, STEP_MS * MS, {"step_num": k, "_r": 1})
        for line, name, start_ms, dur_ms, stats in events:
            lines[line].event(name, t0 + int(start_ms * MS), int(dur_ms * MS), stats)
    return builder


def _db(events: Sequence[Event], steps: int = 1) -> StepDb:
    return build_step_db(build(_trace(events, steps)))


def _categories(db: StepDb, step: int = 0) -> dict[str, float]:
    """The step's non-zero categories in ms."""
    return {k: v[step] / MS for k, v in db.category_ns().items() if v[step]}


def _limits(db: StepDb, step: int = 0) -> dict[str, float]:
    return {k: v[step] / MS for k, v in db.limit_ns().items() if v[step]}


# A kernel in every device step: a step with a device needs device compute to be a step.
KERNEL: Event = ("stream", "volta_sgemm_128x64_nn", 8, 1, {})


# --- Event types: host events, profile without a device --------------------------------------


@pytest.mark.parametrize(
    ("name", "stats", "category"),
    [
        # XProf: a host-to-device copy or an infeed op is input
        ("MemcpyHToD", {}, "input"),
        ("model/infeed:InfeedEnqueueTuple", {}, "input"),
        # a host-to-host copy is host work
        ("MemcpyHToH", {}, "host_compute"),
        # waiting for the next batch: TensorFlow's op, PyTorch's DataLoader
        ("IteratorGetNext", {}, "input"),
        ("iteratorgetnextasoptional", {}, "input"),
        ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", {}, "input"),
        # a root tf.data stage (no parent_id) is the step waiting; a nested stage is work
        ("Iterator::Prefetch", {}, "input"),
        ("Iterator::Prefetch::Map", {"parent_id": 7}, "host_compute"),
        # a host thread in a collective of any framework
        ("gloo:all_reduce", {}, "collective_wait"),
        ("MPI_Allreduce", {}, "collective_wait"),
        ("model/allreduce:CollectiveReduceV2", {}, "collective_wait"),
        # compilation of XLA, TensorFlow, JAX and torch.compile; running compiled code is not
        ("XlaCompile", {}, "compilation"),
        ("backend_compile", {}, "compilation"),
        ("compile_fx_inner", {}, "compilation"),
        ("CompiledFunction", {}, "host_compute"),
        ("compile_loss/add:AddV2", {}, "host_compute"),
        # launches are host work without a device (XProf: HOST_PREPARE needs a device)
        ("cudaLaunchKernel", {"correlation_id": 5}, "host_compute"),
        ("ExecutorState::Process", {}, "host_compute"),
        # wrappers of work traced elsewhere are not counted: their time is "All others"
        ("EagerExecute", {}, "other"),
        ("FunctionRun", {}, "other"),
        # any other host event is host compute
        ("model/dense/MatMul:MatMul", {}, "host_compute"),
    ],
)
def test_host_event_types(name: str, stats: dict[str, Any], category: str) -> None:
    """The event (4 ms) beside 1 ms of host compute (the step needs some to be a step)."""
    cats = _categories(_db([("main", name, 2, 4, stats), ("main", "model/op:Relu", 7, 1, {})]))
    want = {"host_compute": 1.0, "other": STEP_MS - 5.0}
    want[category] = want.get(category, 0.0) + 4.0
    assert cats == want


def test_a_step_marker_inside_a_step_is_not_work() -> None:
    """A nested marker (Keras's batch inside a custom loop's step) is bookkeeping."""
    cats = _categories(
        _db([("main", "model/op:Relu", 1, 1, {}), ("main", "Profiled batch", 2, 6, {})])
    )
    assert cats == {"host_compute": 1.0, "other": 9.0}


# --- Event types: with a device -------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "category"),
    [
        # a host event that launches device work (it has a correlation id) or runs an
        # executor step is kernel launch time
        (("main", "cudaLaunchKernel", 2, 4, {"correlation_id": 5}), "kernel_launch"),
        (("main", "ExecutorState::Process", 2, 4, {}), "kernel_launch"),
        (("main", "executorstate::process", 2, 4, {}), "kernel_launch"),
        (("main", "model/dense/MatMul:MatMul", 2, 4, {}), "host_compute"),
        # device events: copies by direction, collectives, compute
        (("stream", "MEMCPYHToD", 2, 4, {}), "input"),
        (("stream", "Memcpy HtoD (Pageable -> Device)", 2, 4, {}), "input"),
        (("stream", "MEMCPYDToH", 2, 4, {}), "output"),
        (("stream", "MEMCPYDToD", 2, 4, {}), "device_to_device"),
        (("stream", "Memcpy PtoP (Device -> Device)", 2, 4, {}), "device_to_device"),
        (("stream", "ncclKernel_AllReduce_RING_LL_Sum_float", 2, 4, {}), "device_collectives"),
        (("stream", "ncclDevKernel_Generic", 2, 4, {}), "device_collectives"),
        (("stream", "all-reduce.3", 2, 4, {}), "device_collectives"),
        (("stream", "Memset (Device)", 2, 4, {}), "device_compute"),
        (("stream", "fusion.12", 2, 4, {}), "device_compute"),
    ],
)
def test_device_profile_event_types(event: Event, category: str) -> None:
    cats = _categories(_db([event, KERNEL]))
    want = {category: 4.0}
    want["device_compute"] = want.get("device_compute", 0.0) + 1.0
    want["other"] = STEP_MS - sum(want.values())
    assert cats == want


@pytest.mark.parametrize(
    ("name", "stats", "half"),
    [
        ("volta_h884gemm_64x64_ldg8_nn", {}, True),  # a half-precision Tensor Core kernel
        ("ampere_bf16_s16816gemm_bf16_128x64", {}, True),
        ("volta_sgemm_128x64_nn", {}, False),
        # a name that shows no precision: the op's tensor shapes decide (XProf's rule)
        ("fusion.7", {"tensor_shapes": "(half[32,64], half[64,64])"}, True),
        ("fusion.7", {"tensor_shapes": "(bf16[32,64])"}, True),
        ("fusion.7", {"tensor_shapes": "(float[32,64])"}, False),
    ],
)
def test_reduced_precision_compute(name: str, stats: dict[str, Any], half: bool) -> None:
    """16-bit (reduced precision) device compute is its own type: the overview's share of
    16-bit compute and its mixed-precision advice read it."""
    db = _db([("stream", name, 2, 4, stats)])
    assert db.type_time(EventType.DEVICE_COMPUTE_16)[0] == (4 * MS if half else 0)
    assert db.type_time(EventType.DEVICE_COMPUTE_32)[0] == (0 if half else 4 * MS)


def test_derived_device_lines_are_not_work() -> None:
    """XProf derives "XLA Modules" (and "XLA Ops", on a GPU with streams) from the streams:
    their events are not the device's work a second time."""
    db = _db([KERNEL, ("XLA Modules", "jit_train_step", 0, 9, {}), ("XLA Ops", "dot.1", 2, 4, {})])
    assert _categories(db) == {"device_compute": 1.0, "other": 9.0}


def test_a_device_without_streams_works_on_its_xla_ops_line() -> None:
    """A TPU plane has no streams: its "XLA Ops" line is the device's work."""
    builder = XSpaceBuilder("tpu")
    builder.plane("/host:CPU").line(1, "main").event(
        "train", 1_000 * MS, 10 * MS, {"step_num": 0, "_r": 1}
    )
    tpu = builder.plane("/device:TPU:0")
    tpu.line(1, "XLA Modules").event("jit_train_step", 1_000 * MS, 9 * MS)
    ops = tpu.line(2, "XLA Ops")
    ops.event("fusion.1", 1_001 * MS, 3 * MS)
    ops.event("all-reduce.1", 1_005 * MS, 2 * MS)
    db = build_step_db(build(builder))
    assert db.has_device
    assert _categories(db) == {"device_compute": 3.0, "device_collectives": 2.0, "other": 5.0}


def test_kineto_categories_that_are_not_work() -> None:
    """Kineto's annotations, CUDA syncs and instants on a stream are no device work."""
    stream_extra = [
        ("stream", "train_step", 0, 9, {"category": "gpu_user_annotation"}),
        ("stream", "cudaStreamSynchronize", 3, 2, {"category": "cuda_sync"}),
    ]
    assert _categories(_db([KERNEL, *stream_extra])) == {"device_compute": 1.0, "other": 9.0}


# --- Priorities: every instant to the highest type active then ------------------------------


@pytest.mark.parametrize(
    ("low", "high", "winner"),
    [
        # compilation over host compute
        (("main", "model/op:Relu", 2, 4, {}), ("main", "XlaCompile", 2, 4, {}), "compilation"),
        # a host-to-host copy over compilation (XProf's order: HOST_TO_HOST above COMPILE)
        (("main", "XlaCompile", 2, 4, {}), ("worker", "MemcpyHToH", 2, 4, {}), "host_compute"),
        # waiting for input over kernel launches and host work
        (
            ("main", "cudaLaunchKernel", 2, 4, {"correlation_id": 1}),
            ("worker", "IteratorGetNext", 2, 4, {}),
            "input",
        ),
        # device compute over a copy, a copy over waiting for input
        (("stream", "MEMCPYDToH", 2, 4, {}), ("stream", "sgemm", 2, 4, {}), "device_compute"),
        (
            ("worker", "IteratorGetNext", 2, 4, {}),
            ("stream", "MEMCPYDToD", 2, 4, {}),
            "device_to_device",
        ),
        # device collectives under host input waits, over kernel launches
        (
            ("stream", "ncclKernel_AllReduce", 2, 4, {}),
            ("main", "IteratorGetNext", 2, 4, {}),
            "input",
        ),
        (
            ("main", "cudaLaunchKernel", 2, 4, {"correlation_id": 1}),
            ("stream", "ncclKernel_AllReduce", 2, 4, {}),
            "device_collectives",
        ),
    ],
)
def test_the_higher_priority_type_takes_the_overlap(low: Event, high: Event, winner: str) -> None:
    events = [low, high]
    with_device = any(e[0] == "stream" for e in events)
    if with_device:
        events.append(KERNEL)
    db = build_step_db(build(_trace(events)))
    cats = _categories(db)
    assert cats[winner] == 4.0 + (1.0 if with_device and winner == "device_compute" else 0.0)
    assert sum(cats.values()) == STEP_MS


def test_a_frame_holding_a_whole_collective_waits_in_it() -> None:
    """A Python frame (``backward``) that holds a whole host collective is the thread
    waiting in that collective, not host compute: the collective's time is collective wait,
    the frame's other time host compute."""
    frame = "$_tensor.py:570 Tensor.backward"
    cats = _categories(_db([("main", frame, 1, 8, {}), ("worker", "gloo:all_reduce", 3, 4, {})]))
    assert cats == {"host_compute": 4.0, "collective_wait": 4.0, "other": 2.0}


def test_an_op_holding_another_threads_collective_computes() -> None:
    """An op (no frame that waits for other threads) computes whatever another thread runs
    meanwhile (decision 86); only a collective of its own thread inside it is waiting."""
    cats = _categories(
        _db([("main", "aten::mm", 1, 8, {}), ("worker", "gloo:all_reduce", 3, 4, {})])
    )
    assert cats == {"host_compute": 8.0, "other": 2.0}
    cats = _categories(
        _db([("main", "AccumulateGrad", 1, 8, {}), ("main", "c10d::allreduce_", 3, 4, {})])
    )
    assert cats == {"host_compute": 4.0, "collective_wait": 4.0, "other": 2.0}


def test_a_frame_overlapping_part_of_a_collective_is_host_compute() -> None:
    """A frame that overlaps under half of a collective (its first quarter) computes, and
    wins over the collective where they overlap; only a frame holding the collective (or
    most of it) is the thread waiting in it."""
    cats = _categories(
        _db([("main", "forward", 0, 4, {}), ("worker", "gloo:all_reduce", 3, 4, {})])
    )
    assert cats == {"host_compute": 4.0, "collective_wait": 3.0, "other": 3.0}


# --- Spans and time nobody covers -----------------------------------------------------------


def test_time_no_event_covers_is_all_others() -> None:
    cats = _categories(
        _db([("main", "model/op:Relu", 0, 1, {}), ("main", "model/op:Add", 5, 2, {})])
    )
    assert cats == {"host_compute": 3.0, "other": 7.0}


def test_work_outside_the_step_is_cut_at_its_edges() -> None:
    """Work counted by window (a thread no step reaches) running past the step's end counts
    to the end only."""
    db = _db([("worker", "background", 6, 8, {})], steps=1)
    assert _categories(db) == {"host_compute": 4.0, "other": 6.0}
    assert db.dur_ns.tolist() == [STEP_MS * MS]


def test_an_unnested_event_of_the_steps_thread_is_no_steps_work() -> None:
    """On the step's thread, work belongs to the step it nests in (XProf's grouping): an
    event that starts inside the marker and ends after it is no child of it, and no step's."""
    db = _db([("main", "model/op:Relu", 1, 1, {}), ("main", "model/op:Add", 6, 8, {})])
    assert _categories(db) == {"host_compute": 1.0, "other": 9.0}


def test_an_event_spanning_two_steps_counts_in_each() -> None:
    """A thread no step reaches counts by window: an event across a step boundary gives
    each step its part."""
    db = _db([("worker", "background", 8, 4, {})], steps=3)
    # each step's event runs from 8 to 12 ms: 2 ms in its step, 2 ms in the next
    assert db.category_ns()["host_compute"].tolist() == [2 * MS, 4 * MS, 4 * MS]
    assert np.array_equal(sum(db.category_ns().values()), db.dur_ns)


def test_device_work_outside_the_marker_stretches_the_step_over_it() -> None:
    """An asynchronous device: when the marker does not include the step's device work, the
    step runs from the marker's start to that work's end. XProf times such a step by its
    device work alone (8 to 13 ms); the host's time before the kernel, launch included, is
    the step's too (decision 1056)."""
    db = _db(
        [
            ("main", "cudaLaunchKernel", 1, 1, {"correlation_id": 3}),
            ("stream", "sgemm", 8, 5, {"correlation_id": 3}),
        ]
    )
    assert db.dur_ns.tolist() == [13 * MS]
    assert db.start_ns.tolist() == [1_000 * MS]
    assert _categories(db) == {"device_compute": 5.0, "kernel_launch": 1.0, "other": 7.0}


# --- Attribution --------------------------------------------------------------------------


def test_markers_sharing_a_group_give_it_to_the_longest() -> None:
    """Two markers reaching the same work (a Keras batch inside a custom step, both with
    ``_r``): the work is the longer marker's step."""
    builder = XSpaceBuilder("nested")
    main = builder.plane("/host:CPU").line(1, "main")
    for k in range(2):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("train", t0 + 2 * MS, 3 * MS, {"step_num": 100 + k, "_r": 1})
        main.event("model/op:MatMul", t0 + 3 * MS, MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 1]  # the short markers hold no work of their own
    assert db.category_ns()["host_compute"].tolist() == [MS, MS]


def test_a_steps_input_wait_on_its_own_thread_outranks_others_by_window() -> None:
    """When the step thread shows its own waits, waits of other threads counted by window
    (a loader's producers) are their work, not the step waiting; without them, another
    thread's wait is the best evidence there is (Keras runs IteratorGetNext elsewhere)."""
    both = _categories(
        _db(
            [
                ("main", "IteratorGetNext", 0, 2, {}),
                ("worker", "IteratorGetNext", 3, 4, {}),
                ("main", "model/op:Relu", 8, 1, {}),
            ]
        )
    )
    assert both == {"input": 2.0, "host_compute": 5.0, "other": 3.0}
    other_only = _categories(
        _db([("worker", "IteratorGetNext", 3, 4, {}), ("main", "model/op:Relu", 8, 1, {})])
    )
    assert other_only == {"input": 4.0, "host_compute": 1.0, "other": 5.0}


# --- Selection ------------------------------------------------------------------------------


def test_on_a_device_profile_a_step_needs_device_compute() -> None:
    """With a device, a marker whose window holds only host work is no step (XProf drops it
    as ill-formed), while the steps with kernels stay."""
    builder = _trace([("main", "model/op:Relu", 1, 2, {})], steps=3)
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    for k in (0, 2):
        stream.event("sgemm", 1_000 * MS + k * 10 * MS + 5 * MS, MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 2] and db.dropped_ill_formed == 1


def test_the_drop_rule_trims_only_beyond_five_marked_steps() -> None:
    """XProf drops the first and the last step (maybe cut off by the capture) when there are
    more than five; five stay whole, and the description says why steps are missing."""
    five = _db([("main", "model/op:Relu", 1, 1, {})], steps=5)
    assert five.n_steps == 5 and five.dropped_incomplete == 0
    assert "dropped" not in five.description
    six = _db([("main", "model/op:Relu", 1, 1, {})], steps=6)
    assert six.step_num.tolist() == [1, 2, 3, 4] and six.dropped_incomplete == 2
    assert "the first and the last dropped" in six.description


def test_a_capture_whose_last_step_is_whole_keeps_it() -> None:
    """A flight recorder save ends with the slow step it was saved for: its host plane says
    the last step is whole, so only the first (which the ring may have cut) is dropped. The
    stat is of stepscope's own markers, each anchored at its start (decision 671)."""
    events: list[Event] = [("main", STEP_ANCHOR, 0, 1e-6, {}), ("main", "model/op:Relu", 1, 1, {})]
    builder = _trace(events, steps=6)
    builder.plane("/host:CPU").stats[LAST_STEP_WHOLE_STAT] = 1
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [1, 2, 3, 4, 5] and db.dropped_incomplete == 1
    assert "the first dropped" in db.description and "the last is whole" in db.description


# --- "Bound by" limits ----------------------------------------------------------------------
# (host ops named so that no staged input is found: `aten::add` is no model op that ends a
# batch's preparation, tests/stats/test_staging.py)


def test_limits_of_a_host_only_step() -> None:
    """Without a device, framework ops are the model's compute, Python frames and the user's
    annotations are host work, a tf.data stage on its own on the step's thread is input
    work, and time nothing covers is host (untraced Python)."""
    db = _db(
        [
            ("main", "aten::add", 1, 2, {}),
            ("main", "$train.py:12 step", 4, 1, {}),
            ("main", "my_region", 5, 1, {"stepscope_annotation": 1}),
            ("main", "Iterator::Prefetch::Map", 6, 2, {"parent_id": 7}),
        ]
    )
    limits = _limits(db)
    assert limits["compute"] == 2.0
    assert limits["input"] == 2.0
    assert limits["host"] == 6.0  # 2 ms traced host work + 4 ms untraced


def test_limits_of_a_device_step() -> None:
    """With a device: device compute, copies, collectives, launches (dispatch) and input
    each have their limit; host ops are host work."""
    db = _db(
        [
            ("main", "cudaLaunchKernel", 0, 1, {"correlation_id": 3}),
            ("main", "aten::add", 1, 1, {}),
            ("main", "XlaCompile", 2, 1, {}),
            ("stream", "MEMCPYHToD", 3, 1, {}),
            ("stream", "MEMCPYDToD", 4, 1, {}),
            ("stream", "ncclKernel_AllReduce", 5, 1, {}),
            ("stream", "sgemm", 6, 2, {}),
        ]
    )
    assert _limits(db) == {
        "input": 1.0,
        "compute": 2.0,
        "dispatch": 1.0,
        "host": 3.0,  # 1 ms host op + 2 ms untraced
        "collectives": 1.0,
        "copies": 1.0,
        "compilation": 1.0,
    }


def test_a_host_collective_is_a_collective_limit_unless_work_overlaps_it() -> None:
    db = _db([("worker", "gloo:all_reduce", 1, 6, {}), ("main", "aten::add", 5, 3, {})])
    assert _limits(db) == {"collectives": 4.0, "compute": 3.0, "host": 3.0}


def test_the_input_pipelines_work_is_input_only_when_nothing_else_runs() -> None:
    """A pipeline stage on the step's thread competes with the model: where the model
    computes, the step is not waiting for it."""
    db = _db(
        [
            ("main", "Iterator::Prefetch::Map", 1, 2, {"parent_id": 7}),
            ("worker", "aten::add", 2, 4, {}),
        ]
    )
    assert _limits(db) == {"input": 1.0, "compute": 4.0, "host": 5.0}


def test_the_pipeline_prefetching_on_its_own_threads_is_no_input_of_the_step() -> None:
    """``tf.data.Dataset.from_generator`` under an eager loop (decision 381): the generator
    runs on tf.data's threads, prefetching, while the step's thread runs its eager ops and
    its own Python between them (untraced). The step waits for input only in its consumer's
    ``IteratorGetNext``; the pipeline's work beside the step covers none of the step's time
    (it read 28.2% input for the script's 12.2% in next())."""
    db = _db(
        [
            ("main", "IteratorGetNext", 0, 1, {}),
            ("main", "MatMul", 2, 1, {}),
            ("main", "Relu", 5, 1, {}),
            ("tf_data_iterator", "Iterator::Root::Prefetch::FlatMap[0]::Generator", 1, 8, {}),
            ("tf_data_iterator", "PyFunc", 1.5, 6, {}),
        ]
    )
    assert _limits(db) == {"input": 1.0, "compute": 2.0, "host": 7.0}


# --- No step at all ---------------------------------------------------------------------------


def test_a_profile_without_steps_says_why_and_still_knows_its_device() -> None:
    """No marker and nothing repeating: no step, every category empty, and the device seen
    (the overview's "no steps" page still says the run had a GPU)."""
    builder = XSpaceBuilder("nosteps")
    builder.plane("/host:CPU").line(1, "main").event("model/op:Relu", 0, MS)
    builder.plane("/device:GPU:0").line(7, "stream").event("volta_sgemm_128x64_nn", MS, MS)
    db = build_step_db(build(builder))
    assert (db.n_steps, db.has_device) == (0, True)
    assert db.description.startswith("no step markers (_r/step_num, ProfilerStep#N")
    assert {k: v.tolist() for k, v in db.category_ns().items()} == {c: [] for c in db.category_ns()}
    host_only = XSpaceBuilder("nosteps")
    host_only.plane("/host:CPU").line(1, "main").event("model/op:Relu", 0, MS)
    assert not build_step_db(build(host_only)).has_device
    # and with steps
    assert _db([KERNEL]).has_device is True
    assert _db([("main", "model/op:Relu", 1, 1, {})]).has_device is False


def test_a_profile_without_steps_has_an_empty_database_of_int64_columns() -> None:
    """A host plane without events, no steps: every column empty and int64 (an empty float
    column joined to others would turn them to float), the category and limit tables too."""
    empty = XSpaceBuilder("empty")
    empty.plane("/host:CPU")
    db = build_step_db(build(empty))
    assert (db.attribution, db.has_device, db.names) == ("none", False, ())
    assert (db.markers_found, db.dropped_ill_formed, db.dropped_incomplete) == (0, 0, 0)
    for column in (db.step_num, db.start_ns, db.dur_ns, db.type_ns):
        assert column.dtype == np.int64 and column.size == 0
    tables = {**db.category_ns(), **db.limit_ns()}
    assert tables and all(v.dtype == np.int64 and v.shape == (0,) for v in tables.values())


def test_a_database_stored_without_limits_reads_zero_for_every_limit() -> None:
    db = _db([("main", "aten::addmm", 1, 5, {})], steps=3)
    bare = replace(db, limits=LimitTable.empty())
    limits = bare.limit_ns()
    assert list(limits) == list(LIMIT_NAMES)
    for v in limits.values():
        assert v.dtype == np.int64 and v.tolist() == [0] * db.n_steps


def test_stepscopes_own_host_types_count_as_xprofs_host_compute() -> None:
    types = np.array(
        [
            EventType.HOST_ENCLOSING,
            EventType.HOST_COLLECTIVE,
            EventType.HOST_COMPUTE,
            EventType.HOST_PREPROCESS,
        ],
        np.int64,
    )
    assert _as_xprof(types).tolist() == [EventType.HOST_COMPUTE] * 3 + [EventType.HOST_PREPROCESS]
    assert types[0] == EventType.HOST_ENCLOSING  # a copy: the caller's types are left alone
    plain = types[2:]
    assert _as_xprof(plain) is plain  # nothing to change: no copy


def test_joined_columns_take_the_asked_type() -> None:
    one = np.arange(3, dtype=np.int64)
    assert _joined([np.zeros(0, np.int32), one], np.int64) is one
    narrowed = _joined([np.zeros(0, np.int64), one], np.int32)
    assert narrowed.dtype == np.int32 and narrowed.tolist() == [0, 1, 2]


def test_a_kernel_starting_as_the_step_ends_is_in_no_step() -> None:
    """Steps are half-open: a kernel (no launch recorded, so its own start counts) starting at
    the instant a step ends, in the gap before the next one, is no step's device work."""
    trace = _trace(
        [("main", "aten::addmm", 0, 2, {}), ("stream", "volta_sgemm", STEP_MS, 1, {})],
        steps=3,
        gap_ms=5,
    )
    db = build_step_db(build(trace))
    assert db.dur_ns.tolist() == [STEP_MS * MS] * 3
    assert [_categories(db, k) for k in range(3)] == [{"host_compute": 2.0, "other": 8.0}] * 3


def test_the_step_source_asked_for_is_the_one_read() -> None:
    """``train`` markers are steps of the "marker" source; asked for PyTorch's ProfilerStep#N
    annotations, which this trace has none of, the database has no step."""
    profile = build(_trace([("main", "aten::addmm", 0, 2, {})], steps=3))
    assert build_step_db(profile, source="marker").n_steps == 3
    assert build_step_db(profile, source="profiler_step").n_steps == 0


def test_steps_of_a_device_steps_line_attribute_work_by_time_window() -> None:
    """A TPU's "Steps" line has no host markers to follow links from: every event counts in
    the step its time falls in, and the database says so."""
    builder = XSpaceBuilder("tpu")
    tpu = builder.plane("/device:TPU:0")
    steps, ops = tpu.line(1, "Steps"), tpu.line(2, "XLA Ops")
    for k in range(4):
        steps.event(str(k), k * STEP_MS * MS, STEP_MS * MS, {"step_num": k})
        ops.event("fusion.1", k * STEP_MS * MS + MS, 5 * MS)
    db = build_step_db(build(builder))
    assert (db.source, db.attribution, db.n_steps) == ("device", "window", 4)
