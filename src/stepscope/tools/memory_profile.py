"""Memory profile: per allocator, summary at the peak, usage timeline, allocations live at peak.

Bytes are integers; times are milliseconds from the start of the host trace; fragmentation
is a percentage. ``--csv`` writes the live-at-peak table of every allocator.
"""

from __future__ import annotations

import re
from typing import ClassVar

import numpy as np

from stepscope.model import Profile, StringTable
from stepscope.records import record
from stepscope.stats.gpu.device import framework_of
from stepscope.stats.memory import (
    AllocatorProfile,
    build_memory_profiles,
    data_type_name,
    memory_events,
)
from stepscope.stats.steps.spans import step_spans_with_ids
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
HOST_MEMORY: Key[HostMemory] = Key("memory_profile.hosts")
HAS_MEMORY_EVENTS: Key[bool] = Key("memory_profile.has_events", kept=True)
FRAMEWORK: Key[str] = Key("memory_profile.framework", kept=True)


@record
class HostMemory:
    host: str
    allocators: tuple[AllocatorProfile, ...]
    strings: StringTable  # the host profile's strings (ids in the snapshots)
    framework: str = "unknown"  # "pytorch": reported in the caching allocator's terms


@record
class MemorySummary:
    allocation_count: int = out("allocation events")
    deallocation_count: int = out("deallocation events")
    memory_capacity_bytes: int = out("stack + heap + free at the peak", "bytes")
    peak_heap_usage_lifetime_bytes: int = out(
        "the allocator's lifetime peak (`peak_bytes_in_use`, or the largest heap seen)", "bytes"
    )
    peak_usage_bytes: int = out("stack + heap at the peak of the profile", "bytes")
    peak_time_ms: float = out("time of the peak from the start of the host trace", "ms", 6)
    peak_step: int = out("step index of the peak (as above)")
    stack_reserved_bytes: int = out("stack reserved at the peak", "bytes")
    heap_allocated_bytes: int = out("heap allocated at the peak", "bytes")
    free_memory_bytes: int = out("free memory at the peak", "bytes")
    fragmentation_pct: float = out("at the peak: 1 - largest free chunk / total free", "%", 4)


@record
class Timeline:
    """Columns, one entry per sampled snapshot: compact and easy to chart."""

    time_ms: list[float] = out("time from the start of the host trace", "ms", 6)
    in_use_bytes: list[int] = out("stack + heap", "bytes")
    stack_bytes: list[int] = out("stack reserved", "bytes")
    heap_bytes: list[int] = out("heap allocated", "bytes")
    free_bytes: list[int] = out("free memory", "bytes")
    fragmentation_pct: list[float] = out("1 - largest free chunk / total free", "%", 4)
    activity: list[str] = out("`allocation` or `deallocation`")
    requested_bytes: list[int] = out("bytes the op asked for", "bytes")
    allocation_bytes: list[int] = out("bytes the allocator gave", "bytes")
    op_name: list[str] = out("the op allocating or freeing")
    step: list[int] = out("step index")
    region_type: list[str] = out("region type (`output`, `temp`...)")
    data_type: list[str] = out("TensorFlow `DataType` name")
    shape: list[str] = out("tensor shape")


@record
class LiveAllocation:
    op_name: str = out("the op that allocated it")
    allocation_bytes: int = out("bytes the allocator gave", "bytes")
    requested_bytes: int = out("bytes the op asked for", "bytes")
    occurrences: int = out("allocations merged in this row")
    region_type: str = out("region type")
    data_type: str = out("TensorFlow `DataType` name")
    shape: str = out("tensor shape")
    special: bool = out("one of the two stand-in rows (stack, free memory)")


