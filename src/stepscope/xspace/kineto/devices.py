"""Kineto ``deviceProperties`` / ``distributedInfo`` -> plane stats; thread, stream and time units.

Decisions:

- A ``/device:GPU:N`` plane exists only for a device that has events in the trace. Kineto
  lists every GPU of the node (8 on a DGX even when the rank used one); empty planes would make
  every per-device average wrong. The listed properties go on the planes that exist.
- Device stats use REFERENCE names: ``core_count`` (numSms: SMs, or CUs on AMD),
  ``memory_size`` (totalGlobalMem, bytes), ``compute_cap_major`` / ``compute_cap_minor``,
  ``clock_rate`` (clockRate, kHz, when present), plus ``device_name`` and ``device_vendor``
  (``Nvidia`` / ``AMD`` / ``Intel``, from the name or the runtime versions in the header).
  The other properties (maxThreadsPerMultiprocessor, regsPerMultiprocessor, warpSize, ...)
  are kept under their Kineto names: occupancy calculations need them.
- ``distributedInfo`` scalars (``rank``, ``world_size``, ``backend``, ``nccl_version``,
  ``pg_count``) become ``/host:CPU`` plane stats; the process-group table is not kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from stepscope.vocab.tensorflow import CPU_ALLOCATOR, gpu_allocator

if TYPE_CHECKING:  # the builder needs protobuf; the Kineto path does not
    from stepscope.xspace.builder import StatValue

_PROPERTY_STATS = {
    "name": "device_name",
    "numSms": "core_count",
    "totalGlobalMem": "memory_size",
    "computeMajor": "compute_cap_major",
    "computeMinor": "compute_cap_minor",
    "clockRate": "clock_rate",
}
_THREAD_NAME = re.compile(r"^thread (\d+) \((.*)\)$")
# Line ids of per-stream lines that are not the stream itself (kept below XProf's derived ids).
ANNOTATION_LINE_BASE = 1 << 28
SYNC_LINE_BASE = 2 << 28
# A stream id is a line id, and the derived lines above add a base to it: an id beyond
# +-2**40 (CUDA's are below 100; XProf's derived line ids, which an exported trace carries
# back as streams, below 2**32) is damage: skipped and counted, like an event without a valid
# timestamp, so that no line id derived from it leaves int64.
STREAM_ID_LIMIT = 1 << 40
# Host-plane lines that are not OS threads.
MEMORY_LINE_ID = 1 << 40
SYNTHETIC_LINE_BASE = (1 << 40) + 1


def device_properties(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Properties by device id (list position when an entry has no id)."""
    entries = doc.get("deviceProperties")
    if not isinstance(entries, list):
        return {}
    out: dict[int, dict[str, Any]] = {}
    for position, entry in enumerate(entries):
        if isinstance(entry, dict):
            device = entry.get("id", position)
            out[device if isinstance(device, int) else position] = entry
    return out


def trace_vendor(doc: dict[str, Any]) -> str:
    """GPU vendor implied by the runtime versions in the trace header ('' if none)."""
    if any(
        key in doc for key in ("hip_runtime_version", "roctracer_version", "hip_driver_version")
    ):
        return "AMD"
    if any(key in doc for key in ("cuda_runtime_version", "cupti_version", "cuda_driver_version")):
        return "Nvidia"
    return ""


def device_vendor(name: str, fallback: str) -> str:
    upper = name.upper()
    if any(word in upper for word in ("AMD", "INSTINCT", "RADEON")):
        return "AMD"
    if any(word in upper for word in ("NVIDIA", "TESLA", "QUADRO", "GEFORCE", "RTX")):
        return "Nvidia"
    if "INTEL" in upper:
        return "Intel"
    return fallback


def device_plane_stats(props: dict[str, Any] | None, vendor: str) -> dict[str, StatValue]:
    """Plane stats of one GPU (see module docstring)."""
    stats: dict[str, StatValue] = {}
    for key, value in (props or {}).items():
        if key == "id" or value is None or isinstance(value, (list, dict)):
            continue
        value = int(value) if isinstance(value, bool) else value
        stats[_PROPERTY_STATS.get(key, key)] = value
    name = stats.get("device_name")
    detected = device_vendor(name, vendor) if isinstance(name, str) else vendor
    if detected:
        stats["device_vendor"] = detected
    return stats


def distributed_stats(doc: dict[str, Any]) -> dict[str, StatValue]:
    info = doc.get("distributedInfo")
    if not isinstance(info, dict):
        return {}
    stats: dict[str, StatValue] = {}
    for key, value in info.items():
        if isinstance(value, bool):
            stats[key] = int(value)
        elif isinstance(value, (int, float, str)):
            stats[key] = value
    return stats


def thread_line_name(raw: str | None, tid: object) -> str:
    """``thread 123 (python3)`` -> ``python3``, as TensorFlow names host lines by thread name."""
    if not raw:
        return f"thread {tid}"
    raw = raw.strip()
    match = _THREAD_NAME.match(raw)
    return match.group(2) if match and match.group(2) else raw


def stream_of(value: object) -> int | None:
    """Stream id from an int, ``"7"`` or the 2021 schema's ``"stream 7"``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        tail = value.strip().rsplit(" ", 1)[-1]
        if tail.lstrip("-").isdigit():
            return int(tail)
    return None


def us_to_ns(value: Any) -> int | None:
    """Microseconds (int, float or numeric string) -> int ns; None when not a finite number."""
    try:
        if type(value) is float:
            whole = int(value)
            ns = whole * 1000 + round((value - whole) * 1000)
        elif type(value) is int:
            ns = value * 1000
        elif isinstance(value, str):
            return us_to_ns(float(value))
        else:
            return None
    except (ValueError, OverflowError):
        return None
    # XSpace stores picosecond offsets in int64: beyond +-2**62 ns a time is damage, not data.
    return ns if -_MAX_NS < ns < _MAX_NS else None


_MAX_NS = 1 << 62


def normalize_tid(value: object) -> object:
    """Thread ids as ints where they are numbers (the 2021 schema writes "25738")."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


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


def allocator_name(device_type: object, device_id: object) -> str:
    """The allocator of a ``[memory]`` event: ``GPU_<id>_bfc`` for CUDA/HIP devices, ``cpu``
    for the CPU (or no type), ``<type>_<id>`` otherwise."""
    if device_type in GPU_DEVICE_TYPES:
        return gpu_allocator(device_id)
    if device_type == 0 or device_type is None:
        return CPU_ALLOCATOR
    kind = _DEVICE_TYPE_NAMES.get(device_type, f"device_type_{device_type}")  # type: ignore[call-overload]
    return f"{kind}_{device_id}"
