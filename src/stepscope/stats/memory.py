"""Memory profile (XProf's ``xprof/convert/xplane_to_memory_profile.cc``): per allocator, the
allocator's state after every allocation and deallocation, the peak, and the allocations live at
the peak.

Input: instant events ``MemoryAllocation`` / ``MemoryDeallocation`` on ``/host:CPU`` with the
allocator stats (TensorFlow's BFC allocator; PyTorch ``[memory]`` events through the Kineto
importer, which maps the caching allocator's totals onto the same stats).

Follows XProf's converter: snapshots sorted by time; peak = the last event (in trace order)
where stack reserved + heap allocated reaches its maximum (stepscope breaks ties between
equal totals by the larger heap first, see `_peak_event`); capacity = stack + heap + free
there; a snapshot without a step gets the previous snapshot's step + 1 (0 at the start); a
deallocation inherits op, region, data type and shape of the latest earlier allocation at the
same address; the live-at-peak table counts only the peak step's activity up to the peak,
with the unexplained rest of the heap as "unused preallocated device memory" and the stack
as "stack"; the timeline keeps at most ``max_points`` snapshots, each the largest of its box.
Everything per event is vectorized; Python loops run over the peak step's events only.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import run_starts

MAX_TIMELINE_POINTS = 1000
_ALLOC, _DEALLOC = "MemoryAllocation", "MemoryDeallocation"
# TensorFlow's DataType enum (the ``data_type`` stat) as TensorFlow prints it.
_DATA_TYPES = [
    "INVALID",
    "float",
    "double",
    "int32",
    "uint8",
    "int16",
    "int8",
    "string",
    "complex64",
    "int64",
    "bool",
    "qint8",
    "quint8",
    "qint32",
    "bfloat16",
    "qint16",
    "quint16",
    "uint16",
    "complex128",
    "half",
    "resource",
    "variant",
    "uint32",
    "uint64",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e4m3b11fnuz",
    "float8_e5m2fnuz",
    "int4",
    "uint4",
]


def data_type_name(value: int) -> str:
    if 0 <= value < len(_DATA_TYPES):
        return _DATA_TYPES[value]
    if 100 < value < 100 + len(_DATA_TYPES):  # reference types (DT_FLOAT_REF...)
        return _DATA_TYPES[value - 100] + "_ref"
    return f"unknown({value})"


@record
class Snapshots:
    """One allocator's snapshots in time order (columns of equal length)."""

    allocator: str
    time_ns: np.ndarray  # int64, from the host trace's start
    is_allocation: np.ndarray  # bool
    stack_bytes: np.ndarray  # int64 (bytes_reserved)
    heap_bytes: np.ndarray  # int64 (bytes_allocated)
    free_bytes: np.ndarray  # int64 (bytes_available)
    peak_in_use_bytes: np.ndarray  # int64 (peak_bytes_in_use: the allocator's lifetime peak)
    fragmentation: np.ndarray  # float64, 0..1
    requested_bytes: np.ndarray  # int64
    allocation_bytes: np.ndarray  # int64
    address: np.ndarray  # int64
    op: np.ndarray  # int32 string id ('' when unknown)
    step: np.ndarray  # int64
    region_type: np.ndarray  # int32 string id
    data_type: np.ndarray  # int64 TensorFlow DataType enum value
    shape: np.ndarray  # int32 string id
    peak_index: int  # index (in time order) of the peak snapshot

    def __len__(self) -> int:
        return len(self.time_ns)

    @property
    def in_use_bytes(self) -> np.ndarray:
        return self.stack_bytes + self.heap_bytes


@record
class LiveAllocation:
    op_name: str
    allocation_bytes: int
    requested_bytes: int
    occurrences: int
    region_type: str
    data_type: str
    shape: str
    special: bool  # stepscope's stand-in rows: unexplained heap or the stack


@record
class AllocatorProfile:
    allocator: str
    snapshots: Snapshots
    allocation_count: int
    deallocation_count: int
    peak_usage_lifetime_bytes: int
    peak_step: int
    live_at_peak: tuple[LiveAllocation, ...]
    timeline: np.ndarray  # indices into snapshots, time order, at most max_points


