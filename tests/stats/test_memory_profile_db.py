"""Memory profile intermediate: golden against XProf on the TF fixtures, Kineto memory events,
and the algorithm's corner cases on synthetic traces."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from stepscope.stats.memory import (
    _sample_timeline,
    build_memory_profiles,
    data_type_name,
    fill_missing_steps,
)
from stepscope.stats.steps.spans import step_spans, step_spans_with_ids
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import FIXTURES, build, fixture_profile, tf_profile

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def _xprof(name: str) -> dict:
    path = FIXTURES / "tf" / name / "xprof_reference" / "memory_profile.json.gz"
    with gzip.open(path) as f:
        return json.load(f)


def _xprof_rows(ref: dict) -> list[tuple]:
    rows = []
    for active in ref["activeAllocations"]:
        index = int(active["snapshotIndex"])
        if index < 0:
            meta = ref["specialAllocations"][int(active["specialIndex"])]
        else:
            meta = ref["memoryProfileSnapshots"][index]["activityMetadata"]
        rows.append(
            (
                meta["tfOpName"],
                int(meta["allocationBytes"]),
                int(meta["requestedBytes"]),
                int(active["numOccurrences"]),
                meta["regionType"],
                meta["dataType"],
                meta["tensorShape"],
            )
        )
    return rows


@pytest.mark.parametrize("name", ["ctl", "keras_marked"])
def test_matches_xprof_memory_profile(name: str) -> None:
    profile = tf_profile(name)
    [mem] = build_memory_profiles(profile, *step_spans(profile))
    ref_all = _xprof(name)
    assert ref_all["memoryIds"] == [mem.allocator]
    ref = ref_all["memoryProfilePerAllocator"][mem.allocator]
    summary, peak = ref["profileSummary"], ref["profileSummary"]["peakStats"]
    s = mem.snapshots
    p = s.peak_index
    assert mem.peak_usage_lifetime_bytes == int(summary["peakBytesUsageLifetime"])
    assert int(s.in_use_bytes[p]) == int(peak["peakBytesInUse"])
    assert int(s.heap_bytes[p]) == int(peak["heapAllocatedBytes"])
    assert int(s.stack_bytes[p]) == int(peak["stackReservedBytes"])
    assert int(s.free_bytes[p]) == int(peak["freeMemoryBytes"])
    assert float(s.fragmentation[p]) == pytest.approx(peak["fragmentation"])
    assert int(s.time_ns[p]) * 1000 == int(summary["peakStatsTimePs"])
    capacity = int(s.stack_bytes[p] + s.heap_bytes[p] + s.free_bytes[p])
    assert capacity == int(summary["memoryCapacity"])
    # Live-at-peak table: same rows, same order, same occurrence counts.
    ours = [
        (
            r.op_name,
            r.allocation_bytes,
            r.requested_bytes,
            r.occurrences,
            r.region_type,
            r.data_type,
            r.shape,
        )
        for r in mem.live_at_peak
    ]
    assert ours == _xprof_rows(ref)
    # Timeline: every snapshot (fewer than 1000), same times, usage, activity and steps.
    timeline = ref["sampledTimelineSnapshots"]
    assert len(mem.timeline) == len(timeline) == len(s)
    assert [int(t) * 1000 for t in s.time_ns[mem.timeline]] == [
        int(x["timeOffsetPs"]) for x in timeline
    ]
    assert s.heap_bytes[mem.timeline].tolist() == [
        int(x["aggregationStats"]["heapAllocatedBytes"]) for x in timeline
    ]
    activities = ["ALLOCATION" if a else "DEALLOCATION" for a in s.is_allocation[mem.timeline]]
    assert activities == [x["activityMetadata"]["memoryActivity"] for x in timeline]
    assert mem.allocation_count == activities.count("ALLOCATION")
    assert mem.deallocation_count == activities.count("DEALLOCATION")
    assert s.step[mem.timeline].tolist() == [int(x["activityMetadata"]["stepId"]) for x in timeline]
    ops = [profile.strings[int(i)] for i in s.op[mem.timeline]]
    assert ops == [x["activityMetadata"]["tfOpName"] for x in timeline]
    assert mem.peak_step == int(ref["specialAllocations"][0]["stepId"])


@pytest.mark.integration  # over a second: out of the one-minute tier (decision 448)
def test_pytorch_memory_events() -> None:
    profile = fixture_profile("kineto/v100_training_with_memory.json.gz")
    mems = {m.allocator: m for m in build_memory_profiles(profile, *step_spans(profile))}
    assert set(mems) == {"GPU_1_bfc", "cpu"}
    # Expected straight from the trace's [memory] events.
    with gzip.open(FIXTURES / "kineto/v100_training_with_memory.json.gz") as f:
        doc = json.load(f)
    gpu = [
        e["args"]
        for e in doc["traceEvents"]
        if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1
    ]
    gpu_mem = mems["GPU_1_bfc"]
    assert gpu_mem.allocation_count == sum(a["Bytes"] > 0 for a in gpu)
    assert gpu_mem.deallocation_count == sum(a["Bytes"] < 0 for a in gpu)
    s = gpu_mem.snapshots
    assert int(s.in_use_bytes[s.peak_index]) == max(
        max(a["Total Reserved"], a["Total Allocated"]) for a in gpu
    )
    assert gpu_mem.peak_usage_lifetime_bytes >= max(a["Total Allocated"] for a in gpu)
    # Downsampled to 1000 points, the peak kept.
    assert len(gpu_mem.timeline) == 1000 < len(s)
    assert s.in_use_bytes[gpu_mem.timeline].max() == s.in_use_bytes.max()
    assert gpu_mem.live_at_peak and all(r.allocation_bytes > 0 for r in gpu_mem.live_at_peak)
    assert any(r.op_name.startswith("aten::") for r in gpu_mem.live_at_peak)


def test_jax_xspace_memory_events() -> None:
    mems = build_memory_profiles(fixture_profile("xspace/gpu_jax_fused_attention.xplane.pb"))
    assert mems and sum(m.allocation_count + m.deallocation_count for m in mems) == 59


# 100,003: boxes of 100 and 101 snapshots, 997 narrow ones (1,000,003 made the same layout at
# 1000 and 1001, 0.46 s of CPU for the sort; decision 715)
@pytest.mark.parametrize("n", [999, 1000, 1001, 2500, 100_003])
def test_timeline_sampling_keeps_box_maxima(n: int) -> None:
    rng = np.random.default_rng(n)
    usage = rng.integers(0, 1 << 40, n)
    picked = _sample_timeline(usage, 1000)
    assert len(picked) == min(n, 1000)
    assert np.all(np.diff(picked) > 0)
    assert usage[picked].max() == usage.max()
    if n > 1000:  # brute force the box filter for the first boxes
        width = n // 1000
        narrow = 1000 * (width + 1) - n
        starts = [i * width for i in range(narrow)] + [
            narrow * width + i * (width + 1) for i in range(1000 - narrow)
        ]
        ends = [*starts[1:], n]
        for box in (0, narrow - 1, narrow, 999):
            if 0 <= box < 1000:
                lo, hi = starts[box], ends[box]
                assert picked[box] == lo + int(np.argmax(usage[lo:hi]))


def test_fill_missing_steps() -> None:
    steps = np.array([-1, -1, 3, 3, -1, 4, -1])
    assert fill_missing_steps(steps).tolist() == [0, 0, 3, 3, 4, 4, 5]


def _alloc(
    line, name: str, t: int, addr: int, size: int, heap: int, stack: int = 0, **extra
) -> None:
    stats = {
        "allocator_name": extra.pop("allocator", "GPU_0_bfc"),
        "bytes_reserved": stack,
        "bytes_allocated": heap,
        "bytes_available": 1000 - heap - stack,
        "peak_bytes_in_use": extra.pop("peak", heap),
        "requested_bytes": size,
        "allocation_bytes": size,
        "addr": addr,
        "fragmentation": 0.5,
        **extra,
    }
    line.event(name, t, 0, stats)


def test_synthetic_peak_live_table_and_deallocation_metadata() -> None:
    b = XSpaceBuilder("h")
    host = b.plane("/host:CPU")
    steps = host.line(1, "python")
    steps.event("train", 0, 100, {"step_num": 1, "_r": 1})
    steps.event("train", 100, 100, {"step_num": 2, "_r": 1})
    mem = host.line(2, "compute")
    _alloc(mem, "MemoryAllocation", 10, 1, 100, 100, tf_op="a/Op1", shape="[5]", data_type=1)
    _alloc(mem, "MemoryDeallocation", 20, 1, 100, 0)
    _alloc(mem, "MemoryAllocation", 110, 2, 50, 50, stack=30, tf_op="b/Op2", region_type="output")
    _alloc(mem, "MemoryAllocation", 120, 3, 50, 100, stack=30, tf_op="b/Op2", region_type="output")
    _alloc(mem, "MemoryAllocation", 130, 4, 70, 250, stack=30, tf_op="c/Big")  # 80 unexplained
    _alloc(mem, "MemoryDeallocation", 150, 4, 70, 180, stack=30)
    _alloc(mem, "MemoryAllocation", 160, 9, 8, 8, allocator="cpu")
    profile = build(b)
    gpu, cpu = sorted(
        build_memory_profiles(profile, *step_spans(profile)),
        key=lambda m: m.allocator != "GPU_0_bfc",
    )
    assert (gpu.allocator, cpu.allocator) == ("GPU_0_bfc", "cpu")
    s = gpu.snapshots
    assert (gpu.allocation_count, gpu.deallocation_count) == (4, 2)
    assert int(s.time_ns[s.peak_index]) == 130 and int(s.in_use_bytes[s.peak_index]) == 280
    assert gpu.peak_step == 1
    # Deallocations inherit the allocation's op and shape.
    ops = [profile.strings[int(i)] for i in s.op]
    assert ops[1] == "a/Op1" and profile.strings[int(s.shape[1])] == "[5]" and ops[5] == "c/Big"
    assert data_type_name(int(s.data_type[1])) == "float"
    table = [(r.op_name, r.allocation_bytes, r.occurrences, r.special) for r in gpu.live_at_peak]
    assert table == [
        ("unused preallocated device memory", 80, 1, True),
        ("c/Big", 70, 1, False),
        ("b/Op2", 50, 2, False),
        ("stack", 30, 1, True),
    ]
    assert cpu.allocation_count == 1 and cpu.deallocation_count == 0


def test_many_events_downsampled_without_losing_the_peak() -> None:
    b = XSpaceBuilder("h")
    line = b.plane("/host:CPU").line(1, "alloc")
    rng = np.random.default_rng(7)
    heaps = rng.integers(0, 500, 5_000)  # 10 snapshots a point
    heaps[3_457] = 999
    for i, heap in enumerate(heaps.tolist()):
        _alloc(line, "MemoryAllocation" if i % 2 == 0 else "MemoryDeallocation", i * 10, i, 1, heap)
    [mem] = build_memory_profiles(build(b), max_points=500)
    s = mem.snapshots
    assert len(mem.timeline) == 500
    assert int(s.in_use_bytes[mem.timeline].max()) == 999
    assert int(s.time_ns[s.peak_index]) == 34_570


def test_remote_capture_step_ids_are_xprof_group_ids() -> None:
    # A remote TensorFlow capture has a FunctionRun root before its first step: XProf's group
    # ids (its memory step ids) start at 1 there, one more than the marker positions.
    convert = pytest.importorskip("xprof.convert.raw_to_tool_data")
    path = next((FIXTURES / "tf" / "remote").rglob("*.xplane.pb"))
    data, _ = convert.xspace_to_tool_data(
        [str(path)], "memory_profile", {"use_saved_result": False}
    )
    ref = json.loads(data)["memoryProfilePerAllocator"]
    profile = tf_profile("remote")
    starts, ends, ids = step_spans_with_ids(profile)
    assert ids[0] == 1
    for mem in build_memory_profiles(profile, starts, ends, step_ids=ids):
        xprof = ref[mem.allocator]
        assert mem.peak_step == int(xprof["specialAllocations"][0]["stepId"])
        snapshots = xprof["memoryProfileSnapshots"]
        assert mem.peak_step == int(snapshots[0]["activityMetadata"]["stepId"])


def test_times_outside_every_step_and_reference_types() -> None:
    from stepscope.stats.memory import step_of_times

    starts, ends = np.array([10, 30]), np.array([20, 40])
    times = np.array([5, 10, 20, 25, 35, 45])
    assert step_of_times(times, starts, ends).tolist() == [-1, 0, 0, -1, 1, -1]
    assert step_of_times(times, starts[:0], ends[:0]).tolist() == [-1] * 6
    assert data_type_name(1) == "float" and data_type_name(101) == "float_ref"
    assert data_type_name(100) == "unknown(100)" and data_type_name(-1) == "unknown(-1)"
