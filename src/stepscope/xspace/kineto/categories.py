"""Kineto categories, argument names and device-event details, mapped to XSpace conventions.

Decisions:

- Every event keeps its ``args`` as stats under their Kineto names (renames below), with
  values as int / float / str; bools become 0/1; lists and objects become JSON strings
  (``"[[512], []]"``); ``null`` values are dropped. An event with an integer beyond 64 bits
  is skipped (and counted in a warning) as malformed. Kineto's bookkeeping args ``Ev Idx``,
  ``Trace name`` and ``Trace iteration`` are dropped, and so are a kernel's ``grid``,
  ``block``, ``registers per thread``, ``shared memory`` and ``est. achieved occupancy %``:
  they are its ``kernel_details`` stat, the XSpace form of the launch configuration.
- Arguments with an XSpace meaning are renamed to the XSpace stat (TensorFlow's names,
  ``xla/tsl/profiler/utils/xplane_schema.cc``):
  ``correlation`` -> ``correlation_id``, ``device`` -> ``device_id``, ``context`` ->
  ``context_id``; ``External id`` / ``external id`` (2021 schema) -> ``external_id``, the key
  that links an op to its runtime calls and kernels.
- The category is stored as the stat ``category`` on the event *metadata* (one per distinct
  name), with an event-level ``category`` only where one name appears under two categories.
  Old capitalised categories are normalised to today's names (``Kernel`` -> ``kernel``,
  ``Operator`` -> ``cpu_op``, ``Runtime`` -> ``cuda_runtime``, ``Memcpy`` -> ``gpu_memcpy``).
"""

from __future__ import annotations

import json
import re
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from stepscope.vocab.pytorch import profiler_step_number

if TYPE_CHECKING:  # the builder needs protobuf; the Kineto path does not
    from stepscope.xspace.builder import StatValue


class Kind(IntEnum):
    """Where an event goes."""

    HOST = 0  # /host:CPU, the line of its (pid, tid) thread
    DEVICE = 1  # /device:GPU:N, the line of its stream
    GPU_ANNOTATION = 2  # /device:GPU:N, the annotation line of its stream
    SYNC = 3  # /device:GPU:N, the sync line of its stream
    OVERHEAD = 4  # /host:CUPTI
    SKIP = 5  # profiler bookkeeping ("Trace" spans): used for the time span only


# raw category -> (kind, normalised category)
CATEGORIES: dict[str, tuple[Kind, str]] = {
    "cpu_op": (Kind.HOST, "cpu_op"),
    "Operator": (Kind.HOST, "cpu_op"),
    "operator": (Kind.HOST, "cpu_op"),
    "user_annotation": (Kind.HOST, "user_annotation"),
    "User Annotation": (Kind.HOST, "user_annotation"),
    "python_function": (Kind.HOST, "python_function"),
    "Python": (Kind.HOST, "python_function"),
    "cuda_runtime": (Kind.HOST, "cuda_runtime"),
    "Runtime": (Kind.HOST, "cuda_runtime"),
    "runtime": (Kind.HOST, "cuda_runtime"),
    "cuda_driver": (Kind.HOST, "cuda_driver"),
    "Driver": (Kind.HOST, "cuda_driver"),
    "cpu_instant_event": (Kind.HOST, "cpu_instant_event"),
    "kernel": (Kind.DEVICE, "kernel"),
    "Kernel": (Kind.DEVICE, "kernel"),
    "gpu_memcpy": (Kind.DEVICE, "gpu_memcpy"),
    "Memcpy": (Kind.DEVICE, "gpu_memcpy"),
    "gpu_memset": (Kind.DEVICE, "gpu_memset"),
    "Memset": (Kind.DEVICE, "gpu_memset"),
    "gpu_user_annotation": (Kind.GPU_ANNOTATION, "gpu_user_annotation"),
    "cuda_sync": (Kind.SYNC, "cuda_sync"),
    "overhead": (Kind.OVERHEAD, "overhead"),
    "Trace": (Kind.SKIP, "Trace"),
}

