"""Nesting (parents, self time) and op metrics on synthetic traces."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import build_op_metrics
from stepscope.stats.nesting import depths, nesting_parents, self_time
from stepscope.vocab.opnames import JAX, TF, TF_DATA, UNKNOWN, parse_op
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.op_stack import stack_parents


@pytest.mark.parametrize("seed", range(40))
def test_parents_match_the_op_stack(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    line = rng.integers(0, 3, n)
    start = rng.integers(0, 200, n)
    end = start + rng.integers(0, 60, n) * (rng.random(n) > 0.2)  # some zero-length events
    if seed % 2:  # properly nested lines take the fast path; make half of them nested
        end = np.minimum(end, start + 1 + (200 - start) // 4)
    assert np.array_equal(nesting_parents(line, start, end), stack_parents(line, start, end))


@pytest.mark.parametrize("seed", range(12))
def test_deep_nesting_on_many_lines_matches_the_op_stack(seed: int) -> None:
    # properly nested lines of depth up to 8, interleaved in the input, with zero-length
    # events and shared boundaries: the by-depth path (parents found level by level)
    rng = np.random.default_rng(100 + seed)
    lines, starts, ends = [], [], []
    for line in range(int(rng.integers(1, 6))):
        stack = [(0, 10_000)]
        t = 0
        for _ in range(int(rng.integers(1, 120))):
            lo, hi = stack[-1]
            t = max(t, lo)
            if t >= hi or (len(stack) > 1 and rng.random() < 0.3):
                t = max(t, hi) if len(stack) > 1 else t
                stack.pop() if len(stack) > 1 else None
                continue
            length = int(rng.integers(0, max(1, (hi - t) // 2) + 1))
            lines.append(line)
            starts.append(t)
            ends.append(t + length)
            if length and len(stack) < 8:
                stack.append((t, t + length))
            else:
                t += length
    line, start, end = (np.array(v, dtype=np.int64) for v in (lines, starts, ends))
    shuffled = rng.permutation(len(start))
    line, start, end = line[shuffled], start[shuffled], end[shuffled]
    assert np.array_equal(nesting_parents(line, start, end), stack_parents(line, start, end))


def test_self_time_and_depth() -> None:
    line = np.zeros(5, np.int64)
    start = np.array([0, 10, 20, 60, 30])
    end = np.array([100, 50, 30, 70, 40])
    parent = nesting_parents(line, start, end)
    assert parent.tolist() == [-1, 0, 1, 0, 1]
    assert depths(parent).tolist() == [0, 1, 2, 1, 2]
    assert self_time(end - start, parent).tolist() == [50, 20, 10, 10, 10]


def test_op_names() -> None:
    assert parse_op("model/dense/MatMul:MatMul") == (TF, "model/dense/MatMul", "MatMul")
    assert parse_op("Iterator::Root::Map").category == TF_DATA
    assert parse_op("jit(f)/dot_general:dot_general[precision=None]").type == "dot_general"
    assert parse_op("jit(f)/dot_general:dot_general").category == JAX
    for runtime in (
        "ExecutorState::Process",
        "EagerLocalExecute: IteratorGetNext",
        "aten::mm",
        "train",
    ):
        assert parse_op(runtime).category == UNKNOWN


def test_tf_op_metrics_self_time_counts_only_op_children() -> None:
    builder = XSpaceBuilder("tf")
    host = builder.plane("/host:CPU")
    line = host.line(1, "tf_Compute")
    line.event("model/outer:While", 0, 10 * MS)
    line.event("ExecutorState::Process", MS, 8 * MS)  # runtime, not an op: no effect
    line.event("model/inner:MatMul", 2 * MS, 3 * MS)
    line.event("model/inner:MatMul", 6 * MS, 2 * MS, {"is_eager": 1})
    host.line(2, "other").event("model/inner:MatMul", 0, MS)
    ops = build_op_metrics(build(builder)).host
    rows = {name: i for i, name in enumerate(ops.names)}
    outer, inner = rows["model/outer"], rows["model/inner"]
    assert ops.types[inner] == "MatMul" and ops.occurrences[inner] == 3
    assert ops.total_ns[outer] == 10 * MS and ops.self_ns[outer] == 5 * MS
    assert ops.self_ns[inner] == 6 * MS and ops.eager_self_ns[inner] == 2 * MS
    # idle: per thread, first op start to last op end, less op self time
    assert ops.idle_ns == 10 * MS + MS - 11 * MS
    assert len(build_op_metrics(build(builder)).device) == 0
    assert not ops.flops.any()


def test_a_loaders_iterator_alone_does_not_hide_a_jax_loops_host_work() -> None:
    # a JAX loop under `stepscope.steps`: the loader's fetches are named as tf.data names
    # them, JAX's calls are names no framework vocabulary knows; the iterator was read as
    # the only framework op (100% of the table) and the JAX calls were left out
    builder = XSpaceBuilder("jax")
    line = builder.plane("/host:CPU").line(1, "MainThread")
    line.event("Iterator::Generator", 0, 4 * MS)
    for k in range(3):
        line.event("PjitFunction(dot_general)", 5 * MS + k * MS, MS // 2)
    ops = build_op_metrics(build(builder)).host
    rows = dict(zip(ops.names, ops.types, strict=True))
    assert rows == {
        "Iterator::Generator": "Dataset",
        "PjitFunction(dot_general)": "PjitFunction(dot_general)",
    }
    assert ops.occurrences[ops.names.index("PjitFunction(dot_general)")] == 3
    # with a model op of a known framework beside it, only framework ops count, as before
    line.event("model/dense/MatMul:MatMul", 9 * MS, MS)
    assert set(build_op_metrics(build(builder)).host.names) == {
        "Iterator::Generator",
        "model/dense/MatMul",
    }


def test_host_ops_are_summed_without_the_cached_end_times() -> None:
    """The host table's sums (at the peak of a cold analysis at 20M events) keep no cached
    end times: they are dropped once read; they read the same after."""
    from stepscope.stats import op_metrics

    builder = XSpaceBuilder("tf")
    line = builder.plane("/host:CPU").line(1, "tf_Compute")
    line.event("model/a:MatMul", 0, 2 * MS)
    line.event("model/b:Relu", MS, MS // 2)
    line.event("model/b:Relu", 3 * MS, MS)
    profile = build(builder)
    end = profile.end_ns.copy()
    ops = op_metrics.build_op_metrics(profile).host
    assert "end_ns" not in profile.__dict__
    rows = {name: i for i, name in enumerate(ops.names)}
    a, b = rows["model/a"], rows["model/b"]
    assert ops.self_ns[a] == 3 * MS // 2 and ops.self_ns[b] == 3 * MS // 2
    assert ops.idle_ns == MS and ops.occurrences[b] == 2
    assert np.array_equal(profile.end_ns, end)


def test_host_op_flops_and_eager_count_only_the_events_that_carry_them() -> None:
    builder = XSpaceBuilder("tf")
    line = builder.plane("/host:CPU").line(1, "tf_Compute")
    line.event("model/a:MatMul", 0, 2 * MS, {"flops": 1000, "is_eager": 0})
    line.event("model/a:MatMul", 3 * MS, 2 * MS, {"flops": 24.5, "is_eager": 1})
    line.event("model/b:Relu", 6 * MS, MS, {"is_eager": 0})
    ops = build_op_metrics(build(builder)).host
    rows = {name: i for i, name in enumerate(ops.names)}
    a, b = rows["model/a"], rows["model/b"]
    assert ops.flops[a] == 1024.5 and ops.flops[b] == 0
    assert ops.eager_self_ns[a] == 2 * MS and ops.eager_self_ns[b] == 0


def test_pytorch_ops_and_device_ops_are_separate() -> None:
    builder = XSpaceBuilder("torch")
    host = builder.plane("/host:CPU").line(1, "main")
    host.event("ProfilerStep#1", 0, 10 * MS)
    host.event("aten::linear", MS, 4 * MS)
    host.event("aten::addmm", 2 * MS, 2 * MS)
    host.event("cudaLaunchKernel", 3 * MS, MS // 10, {"correlation_id": 1})
    for plane in builder.planes:
        plane.event_metadata_id("aten::linear", "", {"category": "cpu_op"})
        plane.event_metadata_id("aten::addmm", "", {"category": "cpu_op"})
        plane.event_metadata_id("ProfilerStep#1", "", {"category": "user_annotation"})
        plane.event_metadata_id("cudaLaunchKernel", "", {"category": "cuda_runtime"})
    stream = builder.plane("/device:GPU:0").line(7, "Stream #7")
    stream.event("ampere_sgemm", 4 * MS, 2 * MS, {"correlation_id": 1})
    stream.event("ampere_sgemm", 7 * MS, 2 * MS)
    stream.event("MEMCPYDToH", 9 * MS, MS)
    metrics = build_op_metrics(build(builder))
    assert set(metrics.host.names) == {"aten::linear", "aten::addmm"}  # no runtime, no marker
    assert (
        dict(zip(metrics.host.names, metrics.host.self_ns.tolist(), strict=True))["aten::linear"]
        == 2 * MS
    )
    device = dict(
        zip(
            metrics.device.names,
            zip(metrics.device.types, metrics.device.total_ns.tolist(), strict=True),
            strict=True,
        )
    )
    assert device["ampere_sgemm"] == ("Kernel", 4 * MS)
    assert device["MEMCPYDToH"] == ("MemcpyDToH", MS)
    assert metrics.device.idle_ns == 6 * MS - 5 * MS


def test_host_op_flops_by_slices_as_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flops are read by slices of events: the same float sums, in event order, with a
    slice of one, two or all events, mixed int and double values, NaN as 0."""
    from stepscope.stats import op_metrics, op_sums

    builder = XSpaceBuilder("tf")
    line = builder.plane("/host:CPU").line(1, "tf_Compute")
    values: list[float | int | None] = [1000, 0.1, None, 2**40 + 1, 0.2, float("nan"), 7, 0.3]
    for k, flops in enumerate(values):
        name = ("model/a:MatMul", "model/b:Relu")[k % 2]
        line.event(name, k * MS, MS // 2, {} if flops is None else {"flops": flops})
    line.event("model/b:Relu", 9 * MS, MS, {"flops": 5, "bytes": 1})
    profile = build(builder)
    found = []
    for size in (1, 2, 1 << 20):
        with monkeypatch.context() as m:
            m.setattr(op_sums, "_SLICE", size)
            ops = op_metrics.build_op_metrics(profile).host
        found.append(dict(zip(ops.names, ops.flops.tolist(), strict=True)))
    expected_a = 1000.0 + 0.2 + 7  # in event order
    expected_b = 0.1 + (2**40 + 1) + 0.3 + 5  # NaN counts as 0
    assert all(f == {"model/a": expected_a, "model/b": expected_b} for f in found), found


def test_host_only_op_metrics_classify_no_events() -> None:
    """Without device lines the device table is empty before any event type is computed: with
    two analysis threads the step database's classification is not done twice at once."""
    builder = XSpaceBuilder("tf")
    line = builder.plane("/host:CPU").line(1, "tf_Compute")
    line.event("model/a:MatMul", 0, 2 * MS)
    profile = build(builder)
    metrics = build_op_metrics(profile)
    assert len(metrics.host) == 1 and len(metrics.device) == 0
    assert not any(key[0] == "event_types" for key in profile._derived if isinstance(key, tuple))
