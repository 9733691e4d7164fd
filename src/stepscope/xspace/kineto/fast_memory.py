"""Kineto ``[memory]`` instant events of a `ScannedTrace` -> ``MemoryAllocation`` /
``MemoryDeallocation`` events on the ``Memory`` line, with numpy.

PyTorch's caching allocator reports, per (de)allocation: ``Bytes`` (negative on free),
``Addr``, ``Device Type`` / ``Device Id`` and the allocator totals after the event,
``Total Allocated`` (bytes held by live tensors) and ``Total Reserved`` (bytes the allocator
holds from the device, cached free blocks included). The 2021 schema has no totals or address.

Decisions (the XSpace memory stats are TensorFlow BFC-allocator stats, read as XProf's
``xprof/convert/xplane_to_memory_profile.cc`` reads them, where
peak = stack reserved + heap allocated and capacity = that + free):

- Events go to ``/host:CPU`` on a line named ``Memory``, sorted by time, zero duration.
- ``allocator_name``: ``GPU_<id>_bfc`` for CUDA/HIP devices (Device Type 1 or 6), ``cpu`` for
  the CPU, ``<type>_<id>`` otherwise (`devices.allocator_name`). ``device_id`` is ``Device Id``.
- ``requested_bytes`` = ``allocation_bytes`` = abs(Bytes); ``addr`` = Addr.
- ``bytes_allocated`` = Total Allocated (the heap in use).
- ``bytes_reserved`` = Total Reserved - Total Allocated: memory the process holds in the
  allocator's cache but no tensor uses. With it, stack + heap = Total Reserved, the process's
  real footprint on the device, and XProf's peak is the peak reserved memory.
- ``bytes_available`` = device memory (deviceProperties totalGlobalMem) - Total Reserved, only
  for GPU allocators whose device memory is known; capacity then equals the device memory.
- ``peak_bytes_in_use``: running maximum of Total Allocated per allocator within the trace.
- ``tf_op``: the innermost ``cpu_op`` open on the allocating thread at that time (the op a
  memory breakdown attributes the allocation to): a stack walk over the thread's ops sorted
  by (start, -end), in C (`_kscan.innermost`) or in `innermost`'s Python loop.

Args of other types are read as ints where they are numbers (bools as 0/1, floats truncated
toward zero; strings, lists and null: absent); an event with a value past int64 (or NaN) or
a list as ``Device Type`` is skipped and counted by `fast_route.classify` (`unfit`,
decision 184).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.event_order import start_order
from stepscope.xspace.kineto.categories import Kind
from stepscope.xspace.kineto.classified import MemoryReads
from stepscope.xspace.kineto.columns import ColumnLine
from stepscope.xspace.kineto.devices import GPU_DEVICE_TYPES, MEMORY_LINE_ID, allocator_name
from stepscope.xspace.kineto.scan import (
    A_BOOL,
    A_FLOAT,
    A_INT,
    A_JSON,
    A_NULL,
    A_UINT,
    F_PID_STR,
    F_TID_STR,
    NO_ID,
    ScannedTrace,
    first_seen,
    native,
)
from stepscope.xspace.kineto.stat_codec import StatCodec
from stepscope.xspace.kineto.state import RouteState

if TYPE_CHECKING:
    from stepscope.xspace.kineto.classified import Classified
from stepscope.xspace.wire import KIND_INT, KIND_STR

_ARGS = ("Bytes", "Device Type", "Device Id", "Addr", "Total Allocated", "Total Reserved")
_CATEGORY = "cpu_instant_event"
_NAMES = ("MemoryAllocation", "MemoryDeallocation")


# The memory events' args, read once by `read_args` for `unfit` and `integer_args` (12 reads
# of 28k events were 6 ms of the 0.2M-event V100 trace's import, issue #30).
Reads = MemoryReads


def read_args(trace: ScannedTrace, events: np.ndarray) -> Reads:
    """The memory args of ``events`` (ascending)."""
    return events, {key: trace.arg_at(key, events) for key in _ARGS}


def _reader(
    trace: ScannedTrace, events: np.ndarray, reads: Reads | None
) -> Callable[[str], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """key -> `ScannedTrace.arg_at(key, events)`, gathered from ``reads`` where it holds
    every one of ``events`` (found once for all the keys)."""
    if reads is not None and len(reads[0]):
        read, by_key = reads
        at = np.minimum(np.searchsorted(read, events), len(read) - 1)
        if np.array_equal(read[at], events):

            def gathered(key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                present, kind, value = by_key[key]
                return present.take(at), kind.take(at), value.take(at)

            return gathered
    return lambda key: trace.arg_at(key, events)


def unfit(trace: ScannedTrace, events: np.ndarray, reads: Reads | None = None) -> np.ndarray:
    """Which of ``events`` (memory events) hold an arg no stat can carry: a list or object as
    ``Device Type``, a float past int64 or NaN in another memory arg (decision 184), an
    integer past int64 in any arg (uint64: the Python scanner's `A_UINT`)."""
    bad = np.zeros(len(events), bool)
    uint = trace.arg_kind == A_UINT  # (any arg past int64, as the importer always skipped)
    if uint.any():
        bad |= np.isin(events, trace.arg_event[uint])
    arg = _reader(trace, events, reads)
    for key in _ARGS:
        _, kind, value = arg(key)
        if key == "Device Type":
            bad |= kind == A_JSON
            continue
        floats = kind == A_FLOAT
        if np.any(floats):
            numbers = np.where(floats, value, 0).view(np.float64)
            bad |= floats & ~(np.abs(numbers) < 2.0**63)  # NaN fails this too
    return bad


def integer_args(
    trace: ScannedTrace, events: np.ndarray, reads: Reads | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per memory arg: (has a usable value, the value) for ``events``, read as ints (ints
    and bools; floats truncated; strings, lists and null: absent), except
    ``Device Type``: (its kind, its value), named by `allocator_name` from the value itself.
    ``events`` hold no `unfit` value (`fast_route.classify` skipped those)."""
    out = {}
    arg = _reader(trace, events, reads)
    for key in _ARGS:
        present, kind, value = arg(key)
        if key == "Device Type":
            out[key] = (np.where(present & (kind != A_NULL), kind, -1), value)
            continue
        usable = (kind == A_INT) | (kind == A_BOOL)
        floats = np.flatnonzero(kind == A_FLOAT)
        if len(floats):
            numbers = value[floats].view(np.float64)
            value = value.copy()
            value[floats] = numbers.astype(np.int64)  # toward zero, as int()
            usable[floats] = True
        out[key] = (usable, value)
    return out


def prepare(c: Classified) -> None:
    """Read the memory events' args (before `ScannedTrace.drop_args`) into ``c``."""
    trace = c.trace
    events = np.flatnonzero(c.memory)
    # Time order by the trace's own times (`c.start_ns` is made later; it adds a constant).
    c.memory_order = events[np.argsort(trace.ts_ns[events], kind="stable")]
    c.memory_args = integer_args(trace, c.memory_order, c.memory_reads)
    c.memory_reads = None  # read: freed


def add_memory(state: RouteState, c: Classified, memory_sizes: dict[int, int]) -> None:
    """Emit the trace's memory events on the host plane's ``Memory`` line."""
    trace = c.trace
    order = c.memory_order
    if not len(order):
        return
    start_ns = c.start_ns
    args = c.memory_args
    assert args is not None  # (set by `prepare`)
    start = start_ns[order]
    op_ids = _innermost_ops(c, order)
    codec = c.codec
    n = len(order)
    has_size, size = args["Bytes"]
    size = np.where(has_size, size, 0)
    type_kind, type_value = args["Device Type"]
    has_id, device_id = args["Device Id"]
    has_addr, addr = args["Addr"]
    has_alloc, allocated = args["Total Allocated"]
    has_reserved, reserved = args["Total Reserved"]
    allocator, is_gpu = _allocators(trace, codec, type_kind, type_value, has_id, device_id)
    peak = np.zeros(n, np.int64)
    for name in distinct(allocator[has_alloc]).tolist():
        chosen = np.flatnonzero(has_alloc & (allocator == name))
        peak[chosen] = np.maximum(np.maximum.accumulate(allocated.take(chosen)), 0)
    with_reserved = has_alloc & has_reserved
    known = distinct(device_id).tolist()
    sizes = np.array([memory_sizes.get(d, 0) for d in known], np.int64)
    memory = sizes[np.searchsorted(np.array(known, np.int64), device_id)]
    available = with_reserved & has_id & is_gpu & (memory != 0)
    names = (size < 0).astype(np.int64)  # 0: MemoryAllocation, 1: MemoryDeallocation
    meta, category_differs = _metadata(state, names)
    slots = [
        (np.ones(n, bool), "allocator_name", KIND_STR, allocator),
        (np.ones(n, bool), "requested_bytes", KIND_INT, np.abs(size)),
        (np.ones(n, bool), "allocation_bytes", KIND_INT, np.abs(size)),
        (has_id, "device_id", KIND_INT, device_id),
        (has_addr, "addr", KIND_INT, addr),
        (has_alloc, "bytes_allocated", KIND_INT, allocated),
        (has_alloc, "peak_bytes_in_use", KIND_INT, peak),
        (with_reserved, "bytes_reserved", KIND_INT, np.maximum(reserved - allocated, 0)),
        (
            available,
            "bytes_available",
            KIND_INT,
            np.maximum(memory - np.maximum(reserved, allocated), 0),
        ),
        (op_ids >= 0, "tf_op", KIND_STR, op_ids),
        (category_differs, "category", KIND_STR, np.full(n, codec.string_id(_CATEGORY))),
    ]
    # Row-major selection: each event's rows in slot order, as the stats dict is built.
    mask = np.stack([slot[0] for slot in slots], axis=1)
    keys = np.stack([np.full(n, codec.key_id(slot[1]), np.int32) for slot in slots], axis=1)
    kinds = np.stack([np.full(n, slot[2], np.int8) for slot in slots], axis=1)
    values = np.stack([np.asarray(slot[3], np.int64) for slot in slots], axis=1)
    line = state.host.line(MEMORY_LINE_ID, "Memory")
    assert isinstance(line, ColumnLine)
    line.extend(
        meta, start, np.zeros(n, np.int64), mask.sum(axis=1), keys[mask], kinds[mask], values[mask]
    )


def _cpu_ops(c: Classified) -> np.ndarray:
    """The cpu_ops of threads not named by strings (those of the memory events: `classify`
    skips memory events with string thread ids, decision 184; a null id is kept, 210)."""
    trace = c.trace
    cpu_op = c.categories.index("cpu_op") if "cpu_op" in c.categories else -2
    flags = trace.flags
    named = (((flags & F_PID_STR) != 0) & (trace.pid != NO_ID)) | (
        ((flags & F_TID_STR) != 0) & (trace.tid != NO_ID)
    )
    return np.flatnonzero(c.routed & (c.kind == Kind.HOST) & (c.category == cpu_op) & ~named)


def _innermost_ops(c: Classified, order: np.ndarray) -> np.ndarray:
    """Codec string id of the innermost cpu_op of its thread open at each memory event
    (``order``: the memory events in time order), -1 where none is."""
    trace, codec = c.trace, c.codec
    out = np.full(len(order), -1, np.int64)
    ops = _cpu_ops(c)
    both = np.concatenate((ops, order))
    # (the flags tell a null id, NO_ID, from the number -1)
    codes = first_seen(
        trace.flags.take(both) & (F_PID_STR | F_TID_STR), trace.pid.take(both), trace.tid.take(both)
    )[0]
    op_thread, mem_thread = codes[: len(ops)], codes[len(ops) :]
    for thread in distinct(mem_thread).tolist():
        mine = np.flatnonzero(mem_thread == thread)
        chosen = ops[op_thread == thread]
        if not len(chosen):
            continue
        begin = c.start_ns[chosen]
        end = begin + c.dur_ns[chosen]
        sort = start_order(begin, end)  # by (start, -end), stable
        index = innermost(begin[sort], end[sort], c.start_ns[order[mine]])
        hit = index >= 0
        names = c.names[chosen[sort[index[hit]]]]
        names_seen, inverse = distinct_inverse(names)
        ids = np.array(
            [codec.string_id(trace.texts[int(n)]) for n in names_seen.tolist()], np.int64
        )
        out[mine[hit]] = ids[inverse.reshape(-1)]
    return out


def innermost(begin: np.ndarray, end: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Per time (ascending), the index of the innermost op open then, -1 for none: a stack
    walk over the ops sorted by (start, -end), in C (`_kscan.innermost`) when it is built."""
    fast = native()
    if fast is not None:
        found = fast.innermost(begin.tobytes(), end.tobytes(), times.tobytes())
        return np.frombuffer(found, np.int64)
    starts, ends = begin.tolist(), end.tolist()
    out = np.full(len(times), -1, np.int64)
    stack: list[int] = []
    following = 0
    for i, when in enumerate(times.tolist()):
        while following < len(starts) and starts[following] <= when:
            while stack and ends[stack[-1]] < starts[following]:
                stack.pop()
            stack.append(following)
            following += 1
        while stack and ends[stack[-1]] < when:
            stack.pop()
        if stack:
            out[i] = stack[-1]
    return out


def _allocators(
    trace: ScannedTrace,
    codec: StatCodec,
    type_kind: np.ndarray,
    type_value: np.ndarray,
    has_id: np.ndarray,
    device_id: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per event: the codec string id of its allocator name, and whether its device is a
    GPU (one name per distinct device type and id; the type as written: `allocator_name`
    reads 1.0 as CUDA and names a string type after it)."""
    ids = np.where(has_id, device_id, 0)
    group, first = first_seen(type_kind, type_value, has_id, ids)
    names, gpus = [], []
    for i in first.tolist():
        kind = int(type_kind[i])
        device_type = None if kind < 0 else trace.value(kind, int(type_value[i]))
        names.append(
            codec.string_id(allocator_name(device_type, int(ids[i]) if has_id[i] else None))
        )
        gpus.append(device_type in GPU_DEVICE_TYPES)
    return np.array(names, np.int64)[group], np.array(gpus, bool)[group]


def _metadata(state: RouteState, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(metadata id per event, whether its category differs from its metadata's), the
    metadata created in order of first use, as the other metadata (`fast_route._metadata`)."""
    host = state.host
    firsts = sorted((int(np.argmax(names == i)), i) for i in (0, 1) if np.any(names == i))
    ids = np.zeros(2, np.int64)
    differs = np.zeros(2, bool)
    for _first, which in firsts:
        name = _NAMES[which]
        known = state.metadata.get((host.name, name, ""))
        if known is None:
            known = (host.event_metadata_id(name, "", {"category": _CATEGORY}), _CATEGORY)
            state.metadata[(host.name, name, "")] = known
        ids[which] = known[0]
        differs[which] = known[1] != _CATEGORY
    return ids[names], differs[names]