@record
class TorchSummary:
    """PyTorch's caching allocator: allocated (live tensors) and reserved (held from the
    device, its cache of free blocks included); nothing its trace does not record."""

    allocation_count: int = out("allocation events")
    free_count: int = out("free events")
    device_memory_bytes: int | None = out("the device's memory; null for the CPU", "bytes")
    peak_allocated_bytes: int = out("largest allocated", "bytes")
    peak_allocated_time_ms: float = out("when", "ms", 6)
    peak_reserved_bytes: int = out("largest reserved", "bytes")
    peak_reserved_time_ms: float = out("when", "ms", 6)
    peak_step: int = out("step index of the peak of reserved memory")
    allocated_at_peak_reserved_bytes: int = out("allocated at that moment", "bytes")


@record
class TorchTimeline:
    time_ms: list[float] = out("time from the start of the host trace", "ms", 6)
    allocated_bytes: list[int] = out("`Total Allocated`", "bytes")
    reserved_bytes: list[int] = out("`Total Reserved`", "bytes")
    activity: list[str] = out("`allocation` or `free`")
    bytes: list[int] = out("size of the block", "bytes")
    op_name: list[str] = out("the op allocating or freeing")
    step: list[int] = out("step index")


@record
class TorchLiveAllocation:
    op_name: str = out("the op that allocated it, or a stand-in row")
    allocation_bytes: int = out("bytes", "bytes")
    occurrences: int = out("allocations merged in this row")
    special: bool = out("a stand-in row: the allocator's cache, or memory allocated earlier")


@record
class TableRow:
    host: str = out("the host")
    memory_id: str = out("the allocator")
    op_name: str = out("the op that allocated it")
    allocation_bytes: int = out("bytes the allocator gave", "bytes")
    requested_bytes: int | None = out("bytes the op asked for (empty for PyTorch)", "bytes")
    occurrences: int = out("allocations merged in this row")
    region_type: str | None = out("region type (empty for PyTorch)")
    data_type: str | None = out("TensorFlow `DataType` name (empty for PyTorch)")
    shape: str | None = out("tensor shape (empty for PyTorch)")


@record
class Memory:
    host: str = out("the host")
    memory_id: str = out("the allocator (memory id)")
    terms: str = out("`tensorflow` (fields below) or `pytorch` (see PyTorch profiles)")
    summary: MemorySummary | TorchSummary = out("the allocator at its peak")
    timeline_points: int = out("points in `timeline` (at most 1000)")
    snapshot_count: int = out("allocator events of this memory")
    timeline: Timeline | TorchTimeline = out("usage over time")
    live_at_peak: tuple[LiveAllocation | TorchLiveAllocation, ...] = out(
        "allocations live at the peak"
    )


@record
class HostPeak:
    host: str = out("the host")
    memory_id: str = out("the allocator")
    terms: str = out("`tensorflow` or `pytorch`: what `peak_bytes` measures")
    peak_bytes: int = out(
        "the allocator's peak: stack + heap (TensorFlow), reserved (PyTorch)", "bytes"
    )
    peak_step: int = out("step index of the peak")
    peak_time_ms: float = out("time of the peak from the start of the host trace", "ms", 6)


@record
class PeakAcrossHosts:
    """The highest peak among the hosts' allocators of one kind (``GPU_*_bfc``: every GPU's)."""

    allocator_kind: str = out("the allocator name with device numbers as `*`")
    terms: str = out("`tensorflow` or `pytorch`")
    host: str = out("the host of the highest peak")
    memory_id: str = out("its allocator")
    peak_bytes: int = out("that peak", "bytes")
    peak_step: int = out("step index of that peak")
    peak_time_ms: float = out("time of that peak from the start of its host trace", "ms", 6)
    hosts: int = out("hosts with an allocator of this kind")
    median_peak_bytes: int = out("median of those hosts' highest peaks", "bytes")


