"""Kineto ``[memory]`` instant events -> ``MemoryAllocation`` / ``MemoryDeallocation`` events,
one by one (the oracle of `fast_memory`, whose docstring says what each stat means).
"""

from __future__ import annotations

from typing import Any

from stepscope.xspace.builder import StatValue
from stepscope.xspace.kineto.devices import GPU_DEVICE_TYPES, allocator_name
from stepscope.xspace.kineto.state import ThreadKey

# (start_ns, thread, args) as read from the trace
RawMemoryEvent = tuple[int, ThreadKey, dict[str, Any]]
# (start_ns, end_ns, name) of a cpu_op
OpInterval = tuple[int, int, str]


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return None


def memory_events(
    raw: list[RawMemoryEvent],
    ops_by_thread: dict[ThreadKey, list[OpInterval]],
    memory_sizes: dict[int, int],
) -> list[tuple[str, int, dict[str, StatValue]]]:
    """(event name, start_ns, stats) per memory event, in time order."""
    ordered = sorted(raw, key=lambda item: item[0])
    ops = _innermost_ops(ordered, ops_by_thread)
    peaks: dict[str, int] = {}
    out: list[tuple[str, int, dict[str, StatValue]]] = []
    for index, (start_ns, _thread, args) in enumerate(ordered):
        size = _int(args.get("Bytes")) or 0
        device_type = args.get("Device Type")
        device_id = _int(args.get("Device Id"))
        allocator = allocator_name(device_type, device_id)
        stats: dict[str, StatValue] = {
            "allocator_name": allocator,
            "requested_bytes": abs(size),
            "allocation_bytes": abs(size),
        }
        if device_id is not None:
            stats["device_id"] = device_id
        addr = _int(args.get("Addr"))
        if addr is not None:
            stats["addr"] = addr
        allocated = _int(args.get("Total Allocated"))
        reserved = _int(args.get("Total Reserved"))
        if allocated is not None:
            stats["bytes_allocated"] = allocated
            peak = max(peaks.get(allocator, 0), allocated)
            peaks[allocator] = peak
            stats["peak_bytes_in_use"] = peak
            if reserved is not None:
                stats["bytes_reserved"] = max(reserved - allocated, 0)
                memory = memory_sizes.get(device_id) if device_id is not None else None
                if device_type in GPU_DEVICE_TYPES and memory:
                    stats["bytes_available"] = max(memory - max(reserved, allocated), 0)
        op = ops[index]
        if op is not None:
            stats["tf_op"] = op
        out.append(("MemoryDeallocation" if size < 0 else "MemoryAllocation", start_ns, stats))
    return out


def _innermost_ops(
    ordered: list[RawMemoryEvent], ops_by_thread: dict[ThreadKey, list[OpInterval]]
) -> list[str | None]:
    """Per memory event, the name of the innermost op of its thread that contains it."""
    result: list[str | None] = [None] * len(ordered)
    by_thread: dict[ThreadKey, list[int]] = {}
    for index, (_start, thread, _args) in enumerate(ordered):
        by_thread.setdefault(thread, []).append(index)
    for thread, indices in by_thread.items():
        ops = ops_by_thread.get(thread)
        if not ops:
            continue
        ops.sort(key=lambda op: (op[0], -op[1]))
        stack: list[OpInterval] = []
        next_op = 0
        for index in indices:  # already in time order
            when = ordered[index][0]
            while next_op < len(ops) and ops[next_op][0] <= when:
                op = ops[next_op]
                while stack and stack[-1][1] < op[0]:
                    stack.pop()
                stack.append(op)
                next_op += 1
            while stack and stack[-1][1] < when:
                stack.pop()
            if stack:
                result[index] = stack[-1][2]
    return result
