"""Memory profile: per allocator, summary at the peak, usage timeline, allocations live at peak.

Bytes are integers; times are milliseconds from the start of the host trace; fragmentation
is a percentage. ``--csv`` writes the live-at-peak table of every allocator.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.model import Profile, StringTable
from stepscope.stats.memory import (
    AllocatorProfile,
    build_memory_profiles,
    data_type_name,
    memory_events,
)
from stepscope.stats.steps.spans import step_spans
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

TABLE_COLUMNS = (
    "host",
    "memory_id",
    "op_name",
    "allocation_bytes",
    "requested_bytes",
    "occurrences",
    "region_type",
    "data_type",
    "shape",
)


@dataclass(frozen=True)
class HostMemory:
    host: str
    allocators: tuple[AllocatorProfile, ...]
    strings: StringTable  # the host profile's strings (ids in the snapshots)


def _summary(a: AllocatorProfile) -> dict[str, Any]:
    s = a.snapshots
    p = s.peak_index
    stack, heap, free = int(s.stack_bytes[p]), int(s.heap_bytes[p]), int(s.free_bytes[p])
    return {
        "allocation_count": a.allocation_count,
        "deallocation_count": a.deallocation_count,
        "memory_capacity_bytes": stack + heap + free,
        "peak_heap_usage_lifetime_bytes": a.peak_usage_lifetime_bytes,
        "peak_usage_bytes": stack + heap,
        "peak_time_ms": round(int(s.time_ns[p]) / 1e6, 6),
        "peak_step": a.peak_step,
        "stack_reserved_bytes": stack,
        "heap_allocated_bytes": heap,
        "free_memory_bytes": free,
        "fragmentation_pct": round(float(s.fragmentation[p]) * 100, 4),
    }


def _timeline(a: AllocatorProfile, strings: StringTable) -> dict[str, list[Any]]:
    """Columns (one entry per sampled snapshot): compact and easy to chart."""
    s = a.snapshots
    i = a.timeline
    return {
        "time_ms": np.round(s.time_ns[i] / 1e6, 6).tolist(),
        "in_use_bytes": s.in_use_bytes[i].tolist(),
        "stack_bytes": s.stack_bytes[i].tolist(),
        "heap_bytes": s.heap_bytes[i].tolist(),
        "free_bytes": s.free_bytes[i].tolist(),
        "fragmentation_pct": np.round(s.fragmentation[i] * 100, 4).tolist(),
        "activity": ["allocation" if x else "deallocation" for x in s.is_allocation[i].tolist()],
        "requested_bytes": s.requested_bytes[i].tolist(),
        "allocation_bytes": s.allocation_bytes[i].tolist(),
        "op_name": [strings[x] for x in s.op[i].tolist()],
        "step": s.step[i].tolist(),
        "region_type": [strings[x] for x in s.region_type[i].tolist()],
        "data_type": [data_type_name(x) for x in s.data_type[i].tolist()],
        "shape": [strings[x] for x in s.shape[i].tolist()],
    }


def _live(a: AllocatorProfile) -> list[dict[str, Any]]:
    return [
        {
            "op_name": r.op_name,
            "allocation_bytes": r.allocation_bytes,
            "requested_bytes": r.requested_bytes,
            "occurrences": r.occurrences,
            "region_type": r.region_type,
            "data_type": r.data_type,
            "shape": r.shape,
            "special": r.special,
        }
        for r in a.live_at_peak
    ]


@dataclass(frozen=True)
class MemoryProfile:
    hosts: tuple[HostMemory, ...]

    def memory_ids(self) -> list[dict[str, str]]:
        return [
            {"host": h.host, "memory_id": a.allocator} for h in self.hosts for a in h.allocators
        ]

    def to_json(self) -> dict[str, Any]:
        memories = []
        for h in self.hosts:
            for a in h.allocators:
                memories.append(
                    {
                        "host": h.host,
                        "memory_id": a.allocator,
                        "summary": _summary(a),
                        "timeline_points": len(a.timeline),
                        "snapshot_count": len(a.snapshots),
                        "timeline": _timeline(a, h.strings),
                        "live_at_peak": _live(a),
                    }
                )
        return {"memories": memories}

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=TABLE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for h in self.hosts:
            for a in h.allocators:
                for row in _live(a):
                    row.pop("special")
                    writer.writerow({"host": h.host, "memory_id": a.allocator, **row})
        return out.getvalue()


def host_memory(ctx: ToolContext, host: str) -> HostMemory:
    def build_one(profile: Profile) -> HostMemory:
        starts, ends = step_spans(profile)
        return HostMemory(
            host, tuple(build_memory_profiles(profile, starts, ends)), profile.strings
        )

    return ctx.intermediate(host, "memory_profile.hosts", build_one)


def build(ctx: ToolContext) -> MemoryProfile:
    return MemoryProfile(tuple(host_memory(ctx, host) for host in ctx.hosts))


def _has_memory_events(profile: Profile) -> bool:
    return len(memory_events(profile)) > 0


def available(ctx: ToolContext) -> bool:
    # Cheap: listing tools must not build the profile itself.
    return any(
        ctx.intermediate(h, "memory_profile.has_events", _has_memory_events) for h in ctx.hosts
    )


TOOL = ToolSpec(
    name="memory_profile",
    title="Memory profile",
    description="Allocator usage over time, the peak, and the allocations live at the peak.",
    build=build,
    formats=("json", "csv"),
    available=available,
    order=70,
)