# Categories whose events are framework ops: fwdbwd flows and memory attribution bind to them.
FRAMEWORK_OP_CATEGORIES = frozenset({"cpu_op", "user_annotation"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})

RENAMES = {
    "correlation": "correlation_id",
    "device": "device_id",
    "context": "context_id",
    "External id": "external_id",
    "external id": "external_id",
}
DROPPED_ARGS = frozenset({"Ev Idx", "Trace name", "Trace iteration"})
# A kernel's launch configuration lives in its `kernel_details` stat, not repeated as args.
KERNEL_DROPPED_ARGS = DROPPED_ARGS | {
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "est. achieved occupancy %",
}


def classify(category: Any, args: Any) -> tuple[Kind, str]:
    """Kind and normalised category; unknown categories go by their args."""
    known = CATEGORIES.get(category) if isinstance(category, str) else None
    if known is not None:
        return known
    name = str(category) if category is not None else "unknown"
    if isinstance(args, dict) and "stream" in args and "device" in args:
        return Kind.DEVICE, name
    return Kind.HOST, name


_INT_MIN = -(1 << 63)
_UINT_LIMIT = 1 << 64


def convert_args(
    args: dict[str, Any], dropped: frozenset[str] = DROPPED_ARGS
) -> dict[str, StatValue]:
    """Event args -> stats (see module docstring); ``dropped`` args are left out."""
    stats: dict[str, StatValue] = {}
    get_name = RENAMES.get
    for key, value in args.items():
        if key in dropped:
            continue
        kind = type(value)
        if kind is int:
            if not _INT_MIN <= value < _UINT_LIMIT:  # neither int64 nor uint64: damage
                raise OverflowError(f"argument {key!r} = {value} does not fit 64 bits")
            stats[get_name(key, key)] = value
        elif kind is str or kind is float:
            stats[get_name(key, key)] = value
        elif value is None:
            continue
        elif kind is bool:
            stats[get_name(key, key)] = int(value)
        else:
            stats[get_name(key, key)] = _json_text(value)
    return stats


# List args repeat heavily (the same shapes and dtypes for every call of an op): their JSON
# text is computed once per distinct value, found by ``str(value)`` (C speed, and a function of
# the value just as the JSON text is).
_JSON_TEXT: dict[str, str] = {}


# A JSON list text that `json.dumps` writes back byte for byte once it is decoded: brackets,
# ", " between items, integers of at most 18 digits (int64 whatever decodes them; no "-0",
# which decodes to 0) and strings of printable ASCII without a quote or backslash (which
# `json.dumps` writes as they are). Valid JSON (the scanner checked it) made of these tokens
# only is such a list, however nested. Kineto writes its list args so ("Input Dims",
# "Input type", "Concrete Inputs", ...): every one of the 611 in the timesformer fixture.
_DUMPS_FORM = re.compile(
    rb'(?:\[|\]|, |(?:0|-?[1-9][0-9]{0,17})(?![0-9])|"[\x20\x21\x23-\x5b\x5d-\x7e]*")*'
)


def json_text_of_raw(raw: bytes) -> str | None:
    """``json.dumps`` of the value that ``raw`` (a valid JSON list's text) decodes to,
    without decoding it, when ``raw`` is already that text (`_DUMPS_FORM`); else None."""
    if raw[:1] == b"[" and _DUMPS_FORM.fullmatch(raw):
        return raw.decode("ascii")
    return None


def _json_text(value: Any) -> str:
    """``json.dumps(value)``, memoized."""
    key = str(value)
    text = _JSON_TEXT.get(key)
    if text is None:
        if len(_JSON_TEXT) >= 1 << 16:  # bounded: a trace with endless distinct values
            _JSON_TEXT.clear()
        text = _JSON_TEXT[key] = json.dumps(value)
    return text


