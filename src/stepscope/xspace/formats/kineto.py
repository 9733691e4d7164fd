"""PyTorch profiler (Kineto) Chrome-trace JSON, ``*.pt.trace.json[.gz]`` (docs/formats/kineto.md).

Any folder's traces form a run, one host per file (``{worker}.{time_ns}.pt.trace.json`` ->
host ``worker``). Other ``.json[.gz]`` files are Kineto traces too when they hold a JSON
object with ``traceEvents`` near its start. Reading converts the JSON straight to raw columns;
importing converts it to an XSpace named after the rank it recorded (``rank<N>``).
"""

from __future__ import annotations

import re
from pathlib import Path

from stepscope.xspace.formats import InputFormat, Stage

TYPE_CHECKING = False  # not typing's: see stepscope/__init__.py
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XSpace
    from stepscope.xspace.wire import RawColumns

_KINETO = re.compile(r"^(.*?)(?:\.(\d+))?\.pt\.trace\.json(?:\.gz)?$")
_JSON = re.compile(r"\.json(?:\.gz)?$")
_TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:')
SNIFF_BYTES = 1 << 16  # Kineto writes its metadata (device properties...) before the events
# The first event's time is in the head (after metadata: a 300-rank process group's config
# takes ~100 KB) and Kineto writes baseTimeNanoseconds after the events.
TIME_BYTES = 1 << 20
_BASE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d+)')
_TS = re.compile(rb'"ts"\s*:\s*(-?\d+(?:\.\d*)?)')


def host_name(base: str) -> str:
    match = _KINETO.match(base)
    if match:
        return match.group(1) or "worker"
    for suffix in (".json.gz", ".json"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def is_trace_head(head: bytes) -> bool:
    """Whether a file's first bytes are a JSON object with ``traceEvents``."""
    head = head.lstrip()
    return head.startswith(b"{") and _TRACE_EVENTS.search(head) is not None


def recorded_at(head: bytes, tail: bytes) -> int | None:
    """The time of the trace's first event in ns, as its profile places it (``ts`` in µs
    after ``baseTimeNanoseconds``, 0 when the trace has none, as the importer reads it)."""
    events = _TRACE_EVENTS.search(head)
    if events is None:
        return None
    ts = _TS.search(head, events.end())
    if ts is None:
        return None
    base = _BASE.search(tail) or _BASE.search(head, 0, events.start())
    try:
        return (int(base.group(1)) if base else 0) + round(float(ts.group(1)) * 1000)
    except (ValueError, OverflowError):
        return None


def _read(path: str, threads: int | None, stage: Stage) -> RawColumns:
    from stepscope.xspace.kineto import kineto_to_columns

    stage("importing PyTorch trace", 0.0)
    return kineto_to_columns(path)


def _to_xspace(path: str) -> tuple[XSpace, str]:
    from stepscope.xspace.kineto import kineto_to_xspace

    space = kineto_to_xspace(path)
    return space, (space.hostnames[0] if space.hostnames else Path(path).stem)


FORMAT = InputFormat(
    name="kineto",
    title="PyTorch (Kineto) trace",
    patterns=("*.pt.trace.json[.gz]", "*.json[.gz]"),
    layout="anywhere",
    host_file=lambda base: _KINETO.match(base) is not None,
    claims=lambda base: base.endswith((".json", ".json.gz")),
    host_name=host_name,
    read=_read,
    to_xspace=_to_xspace,
    probe_name=lambda base: _JSON.search(base) is not None,
    probe=is_trace_head,
    probe_bytes=SNIFF_BYTES,
    recorded_at=recorded_at,
    time_bytes=TIME_BYTES,
)
