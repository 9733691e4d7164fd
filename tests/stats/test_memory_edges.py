"""The memory profile (`stepscope.stats.memory`) at its edges, on traces built in code whose
answers are worked out by hand: deallocations of memory allocated before the trace, the
live-at-peak table's order, merging and stand-in rows, the peak with a stack, snapshots at the
same instant, steps given by id, string id 0, a host plane that is not the first."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.memory import (
    build_memory_profiles,
    data_type_name,
    fill_missing_steps,
)
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import build

ALLOC, FREE = "MemoryAllocation", "MemoryDeallocation"


def _event(line, name: str, t: int, addr: int, size: int, heap: int, stack: int = 0, **extra):
    stats = {
        "allocator_name": "GPU_0_bfc",
        "bytes_reserved": stack,
        "bytes_allocated": heap,
        "requested_bytes": extra.pop("requested", size),
        "allocation_bytes": size,
        "addr": addr,
        **extra,
    }
    line.event(name, t, 0, stats)


def _host() -> tuple[XSpaceBuilder, object]:
    b = XSpaceBuilder("h")
    return b, b.plane("/host:CPU").line(1, "alloc")


def _table(mem) -> list[tuple]:
    return [
        (
            r.op_name,
            r.allocation_bytes,
            r.requested_bytes,
            r.occurrences,
            r.region_type,
            r.data_type,
        )
        for r in mem.live_at_peak
    ]


def test_a_deallocation_whose_allocation_is_not_in_the_trace_inherits_nothing() -> None:
    """Address 0 is freed, its allocation made before the capture; addresses 1 and 2 are
    allocated by ops a and b. The free keeps no op and no shape."""
    b, line = _host()
    _event(line, FREE, 10, 0, 8, 0)
    _event(line, ALLOC, 20, 1, 8, 8, tf_op="a", shape="[1]")
    _event(line, ALLOC, 30, 2, 8, 16, tf_op="b", shape="[2]")
    profile = build(b)
    [mem] = build_memory_profiles(profile)
    s = mem.snapshots
    assert [profile.strings[int(i)] for i in s.op] == ["", "a", "b"]
    assert [profile.strings[int(i)] for i in s.shape] == ["", "[1]", "[2]"]


def test_frees_of_earlier_allocations_in_the_peak_step_leave_the_rest_unexplained() -> None:
    """Step 0 allocates 10, 20 and 500 bytes (heap 530); step 1 frees the 10 and the 20,
    then allocates 600 (heap 1100, the peak). Of the peak's heap, the step's own allocation
    explains 600; the other 500 (allocated before the step, still held) is the
    "unused preallocated" row."""
    b, line = _host()
    _event(line, ALLOC, 10, 1, 10, 10)
    _event(line, ALLOC, 20, 2, 20, 30)
    _event(line, ALLOC, 30, 3, 500, 530)
    _event(line, FREE, 110, 1, 10, 520)
    _event(line, FREE, 120, 2, 20, 500)
    _event(line, ALLOC, 130, 4, 600, 1100, tf_op="big")
    [mem] = build_memory_profiles(build(b), np.array([0, 100]), np.array([99, 199]))
    assert mem.peak_step == 1
    assert _table(mem) == [
        ("big", 600, 600, 1, "", "INVALID"),
        ("unused preallocated device memory", 500, 500, 1, "persist/dynamic", "INVALID"),
    ]


def test_live_rows_sort_by_size_then_requested_and_keep_data_types_apart() -> None:
    """At the peak: op a allocates 64 bytes twice (as float, then as int32), op b 64 bytes
    of which it asked 32 and op c 64 of 48; the stack holds 1 byte. Rows: largest first,
    then the most requested; a's two tensors differ in data type, so two rows."""
    b, line = _host()
    _event(line, ALLOC, 10, 1, 64, 64, 1, tf_op="b", requested=32)
    _event(line, ALLOC, 20, 2, 64, 128, 1, tf_op="a", data_type=1)
    _event(line, ALLOC, 30, 3, 64, 192, 1, tf_op="a", data_type=3)
    _event(line, ALLOC, 40, 4, 64, 256, 1, tf_op="c", requested=48)
    [mem] = build_memory_profiles(build(b))
    assert _table(mem) == [
        ("a", 64, 64, 1, "", "float"),
        ("a", 64, 64, 1, "", "int32"),
        ("c", 64, 48, 1, "", "INVALID"),
        ("b", 64, 32, 1, "", "INVALID"),
        ("stack", 1, 1, 1, "stack", "INVALID"),
    ]


def test_rows_that_read_the_same_merge_a_stand_in_included() -> None:
    """A live tensor whose every column reads as the stack's row (op "stack", region
    "stack", 30 bytes, no data type, shape "unknown") is counted with it: one row, two
    occurrences, as identical rows are."""
    b, line = _host()
    _event(line, ALLOC, 10, 1, 30, 30, 30, tf_op="stack", region_type="stack", shape="unknown")
    [mem] = build_memory_profiles(build(b))
    assert _table(mem) == [("stack", 30, 30, 2, "stack", "INVALID")]


