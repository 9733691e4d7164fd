"""Kineto ``[memory]`` instant events -> ``MemoryAllocation`` / ``MemoryDeallocation`` events.

PyTorch's caching allocator reports, per (de)allocation: ``Bytes`` (negative on free),
``Addr``, ``Device Type`` / ``Device Id`` and the allocator totals after the event,
``Total Allocated`` (bytes held by live tensors) and ``Total Reserved`` (bytes the allocator
holds from the device, cached free blocks included). The 2021 schema has no totals or address.

Decisions (the XSpace memory stats are TensorFlow BFC-allocator stats, read as XProf's
``xprof/convert/xplane_to_memory_profile.cc`` reads them, where
peak = stack reserved + heap allocated and capacity = that + free):

- Events go to ``/host:CPU`` on a line named ``Memory``, sorted by time, zero duration.
- ``allocator_name``: ``GPU_<id>_bfc`` for CUDA/HIP devices (Device Type 1 or 6), ``cpu`` for
  the CPU, ``<type>_<id>`` otherwise. ``device_id`` is ``Device Id`` (-1 for the CPU).
- ``requested_bytes`` = ``allocation_bytes`` = abs(Bytes); ``addr`` = Addr.
- ``bytes_allocated`` = Total Allocated (the heap in use).
- ``bytes_reserved`` = Total Reserved - Total Allocated: memory the process holds in the
  allocator's cache but no tensor uses. With it, stack + heap = Total Reserved, the process's
  real footprint on the device, and XProf's peak is the peak reserved memory.
- ``bytes_available`` = device memory (deviceProperties totalGlobalMem) - Total Reserved, only
  for GPU allocators whose device memory is known; capacity then equals the device memory.
- ``peak_bytes_in_use``: running maximum of Total Allocated per allocator within the trace.
- ``tf_op``: the innermost ``cpu_op`` open on the allocating thread at that time (the op a
  memory breakdown attributes the allocation to).
"""

from __future__ import annotations

from typing import Any

from stepscope.vocab.tensorflow import CPU_ALLOCATOR, gpu_allocator
from stepscope.xspace.builder import StatValue

# c10::DeviceType values that are not CPU or a CUDA/HIP GPU.
_DEVICE_TYPE_NAMES = {
    2: "mkldnn",
    3: "opengl",
    4: "opencl",
    5: "ideep",
    7: "fpga",
    8: "maia",
    9: "xla",
    10: "vulkan",
    11: "metal",
    12: "xpu",
    13: "mps",
    14: "meta",
    15: "hpu",
    16: "ve",
    17: "lazy",
    18: "ipu",
    19: "mtia",
    20: "privateuse1",
}
GPU_DEVICE_TYPES = (1, 6)  # CUDA, HIP (ROCm builds report HIP devices as CUDA)

ThreadKey = tuple[object, object]
# (start_ns, thread, args) as read from the trace
RawMemoryEvent = tuple[int, ThreadKey, dict[str, Any]]
# (start_ns, end_ns, name) of a cpu_op
OpInterval = tuple[int, int, str]


def allocator_name(device_type: object, device_id: object) -> str:
    if device_type in GPU_DEVICE_TYPES:
        return gpu_allocator(device_id)
    if device_type == 0 or device_type is None:
        return CPU_ALLOCATOR
    kind = _DEVICE_TYPE_NAMES.get(device_type, f"device_type_{device_type}")  # type: ignore[call-overload]
    return f"{kind}_{device_id}"


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