@record
class MemoryProfile:
    CSV_ROWS: ClassVar[str] = "table"

    memories: tuple[Memory, ...] = out("one per (host, memory id), sorted by host then id")
    host_peaks: tuple[HostPeak, ...] = out("each (host, memory id)'s peak, in `memories` order")
    peaks_across_hosts: tuple[PeakAcrossHosts, ...] = out(
        "per allocator kind, the host with the highest peak (the peak across hosts)"
    )

    @property
    def table(self) -> tuple[TableRow, ...]:
        """The CSV: the live-at-peak rows of every allocator (the stand-in rows included)."""
        return tuple(
            TableRow(
                m.host,
                m.memory_id,
                r.op_name,
                r.allocation_bytes,
                r.requested_bytes,
                r.occurrences,
                r.region_type,
                r.data_type,
                r.shape,
            )
            if isinstance(r, LiveAllocation)
            else TableRow(
                m.host,
                m.memory_id,
                r.op_name,
                r.allocation_bytes,
                None,
                r.occurrences,
                None,
                None,
                None,
            )
            for m in self.memories
            for r in m.live_at_peak
        )


def _summary(a: AllocatorProfile) -> MemorySummary:
    s = a.snapshots
    p = s.peak_index
    stack, heap, free = int(s.stack_bytes[p]), int(s.heap_bytes[p]), int(s.free_bytes[p])
    return MemorySummary(
        allocation_count=a.allocation_count,
        deallocation_count=a.deallocation_count,
        memory_capacity_bytes=stack + heap + free,
        peak_heap_usage_lifetime_bytes=a.peak_usage_lifetime_bytes,
        peak_usage_bytes=stack + heap,
        peak_time_ms=round(int(s.time_ns[p]) / 1e6, 6),
        peak_step=a.peak_step,
        stack_reserved_bytes=stack,
        heap_allocated_bytes=heap,
        free_memory_bytes=free,
        fragmentation_pct=round(float(s.fragmentation[p]) * 100, 4),
    )


def _timeline(a: AllocatorProfile, strings: StringTable) -> Timeline:
    s = a.snapshots
    i = a.timeline
    return Timeline(
        time_ms=np.round(s.time_ns[i] / 1e6, 6).tolist(),
        in_use_bytes=s.in_use_bytes[i].tolist(),
        stack_bytes=s.stack_bytes[i].tolist(),
        heap_bytes=s.heap_bytes[i].tolist(),
        free_bytes=s.free_bytes[i].tolist(),
        fragmentation_pct=np.round(s.fragmentation[i] * 100, 4).tolist(),
        activity=["allocation" if x else "deallocation" for x in s.is_allocation[i].tolist()],
        requested_bytes=s.requested_bytes[i].tolist(),
        allocation_bytes=s.allocation_bytes[i].tolist(),
        op_name=[strings[x] for x in s.op[i].tolist()],
        step=s.step[i].tolist(),
        region_type=[strings[x] for x in s.region_type[i].tolist()],
        data_type=[data_type_name(x) for x in s.data_type[i].tolist()],
        shape=[strings[x] for x in s.shape[i].tolist()],
    )


def _live(a: AllocatorProfile) -> tuple[LiveAllocation, ...]:
    return tuple(
        LiveAllocation(
            r.op_name,
            r.allocation_bytes,
            r.requested_bytes,
            r.occurrences,
            r.region_type,
            r.data_type,
            r.shape,
            r.special,
        )
        for r in a.live_at_peak
    )


# The stand-in rows in PyTorch's terms: memory in use with no allocation event in the trace
# (tensors allocated before profiling began), and the allocator's cache.
_TORCH_SPECIAL = {
    "unused preallocated device memory": "allocated before the trace began",
    "stack": "cached by the allocator (reserved, not allocated)",
}