def memory_events(profile: Profile) -> np.ndarray:
    """Event indices of allocator events on the host threads plane, in trace order."""
    plane = profile.plane_by_name("/host:CPU")
    if plane is None:
        return np.zeros(0, dtype=np.int64)
    ids = [profile.strings.id_of(n) for n in (_ALLOC, _DEALLOC)]
    ids = [i for i in ids if i >= 0]
    if not ids:
        return np.zeros(0, dtype=np.int64)
    span = profile.events_of_plane(plane)
    return np.flatnonzero(np.isin(profile.name[span], ids)) + span.start


def allocator_names(profile: Profile, events: np.ndarray) -> list[str]:
    """Per allocator event, its allocator (memory id): ``allocator_name``, else the
    allocator's index on the host or device ordinal, else ''."""
    names = profile.stat("allocator_name").string_ids()[events]
    index = profile.stat("index_on_host").as_int()[events]
    ordinal = profile.stat("device_ordinal").as_int()[events]
    texts = {i: profile.strings[i] for i in distinct(names).tolist() if i >= 0}
    out = []
    for n, i, o in zip(names.tolist(), index.tolist(), ordinal.tolist(), strict=True):
        out.append(texts[n] if n >= 0 else str(i) if i >= 0 else str(o) if o >= 0 else "")
    return out


def step_of_times(
    times_ns: np.ndarray, step_starts_ns: np.ndarray, step_ends_ns: np.ndarray
) -> np.ndarray:
    """Index of the step span holding each time (spans sorted, not overlapping), else -1."""
    if len(step_starts_ns) == 0:
        return np.full(len(times_ns), -1, dtype=np.int64)
    pos = np.searchsorted(step_starts_ns, times_ns, side="right") - 1
    inside = (pos >= 0) & (times_ns <= step_ends_ns[np.maximum(pos, 0)])
    return np.where(inside, pos, -1).astype(np.int64)


def fill_missing_steps(step: np.ndarray) -> np.ndarray:
    """A snapshot outside every step gets the previous known step + 1 (0 at the start)."""
    known = step >= 0
    if known.all():
        return step
    last_known = np.maximum.accumulate(np.where(known, np.arange(len(step)), -1))
    prev = np.where(last_known >= 0, step[np.maximum(last_known, 0)], -1)
    return np.where(known, step, prev + 1)


def _inherit_deallocation_metadata(snap: dict[str, np.ndarray]) -> None:
    """Deallocations take op/region/dtype/shape of the latest earlier allocation at their "
    "address."""
    n = len(snap["address"])
    order = np.lexsort((np.arange(n), snap["address"]))
    addr = snap["address"][order]
    is_alloc = snap["is_allocation"][order]
    group_start = run_starts(addr)
    pos = np.arange(n)
    last_alloc = np.where(is_alloc, pos, -1)
    # Forward-fill allocations, not across address groups.
    group_id = np.cumsum(group_start) - 1
    first_of_group = np.flatnonzero(group_start)[group_id]
    last_alloc = np.maximum.accumulate(last_alloc)
    last_alloc = np.where(last_alloc >= first_of_group, last_alloc, -1)
    deallocs = ~is_alloc & (last_alloc >= 0)
    targets = order[deallocs]
    sources = order[last_alloc[deallocs]]
    for column in ("op", "region_type", "data_type", "shape"):
        snap[column][targets] = snap[column][sources]


def _sample_timeline(in_use: np.ndarray, max_points: int) -> np.ndarray:
    """XProf's max box filter: ``max_points`` boxes (widths w then w+1), the first largest
    snapshot of each box. All snapshots when there are few enough."""
    n = len(in_use)
    if n <= max_points:
        return np.arange(n)
    width = n // max_points
    narrow = max_points * (width + 1) - n
    bounds = np.r_[
        np.arange(narrow) * width, narrow * width + np.arange(max_points - narrow + 1) * (width + 1)
    ]
    box = np.repeat(np.arange(max_points), np.diff(bounds))
    order = np.lexsort((np.arange(n), -in_use, box))
    firsts = np.r_[0, np.flatnonzero(box[order][1:] != box[order][:-1]) + 1]
    return np.sort(order[firsts])