def test_one_allocation_is_a_profile() -> None:
    b, line = _host()
    _event(line, ALLOC, 10, 1, 8, 8)
    [mem] = build_memory_profiles(build(b))
    assert (mem.allocator, mem.snapshots.allocator, mem.allocation_count) == (
        "GPU_0_bfc",
        "GPU_0_bfc",
        1,
    )


def test_the_peak_counts_the_stack_and_its_step_is_the_peaks() -> None:
    """Heap 100 + stack 50 at 10 ns (step 0) is the peak, though the heap reaches 120 later;
    at 110 ns (step 1) the heap is 100 again with no stack: not the peak's step."""
    b, line = _host()
    _event(line, ALLOC, 10, 1, 100, 100, 50)
    _event(line, ALLOC, 110, 2, 0, 100, 0)
    _event(line, ALLOC, 120, 3, 20, 120, 0)
    [mem] = build_memory_profiles(build(b), np.array([0, 100]), np.array([99, 199]))
    assert mem.snapshots.peak_index == 0
    assert mem.peak_step == 0


def test_snapshots_at_the_same_instant_keep_the_trace_order() -> None:
    """Two threads allocate at the same ten instants: snapshots go by time, and at one
    instant in trace order (the first thread's first)."""
    b = XSpaceBuilder("h")
    host = b.plane("/host:CPU")
    for k, line in enumerate((host.line(1, "t1"), host.line(2, "t2"))):
        for i in range(10):
            _event(line, ALLOC, 1000 + 10 * i, 100 * k + i, 1, 100 * k + i)
    [mem] = build_memory_profiles(build(b))
    assert mem.snapshots.heap_bytes.tolist() == [h for i in range(10) for h in (i, 100 + i)]


def test_a_snapshot_outside_every_step_takes_the_next_step_id() -> None:
    """Steps with ids 7 and 8 at [0, 99] and [200, 299]: a snapshot at 150 ns is in no step,
    so it is counted in the one after the previous snapshot's (7 + 1)."""
    b, line = _host()
    for t in (10, 150, 210):
        _event(line, ALLOC, t, t, 1, t)
    starts, ends = np.array([0, 200]), np.array([99, 299])
    [mem] = build_memory_profiles(build(b), starts, ends, step_ids=np.array([7, 8]))
    assert mem.snapshots.step.tolist() == [7, 8, 8]


def test_step_starts_without_ends_are_refused() -> None:
    b, line = _host()
    _event(line, ALLOC, 10, 1, 1, 1)
    with pytest.raises(
        ValueError, match=r"^build_memory_profiles: give the step starts and ends together$"
    ):
        build_memory_profiles(build(b), np.array([0]))


def test_steps_from_step_zero() -> None:
    """Step 0 is a known step; a snapshot after the first known one follows it."""
    assert fill_missing_steps(np.array([0, -1])).tolist() == [0, 1]
    assert fill_missing_steps(np.array([5, -1, -1])).tolist() == [5, 6, 6]


def test_data_types_past_the_table_are_unknown() -> None:
    """TensorFlow's DataType enum ends at uint4 (30); reference types are 100 more."""
    assert data_type_name(30) == "uint4" and data_type_name(31) == "unknown(31)"
    assert data_type_name(130) == "uint4_ref" and data_type_name(131) == "unknown(131)"


def test_a_profile_without_a_host_plane_has_no_memory_profile() -> None:
    b = XSpaceBuilder("h")
    b.plane("/device:GPU:0").line(1, "stream").event(ALLOC, 10, 0, {"bytes_allocated": 1})
    assert build_memory_profiles(build(b)) == []


def test_the_host_plane_after_a_device_plane() -> None:
    """The allocator events are found among the host plane's own events, wherever the plane
    sits in the profile."""
    b = XSpaceBuilder("h")
    stream = b.plane("/device:GPU:0").line(1, "stream")
    for t in range(5):
        stream.event("kernel", t * 10, 5)
    line = b.plane("/host:CPU").line(1, "alloc")
    _event(line, ALLOC, 10, 1, 8, 8)
    _event(line, FREE, 20, 1, 8, 0)
    [mem] = build_memory_profiles(build(b))
    assert (mem.allocation_count, mem.deallocation_count) == (1, 1)
    assert mem.snapshots.heap_bytes.tolist() == [8, 0]


def test_string_id_zero_is_a_string_like_any_other() -> None:
    """The profile's first string (id 0) may be a shape, or the event name itself (here also
    the op's name)."""
    b, line = _host()
    line.event(ALLOC, 10, 0, {"shape": "[2]", "bytes_allocated": 4})
    profile = build(b)
    assert profile.strings.id_of("[2]") == 0
    [mem] = build_memory_profiles(profile)
    assert profile.strings[int(mem.snapshots.shape[0])] == "[2]"

    b = XSpaceBuilder("h")
    b.plane("/device:GPU:0").line(1, "stream").event("k", 0, 5)
    b.plane("/host:CPU").line(1, "alloc").event(ALLOC, 10, 0, {"tf_op": ALLOC})
    profile = build(b)
    assert profile.strings.id_of(ALLOC) == 0
    [mem] = build_memory_profiles(profile)
    assert mem.allocation_count == 1
    assert profile.strings[int(mem.snapshots.op[0])] == ALLOC