def _triple(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        parts = [str(int(v)) if isinstance(v, (int, float)) else "1" for v in value[:3]]
        parts += ["1"] * (3 - len(parts))
        return ",".join(parts)
    return "1,1,1"


def _number(value: Any, default: float = 0) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else format(value, "g")


def kernel_details(args: dict[str, Any]) -> str | None:
    """XSpace ``kernel_details`` from Kineto kernel args; None without a launch configuration.

    Kineto reports one ``shared memory`` figure (static + dynamic); it goes to static_shared
    and dynamic_shared is 0.
    """
    grid = args.get("grid")
    block = args.get("block")
    if grid is None and block is None:
        return None
    regs = args.get("registers per thread", 0)
    shared = args.get("shared memory", 0)
    occupancy = args.get("est. achieved occupancy %", 0)
    if (
        type(regs) is int
        and type(shared) is int
        and type(occupancy) is int
        and type(grid) is list
        and len(grid) == 3
        and type(block) is list
        and len(block) == 3
    ):
        # Kineto's usual form, formatted directly (tens of thousands of kernels per trace).
        return (
            f"regs:{regs} static_shared:{shared} dynamic_shared:0 "
            f"grid:{grid[0]},{grid[1]},{grid[2]} block:{block[0]},{block[1]},{block[2]} "
            f"occ_pct:{occupancy}"
        )
    return (
        f"regs:{_fmt(_number(args.get('registers per thread')))}"
        f" static_shared:{_fmt(_number(args.get('shared memory')))}"
        f" dynamic_shared:0"
        f" grid:{_triple(args.get('grid'))}"
        f" block:{_triple(args.get('block'))}"
        f" occ_pct:{_fmt(_number(args.get('est. achieved occupancy %')))}"
    )


# Kineto memcpy kinds (CUPTI names; A = CUDA array, a device allocation) -> XSpace names.
_MEMCPY_KINDS = {
    "HtoD": "HToD",
    "DtoH": "DToH",
    "DtoD": "DToD",
    "HtoH": "HToH",
    "PtoP": "P2P",
    "HtoA": "HToD",
    "AtoH": "DToH",
    "AtoA": "DToD",
    "AtoD": "DToD",
    "DtoA": "DToD",
}


def memcpy_name(name: str, args: dict[str, Any]) -> tuple[str, str, str]:
    """(XSpace name, source kind, destination kind) of a Kineto memcpy.

    ``Memcpy HtoD (Pageable -> Device)`` -> ``MEMCPYHToD``, ``pageable``, ``device``. The
    direction comes from the name, else from AMD's ``kind`` arg; unknown ones stay visible as
    ``MEMCPYOther``.
    """
    words = name.split()
    direction = words[1] if len(words) > 1 and words[0].lower() == "memcpy" else ""
    if direction not in _MEMCPY_KINDS:
        kind_arg = args.get("kind")
        direction = kind_arg if isinstance(kind_arg, str) else direction
    mapped = _MEMCPY_KINDS.get(direction, "Other")
    src = dst = ""
    if "(" in name and "->" in name:
        inner = name[name.index("(") + 1 :].rstrip(")")
        left, _, right = inner.partition("->")
        src, dst = left.strip().lower(), right.strip().lower()
    return "MEMCPY" + mapped, src, dst


def _num_bytes(args: dict[str, Any]) -> list[str]:
    """``num_bytes:N`` when the trace gives the size (AMD traces often do not)."""
    size = _number(args.get("bytes"), -1)
    return [f"num_bytes:{int(size)}"] if size >= 0 else []


def memcpy_details(args: dict[str, Any], src: str, dst: str) -> str:
    parts = _num_bytes(args)
    if src:
        parts.append(f"kind_src:{src}")
    if dst:
        parts.append(f"kind_dst:{dst}")
    return " ".join(parts)


def memset_details(name: str, args: dict[str, Any]) -> str:
    parts = _num_bytes(args)
    if "(" in name:
        parts.append(f"kind:{name[name.index('(') + 1 :].rstrip(')').strip().lower()}")
    return " ".join(parts)


def step_number(name: str) -> int | None:
    """N of a ``ProfilerStep#N`` annotation (beyond int64 it cannot be a step_num stat: the
    event stays, without a step number)."""
    return profiler_step_number(name)