def _live_at_peak(profile: Profile, s: Snapshots, peak_step: int) -> tuple[LiveAllocation, ...]:
    peak = s.peak_index
    upto = np.flatnonzero((s.time_ns <= s.time_ns[peak]) & (s.step == peak_step))
    heap_left = int(s.heap_bytes[peak])
    unmapped_dealloc = 0
    live: dict[int, int] = {}  # address -> snapshot index
    for i, addr, alloc, size in zip(
        upto.tolist(),
        s.address[upto].tolist(),
        s.is_allocation[upto].tolist(),
        s.allocation_bytes[upto].tolist(),
        strict=True,
    ):
        if alloc:
            live[addr] = i
            heap_left -= size
        else:
            if live.pop(addr, None) is None:
                unmapped_dealloc += size
            heap_left += size
    heap_left -= unmapped_dealloc
    strings = profile.strings
    rows: list[tuple[tuple[object, ...], LiveAllocation]] = []
    for i in live.values():
        row = LiveAllocation(
            op_name=strings[int(s.op[i])],
            allocation_bytes=int(s.allocation_bytes[i]),
            requested_bytes=int(s.requested_bytes[i]),
            occurrences=1,
            region_type=strings[int(s.region_type[i])],
            data_type=data_type_name(int(s.data_type[i])),
            shape=strings[int(s.shape[i])],
            special=False,
        )
        rows.append((_sort_key(row, int(s.data_type[i])), row))
    stack = int(s.stack_bytes[peak])
    for size, op, region in (
        (heap_left, "unused preallocated device memory", "persist/dynamic"),
        (stack, "stack", "stack"),
    ):
        if size > 0:
            row = LiveAllocation(op, size, size, 1, region, data_type_name(0), "unknown", True)
            rows.append((_sort_key(row, 0), row))
    rows.sort(key=lambda item: item[0])
    merged: list[LiveAllocation] = []
    last_key: tuple[object, ...] | None = None
    for key, row in rows:
        if key == last_key:
            prev = merged[-1]
            merged[-1] = LiveAllocation(**{**prev.__dict__, "occurrences": prev.occurrences + 1})
        else:
            merged.append(row)
            last_key = key
    return tuple(merged)


def shape_ids(profile: Profile, ev: np.ndarray, empty: int) -> np.ndarray:
    """Per allocator event, the string id of its tensor's shape (``empty`` when none)."""
    ids = profile.stat("shape").string_ids()[ev]
    other = profile.stat("tensor_shapes").string_ids()[ev]
    ids = np.where(ids >= 0, ids, other)
    return np.where(ids >= 0, ids, empty).astype(np.int32)


def _sort_key(row: LiveAllocation, data_type: int) -> tuple[object, ...]:
    return (
        -row.allocation_bytes,
        -row.requested_bytes,
        row.op_name,
        row.region_type,
        data_type,
        row.shape,
    )


def _peak_event(trace_order: np.ndarray, stack: np.ndarray, heap: np.ndarray) -> int:
    """The peak: largest stack + heap; among equal ones the largest heap, then the last in
    trace order (XProf updates on >=). The heap tie-break only matters when the stack moves:
    PyTorch's cache (stack) keeps the reserved total on a plateau, and the moment on it with
    the most memory in live tensors is the one worth breaking down."""
    in_use = stack + heap
    ties = np.flatnonzero(in_use == in_use.max())
    best = ties[heap[ties] == heap[ties].max()]
    return int(trace_order[best[-1]])