def _torch_summary(a: AllocatorProfile) -> TorchSummary:
    """The importer stores reserved - allocated as the "stack" and allocated as the heap."""
    s = a.snapshots
    allocated = s.heap_bytes
    reserved = s.stack_bytes + s.heap_bytes
    p = s.peak_index  # the peak of reserved memory
    q = int(np.argmax(allocated))
    free = int(s.free_bytes[p])
    return TorchSummary(
        allocation_count=a.allocation_count,
        free_count=a.deallocation_count,
        device_memory_bytes=int(reserved[p]) + free if free else None,
        peak_allocated_bytes=int(allocated[q]),
        peak_allocated_time_ms=round(int(s.time_ns[q]) / 1e6, 6),
        peak_reserved_bytes=int(reserved[p]),
        peak_reserved_time_ms=round(int(s.time_ns[p]) / 1e6, 6),
        peak_step=a.peak_step,
        allocated_at_peak_reserved_bytes=int(allocated[p]),
    )


def _torch_timeline(a: AllocatorProfile, strings: StringTable) -> TorchTimeline:
    s = a.snapshots
    i = a.timeline
    return TorchTimeline(
        time_ms=np.round(s.time_ns[i] / 1e6, 6).tolist(),
        allocated_bytes=s.heap_bytes[i].tolist(),
        reserved_bytes=(s.stack_bytes[i] + s.heap_bytes[i]).tolist(),
        activity=["allocation" if x else "free" for x in s.is_allocation[i].tolist()],
        bytes=s.allocation_bytes[i].tolist(),
        op_name=[strings[x] for x in s.op[i].tolist()],
        step=s.step[i].tolist(),
    )


def _torch_live(a: AllocatorProfile) -> tuple[TorchLiveAllocation, ...]:
    return tuple(
        TorchLiveAllocation(
            _TORCH_SPECIAL.get(r.op_name, r.op_name) if r.special else r.op_name,
            r.allocation_bytes,
            r.occurrences,
            r.special,
        )
        for r in a.live_at_peak
    )


def _memory(h: HostMemory, a: AllocatorProfile) -> Memory:
    # PyTorch's allocator speaks of allocated/reserved/active, TensorFlow's of heap/stack.
    torch = h.framework == "pytorch" and len(a.snapshots) > 0
    return Memory(
        host=h.host,
        memory_id=a.allocator,
        terms="pytorch" if torch else "tensorflow",
        summary=_torch_summary(a) if torch else _summary(a),
        timeline_points=len(a.timeline),
        snapshot_count=len(a.snapshots),
        timeline=(_torch_timeline if torch else _timeline)(a, h.strings),
        live_at_peak=_torch_live(a) if torch else _live(a),
    )


def _peak(m: Memory) -> HostPeak:
    s = m.summary
    if isinstance(s, TorchSummary):
        return HostPeak(
            m.host,
            m.memory_id,
            m.terms,
            s.peak_reserved_bytes,
            s.peak_step,
            s.peak_reserved_time_ms,
        )
    return HostPeak(m.host, m.memory_id, m.terms, s.peak_usage_bytes, s.peak_step, s.peak_time_ms)


def peaks_across_hosts(peaks: tuple[HostPeak, ...]) -> tuple[PeakAcrossHosts, ...]:
    """A reduction of the per-host peaks: per allocator kind (``GPU_3_bfc`` and ``GPU_0_bfc``
    are one kind, each rank's GPU) and terms, the highest peak, which host and step, and the
    median of the hosts' peaks (how far the highest stands out)."""
    by_kind: dict[tuple[str, str], dict[str, HostPeak]] = {}
    for p in peaks:
        hosts = by_kind.setdefault((re.sub(r"\d+", "*", p.memory_id), p.terms), {})
        best = hosts.get(p.host)
        if best is None or p.peak_bytes > best.peak_bytes:
            hosts[p.host] = p  # a host's highest peak among its allocators of this kind
    out = []
    for (kind, terms), hosts in sorted(by_kind.items()):
        top = max(hosts.values(), key=lambda p: (p.peak_bytes, -p.peak_time_ms))
        out.append(
            PeakAcrossHosts(
                allocator_kind=kind,
                terms=terms,
                host=top.host,
                memory_id=top.memory_id,
                peak_bytes=top.peak_bytes,
                peak_step=top.peak_step,
                peak_time_ms=top.peak_time_ms,
                hosts=len(hosts),
                median_peak_bytes=int(np.median([p.peak_bytes for p in hosts.values()])),
            )
        )
    return tuple(out)


