"""The trace viewer's memory counters read their stats at the memory events only: the same
points and values as reading each stat's column over every event (the oracle here)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile, profile_from_xspace
from stepscope.stats.trace_index.counters import build_counters
from stepscope.xspace.builder import XSpaceBuilder

BASE = 1_000_000_000


def _dense_memory(profile: Profile) -> dict[str, tuple[list[int], list[float]]]:
    ids = [profile.strings.id_of(n) for n in ("MemoryAllocation", "MemoryDeallocation")]
    events = np.flatnonzero(np.isin(profile.name, [i for i in ids if i >= 0]))
    allocated = profile.stat("bytes_allocated")
    events = events[allocated.present[events]]
    value = allocated.as_float()[events]
    value = value + np.nan_to_num(profile.stat("bytes_reserved").as_float()[events])
    allocator = profile.stat("allocator_name").string_ids()[events]
    out = {}
    for alloc_id in sorted(set(allocator.tolist())):
        mine = allocator == alloc_id
        order = np.argsort(profile.start_ns[events[mine]], kind="stable")
        label = profile.strings[alloc_id] if alloc_id >= 0 else "memory"
        out[f"Memory in use ({label})"] = (
            profile.start_ns[events[mine]][order].tolist(),
            value[mine][order].tolist(),
        )
    return out


def test_memory_counters_equal_the_dense_columns() -> None:
    """Two allocators on two threads out of time order, an allocator named by the events'
    metadata and one overridden on an event, events without `bytes_allocated` (no point),
    integer and float byte counts, `bytes_reserved` on some, a string where a count should be
    (NaN), and other events carrying the same stats (not memory events)."""
    rng = np.random.default_rng(3)
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    lines = [plane.line(1, "a"), plane.line(2, "b")]
    alloc = plane.event_metadata_id("MemoryAllocation", stats={"allocator_name": "cpu_meta"})
    for _ in range(200):
        stats: dict[str, object] = {}
        roll = rng.random()
        if roll < 0.8:
            stats["bytes_allocated"] = int(rng.integers(0, 1 << 40))
        elif roll < 0.85:
            stats["bytes_allocated"] = float(rng.integers(0, 1000)) + 0.5
        elif roll < 0.9:
            stats["bytes_allocated"] = "many"
        if rng.random() < 0.3:
            stats["bytes_reserved"] = int(rng.integers(0, 1 << 20))
        if rng.random() < 0.6:
            stats["allocator_name"] = ["GPU_0_bfc", "mklcpu"][int(rng.integers(0, 2))]
        line = lines[int(rng.integers(0, 2))]
        start = BASE + int(rng.integers(0, 10_000))
        if rng.random() < 0.3:
            line.add_event(alloc, start, 0, stats)  # type: ignore[arg-type]
        else:
            name = ["MemoryAllocation", "MemoryDeallocation", "op"][int(rng.integers(0, 3))]
            line.event(name, start, 0, stats)  # type: ignore[arg-type]
    for line in lines:
        line.sort_events()
    profile = profile_from_xspace(builder.build())
    want = _dense_memory(profile)
    got = [(c.name, c.a.tolist(), c.b.tolist()) for c in build_counters(profile)]
    got = [g for g in got if g[0].startswith("Memory")]
    assert [g[0] for g in got] == list(want) and len(want) == 4  # in allocator id order
    for name, times, values in got:
        assert times == want[name][0], name
        np.testing.assert_array_equal(values, want[name][1], err_msg=name)
    assert any(np.isnan(v).any() for _, _, v in got)  # the string count