def build_memory_profiles(
    profile: Profile,
    step_starts_ns: np.ndarray | None = None,
    step_ends_ns: np.ndarray | None = None,
    max_points: int = MAX_TIMELINE_POINTS,
    step_ids: np.ndarray | None = None,
) -> list[AllocatorProfile]:
    """One `AllocatorProfile` per allocator with events, sorted by allocator name.

    ``step_*_ns``: the run's step spans (sorted) on the profile clock; a snapshot's step is
    the id (``step_ids``, XProf's group ids; default the index) of the span holding it.
    """
    if (step_starts_ns is None) != (step_ends_ns is None):
        raise ValueError("build_memory_profiles: give the step starts and ends together")
    events = memory_events(profile)
    if len(events) == 0:
        return []
    plane = profile.plane_by_name("/host:CPU")
    assert plane is not None
    plane_lines = profile.lines[plane.first_line : plane.first_line + plane.line_count]
    origin = min(line.timestamp_ns for line in plane_lines if line.event_count)
    starts = np.zeros(0, np.int64) if step_starts_ns is None else np.asarray(step_starts_ns)
    ends = np.zeros(0, np.int64) if step_ends_ns is None else np.asarray(step_ends_ns)
    allocators = allocator_names(profile, events)
    empty = profile.strings.id_of("")
    alloc_name = profile.strings.id_of(_ALLOC)

    def int_stat(name: str, ev: np.ndarray) -> np.ndarray:
        return profile.stat(name).as_int(0)[ev]

    def str_stat(name: str, ev: np.ndarray) -> np.ndarray:
        ids = profile.stat(name).string_ids()[ev]
        return np.where(ids >= 0, ids, empty).astype(np.int32)

    out = []
    allocator_array = np.array(allocators, dtype=object)
    for allocator in sorted(set(allocators)):
        trace_order = events[allocator_array == allocator]
        peak_event = _peak_event(
            trace_order,
            int_stat("bytes_reserved", trace_order),
            int_stat("bytes_allocated", trace_order),
        )
        ev = trace_order[np.argsort(profile.start_ns[trace_order], kind="stable")]
        time_ns = profile.start_ns[ev] - origin
        frag = profile.stat("fragmentation").as_float()[ev]
        snap: dict[str, np.ndarray] = {
            "address": int_stat("addr", ev),
            "is_allocation": profile.name[ev] == alloc_name,
            "op": str_stat("tf_op", ev),
            "region_type": str_stat("region_type", ev),
            "data_type": int_stat("data_type", ev),
            "shape": shape_ids(profile, ev, empty),
        }
        _inherit_deallocation_metadata(snap)
        index = step_of_times(profile.start_ns[ev], starts, ends)
        if step_ids is not None and len(step_ids) == len(starts) and len(starts):
            # (no steps: every index is -1; indexing the empty ids would still raise)
            index = np.where(index >= 0, np.asarray(step_ids)[np.maximum(index, 0)], -1)
        step = fill_missing_steps(index)
        s = Snapshots(
            allocator=allocator,
            time_ns=time_ns,
            is_allocation=snap["is_allocation"],
            stack_bytes=int_stat("bytes_reserved", ev),
            heap_bytes=int_stat("bytes_allocated", ev),
            free_bytes=int_stat("bytes_available", ev),
            peak_in_use_bytes=int_stat("peak_bytes_in_use", ev),
            fragmentation=np.nan_to_num(frag),
            requested_bytes=int_stat("requested_bytes", ev),
            allocation_bytes=int_stat("allocation_bytes", ev),
            address=snap["address"],
            op=snap["op"],
            step=step,
            region_type=snap["region_type"],
            data_type=snap["data_type"],
            shape=snap["shape"],
            peak_index=int(np.flatnonzero(ev == peak_event)[0]),
        )
        in_use = s.in_use_bytes
        peak_bytes = int(in_use[s.peak_index])
        # XProf: the step of the last snapshot (in time) at the peak value.
        at_peak = (in_use == peak_bytes) & (s.heap_bytes == s.heap_bytes[s.peak_index])
        peak_step = int(step[np.flatnonzero(at_peak)[-1]])
        n_alloc = int(s.is_allocation.sum())
        out.append(
            AllocatorProfile(
                allocator=allocator,
                snapshots=s,
                allocation_count=n_alloc,
                deallocation_count=len(s) - n_alloc,
                peak_usage_lifetime_bytes=max(
                    int(s.peak_in_use_bytes.max()), int(s.heap_bytes.max())
                ),
                peak_step=peak_step,
                live_at_peak=_live_at_peak(profile, s, peak_step),
                timeline=_sample_timeline(in_use, max_points),
            )
        )
    return out