def host_memory(ctx: ToolContext, host: str) -> HostMemory:
    def build_one(profile: Profile) -> HostMemory:
        starts, ends, ids = step_spans_with_ids(profile)
        return HostMemory(
            host,
            tuple(build_memory_profiles(profile, starts, ends, step_ids=ids)),
            profile.strings,
            framework_of(profile),
        )

    return ctx.intermediate(host, HOST_MEMORY, build_one)


def build(ctx: ToolContext) -> MemoryProfile:
    hosts = [host_memory(ctx, host) for host in ctx.hosts]
    memories = tuple(_memory(h, a) for h in hosts for a in h.allocators)
    peaks = tuple(_peak(m) for m in memories if m.snapshot_count)
    return MemoryProfile(memories, peaks, peaks_across_hosts(peaks))


def _has_memory_events(profile: Profile) -> bool:
    return len(memory_events(profile)) > 0


def available(ctx: ToolContext) -> bool:
    # Cheap: listing tools must not build the profile itself.
    return any(ctx.intermediate(h, HAS_MEMORY_EVENTS, _has_memory_events) for h in ctx.hosts)


# What a run without allocator events lacks and how to record them, in the words of the
# framework that wrote it (`framework_of`): a JAX or TensorFlow user read PyTorch's settings.
# Which captures have them: PyTorch's when torch.profiler records with profile_memory
# (decision 960); TensorFlow's and JAX's from the allocators of a GPU's or TPU's memory (the
# GPU JAX fixture has them; CPU-only JAX, and TensorFlow CPU loops of matmuls, have none),
# TensorFlow's on a CPU only from oneDNN's allocator ("mklcpu": the CNN fixtures' convolutions
# use it); XProf's memory profile is about accelerators' memory (decision 1031).
NEEDS = {
    "pytorch": (
        "allocator events; a PyTorch trace has them when torch.profiler records with "
        "profile_memory=True, which stepscope's PyTorch capture does when it traces CUDA; "
        "on a CPU-only capture ask for it before stepscope.start(): set "
        "STEPSCOPE_TORCH_PROFILE_MEMORY=1, or call stepscope.capture.bridges.configure("
        "torch=stepscope.capture.bridges.TorchSettings(profile_memory=True))"
    ),
    "tensorflow": (
        "allocator events; TensorFlow's profiler records the allocations of a GPU's memory, "
        'and on a CPU only those of oneDNN\'s allocator ("mklcpu", which some ops such as '
        "convolutions use), so a CPU-only TensorFlow run may have none: profile the loop on "
        "a GPU to see its memory"
    ),
    "jax": (
        "allocator events; JAX's profiler records the allocations of a GPU's or TPU's memory, "
        "not the CPU's, so a CPU-only JAX run has none: profile the loop on a GPU or TPU; "
        "the memory viewer (stepscope tool RUN memory_viewer) shows each jitted program's "
        "buffers and peak on any device"
    ),
    "unknown": (
        "allocator events; PyTorch records them with profile_memory=True (stepscope's "
        "capture: STEPSCOPE_TORCH_PROFILE_MEMORY=1), TensorFlow and JAX for a GPU's or TPU's "
        "memory"
    ),
}


def needs(ctx: ToolContext) -> str:
    """What the run lacks, said for the framework of its hosts (all of one, else any)."""
    frameworks = {ctx.intermediate(h, FRAMEWORK, framework_of) for h in ctx.hosts}
    framework = frameworks.pop() if len(frameworks) == 1 else "unknown"
    return NEEDS.get(framework, NEEDS["unknown"])


TOOL = ToolSpec(
    name="memory_profile",
    title="Memory profile",
    description="Allocator usage over time, the peak, and the allocations live at the peak.",
    build=build,
    formats=("json", "csv"),
    available=available,
    needs=needs,
    order=70,
)
