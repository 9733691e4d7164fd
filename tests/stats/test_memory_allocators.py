"""The memory profile's allocators and snapshot columns on traces built in code: which
allocator an event belongs to when it has no name, which stat each column reads, a shape
from TensorFlow's ``tensor_shapes``, and steps given by their ids."""

from __future__ import annotations

import numpy as np

from stepscope.stats.memory import build_memory_profiles
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import build


def _event(line, t: int, heap: int, **stats: int | str) -> None:
    line.event("MemoryAllocation", t, 0, {"bytes_allocated": heap, "requested_bytes": 8, **stats})


def test_an_allocator_without_a_name_is_its_index_then_its_device() -> None:
    """Named, else the allocator's index on the host (0 included), else the device ordinal
    (0 included), else no name."""
    b = XSpaceBuilder("h")
    line = b.plane("/host:CPU").line(1, "alloc")
    _event(line, 10, 1, allocator_name="GPU_0_bfc", index_on_host=5, device_ordinal=6)
    _event(line, 20, 2, index_on_host=3, device_ordinal=7)
    _event(line, 30, 3, index_on_host=0, device_ordinal=7)
    _event(line, 40, 4, device_ordinal=1)
    _event(line, 50, 5, device_ordinal=0, index_on_host=-1)
    _event(line, 60, 6)
    mems = build_memory_profiles(build(b))
    by_name = {m.allocator: int(m.snapshots.heap_bytes[0]) for m in mems}
    assert by_name == {"GPU_0_bfc": 1, "3": 2, "0": 3, "1": 4, "": 6}
    zero = next(m for m in mems if m.allocator == "0")
    assert zero.snapshots.heap_bytes.tolist() == [3, 5]  # index 0 and device 0 are one name


def test_snapshot_columns_read_their_stats() -> None:
    """bytes_reserved is the stack, peak_bytes_in_use the allocator's own peak; the shape
    comes from ``shape``, else TensorFlow's ``tensor_shapes``; a snapshot's step is the id
    of the step holding it."""
    b = XSpaceBuilder("h")
    host = b.plane("/host:CPU")
    line = host.line(1, "alloc")
    _event(line, 10, 100, bytes_reserved=30, peak_bytes_in_use=400, shape="[2]")
    _event(line, 110, 200, bytes_reserved=40, peak_bytes_in_use=500, tensor_shapes="[3,4]")
    _event(line, 120, 150, bytes_reserved=50, peak_bytes_in_use=600)
    profile = build(b)
    starts, ends = np.array([0, 100]), np.array([99, 199])
    [mem] = build_memory_profiles(profile, starts, ends, step_ids=np.array([7, 8]))
    s = mem.snapshots
    assert s.stack_bytes.tolist() == [30, 40, 50]
    assert s.peak_in_use_bytes.tolist() == [400, 500, 600]
    assert [profile.strings[int(i)] for i in s.shape] == ["[2]", "[3,4]", ""]
    assert s.step.tolist() == [7, 8, 8]
