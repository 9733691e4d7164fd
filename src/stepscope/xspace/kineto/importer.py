"""Kineto (PyTorch profiler) Chrome-trace JSON -> XSpace.

`kineto_to_xspace(path)` reads ``.json`` or ``.json.gz`` (gzip found by its magic number; a
truncated gzip stream is decompressed as far as it goes, with a warning);
`kineto_bytes_to_xspace(data, source)` does the same for bytes. Damaged JSON is repaired where
possible (see `json_repair`); every repair or dropped event is reported in ``XSpace.warnings``.
One route (docs/formats/kineto.md, "How a trace is read"): `kineto_to_columns(path)` (how
`stepscope` opens a trace) and `kineto_bytes_to_columns(data, source)` scan the trace into
columns (`scan`: the C scanner, or `pyscan`, its Python twin) and route them with numpy
(`fast_route`, `fast_stats`, `fast_memory`); `kineto_to_xspace` / `kineto_bytes_to_xspace`
write those columns as XSpace. There is no other route: the tests check it against the Kineto
rules applied event by event (tests/support/kineto_oracle).

The event mapping is described in `categories`, `fast_memory` and `devices`, and in
docs/formats/kineto.md. Decisions taken here:

- Planes, in order: ``/host:CPU`` (always), ``/device:GPU:N`` by N, ``/host:CUPTI`` (when the
  trace has CUPTI overhead events), ``Task Environment``; plane ids are their positions.
- ``Task Environment`` stats: ``profile_start_time`` / ``profile_stop_time`` (ns) = the union
  of all events and of the profiler's own ``Trace`` span, ``kineto_trace_stop_time`` that
  span's end (where the recording stopped; decision 1075); ``framework = "pytorch"``,
  ``trace_format = "kineto"``, and the header scalars (``schemaVersion``, CUDA / HIP / CUPTI
  versions, ``record_shapes``, ``profile_memory``, ``with_stack``, ``trace_id``, ...) under their
  Kineto names.
- Host name: ``rank<N>`` when ``distributedInfo`` gives the rank, else the file name without
  ``.gz``, ``.json``, ``.pt.trace`` and PyTorch's ``.<time_ns>`` suffix.
- ``fwdbwd`` flows: the forward op gets ``_p`` = flow id, ``_pt`` = 0 and the backward op
  ``_c`` = flow id, ``_ct`` = 0 (XProf's generic context type); the ops are the ``cpu_op`` /
  ``user_annotation`` events starting where the flow ends are bound (same pid, tid and ts).
- ``ac2g`` flows (2021: ``async``/``launch``): launches and kernels already share ``correlation``
  (-> ``correlation_id``); the flow id fills it in where an event lacks it.
- Kineto's own ``WARNING`` / ``ERROR`` log lines become XSpace warnings / errors.
"""

from __future__ import annotations

import gc
import io
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from stepscope import limits
from stepscope.errors import ProfileFormatError, empty_file
from stepscope.vocab.pytorch import RECORDING_STOP_STAT
from stepscope.xspace.builder import LineBuilder, PlaneBuilder, StatValue, XSpaceBuilder
from stepscope.xspace.kineto import fast_memory, fast_route, fwdbwd, scan
from stepscope.xspace.kineto.canonical import canonical
from stepscope.xspace.kineto.classified import Classified
from stepscope.xspace.kineto.columns import ColumnLine, ColumnPlane, ColumnSpace
from stepscope.xspace.kineto.decode import HEADER_STATS
from stepscope.xspace.kineto.devices import (
    MEMORY_LINE_ID,
    device_plane_stats,
    device_properties,
    distributed_stats,
    normalize_tid,
    thread_line_name,
    trace_vendor,
)
from stepscope.xspace.kineto.state import CUPTI_PLANE, HOST_PLANE, RouteState
from stepscope.xspace.raw_io import (
    GZIP_MAGIC,
    GunzipStream,
    gunzip_bounded,
    is_url,
    read_raw_bytes,
)
from stepscope.xspace.wire import RawColumns

if TYPE_CHECKING:  # XSpace messages only for kineto_to_xspace: columns need no protobuf
    from stepscope.xspace.proto.xplane_pb2 import XSpace

TASK_ENV_PLANE = "Task Environment"
FWDBWD_CONTEXT_TYPE = fwdbwd.FWDBWD_CONTEXT_TYPE
_LAUNCH_FLOW_CATEGORIES = ("ac2g", "async")
_TIME_SUFFIX = re.compile(r"\.\d{9,}$")
_NON_BLANK = re.compile(rb"\S")
INT64_MIN = -(1 << 63)


def kineto_to_xspace(path: str | os.PathLike[str]) -> XSpace:
    """Read a PyTorch profiler trace (``.json`` / ``.json.gz``) into an XSpace: the columns of
    `kineto_to_columns`, written as the XSpace message they describe."""
    return _message(kineto_to_columns(path))


def kineto_to_columns(path: str | os.PathLike[str]) -> RawColumns:
    """The trace as the columnar model's input (no protobuf): how `stepscope` opens it."""
    warnings: list[str] = []
    scanned = _scan_file(path)
    box: list[bytes | scan.ScannedTrace] = [_read(path, warnings) if scanned is None else scanned]
    del scanned
    return _columns(box, str(path), warnings, None)


def kineto_bytes_to_columns(data: bytes, source: str = "<bytes>") -> RawColumns:
    """`kineto_to_columns` for the (possibly gzip-compressed) bytes of a trace; ``source``
    names it in messages (and gives the host name, as a file name does)."""
    warnings: list[str] = []
    text = _inflate(data, source, warnings)
    del data
    scanned = _scan_reader(io.BytesIO(text), source) if scan.available() else None
    box: list[bytes | scan.ScannedTrace] = [text if scanned is None else scanned]
    del scanned
    return _columns(box, source, warnings, text)


def kineto_bytes_to_xspace(data: bytes, source: str = "<bytes>") -> XSpace:
    """Like `kineto_to_xspace` for the (possibly gzip-compressed) bytes of a trace."""
    return _message(kineto_bytes_to_columns(data, source))


def _columns(
    box: list[bytes | scan.ScannedTrace], source: str, warnings: list[str], text: bytes | None
) -> RawColumns:
    # One numbering, whichever scanner (C or Python) made the columns.
    return canonical(_convert(box, source, warnings, text))


def _message(raw: RawColumns) -> XSpace:
    from stepscope.xspace.columns_pb import encode_space
    from stepscope.xspace.proto.xplane_pb2 import XSpace

    return XSpace.FromString(encode_space(raw))


def _read(path: str | os.PathLike[str], warnings: list[str]) -> bytes:
    return _inflate(read_raw_bytes(path), str(path), warnings)


def _scan_file(path: str | os.PathLike[str]) -> scan.ScannedTrace | None:
    """The trace's columns, its text streamed through the C scanner (``.json`` read, ``.json.gz``
    inflated, a window at a time: the text is never held whole); None when the scanner is not
    built or does not model the trace (the caller then reads the file whole, reporting any
    problem with it in its words)."""
    if not scan.available():
        return None
    text = str(path)
    limit = limits.max_profile_bytes()
    if is_url(text):
        raw = read_raw_bytes(path)
        return _scan_reader(
            GunzipStream(raw, text, limit // 2) if raw[:2] == GZIP_MAGIC else io.BytesIO(raw), text
        )
    try:
        handle = open(text.removeprefix("file://"), "rb", buffering=0)  # noqa: SIM115
    except OSError:
        return None
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise limits.ProfileTooLargeError(text, "this file", size, limit)
            gzipped = handle.read(2) == GZIP_MAGIC
            handle.seek(0)
            # Parsing JSON takes at least twice the text's size (see `parse_memory_estimate`),
            # so inflating more than half the limit would be wasted (as `_gunzip`).
            reader = GunzipStream(handle, text, limit // 2, 1 << 16) if gzipped else handle
            return _scan_reader(reader, text)
        except OSError:  # reported by the plain read, in its words
            return None


def _scan_reader(
    reader: GunzipStream | io.RawIOBase | io.BytesIO, source: str
) -> scan.ScannedTrace | None:
    limit = limits.max_profile_bytes()
    scanned = scan.scan_stream(reader.readinto, limit)
    if isinstance(scanned, int):
        raise limits.ProfileTooLargeError(source, "parsing this JSON", scanned, limit)
    if isinstance(reader, GunzipStream) and reader.damaged:
        return None  # the Python scanner reads what precedes the damage, and says so
    return scanned


def _inflate(data: bytes, source: str, warnings: list[str]) -> bytes:
    """The trace's JSON text: gzip inflated (bounded), a damaged stream read up to the damage."""
    if data[:2] == GZIP_MAGIC:
        data = _gunzip(data, source, warnings)
    _check_not_blank(data, source)
    return data


def _check_not_blank(data: bytes, source: str) -> None:
    if _NON_BLANK.search(data) is None:  # no strip(): it would copy the whole file
        raise empty_file(source)


def _gunzip(raw: bytes, source: str, warnings: list[str]) -> bytes:
    """Decompress gzip data (bounded); a truncated or corrupt stream gives what precedes it."""
    # Parsing JSON takes at least twice the text's size (see `parse_memory_estimate`), so
    # inflating more than half the limit would be wasted.
    data, damaged = gunzip_bounded(raw, source, limits.max_profile_bytes() // 2)
    if not damaged:
        return data
    if _NON_BLANK.search(data) is None:
        raise ProfileFormatError(source, "gzip data is truncated or corrupt", "copy the file again")
    warnings.append(f"gzip data is truncated or corrupt: read the first {len(data)} bytes only")
    return data


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: a trace is millions of acyclic objects, and the collections that
    their allocation triggers would walk them all again and again (a third of the run time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _convert(
    box: list[bytes | scan.ScannedTrace], source: str, warnings: list[str], text: bytes | None
) -> RawColumns:
    """The trace's columns as the columnar model's input.

    ``box`` holds the trace's bytes (or its scanned columns), taken out so that they are freed
    once decoded (the callers keep no reference: they are the largest thing alive). ``text``:
    the trace's text when the caller holds it (else it is read from ``source`` when needed).
    """
    with _gc_paused():
        try:
            doc, classified = _classified(box, source, warnings, text)
            base = doc.get("baseTimeNanoseconds")
            builder = ColumnSpace(hostname=_hostname(doc, source))
            state = RouteState(builder, base if type(base) is int else 0)
            if not classified.trace.n_events:
                warnings.append("the trace has no events")
            fast_route.route(state, classified)

            finish(state, doc, warnings, partial(fast_memory.add_memory, state, classified))
            # The trace's columns and their classification are read: freed before the output's
            # columns are made (decision 451)
            del classified, state
            return builder.to_raw_columns()
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
            # Events with bad fields are skipped one by one; this is damage beyond that (in
            # the header, or times too far apart for XSpace's picosecond offsets).
            raise ProfileFormatError(
                source,
                f"cannot convert this trace: {type(exc).__name__}: {str(exc)[:120]}",
                "the file looks damaged; if torch.profiler wrote it as is, please report it",
            ) from exc


def _classified(
    box: list[bytes | scan.ScannedTrace], source: str, warnings: list[str], text: bytes | None
) -> tuple[dict[str, Any], Classified]:
    """The header and the classified columns: the C scanner's, or the Python scanner's where
    the C one flagged events it does not read (F_BAD) or did not scan the trace."""
    item = box.pop()
    if isinstance(item, scan.ScannedTrace) and not np.any(item.flags & scan.F_BAD):
        return _classify(item)
    if isinstance(item, scan.ScannedTrace):
        data = text if text is not None else _read(source, warnings)
    else:
        data = item
    del item, text
    from stepscope.xspace.kineto import pyscan  # (msgspec: not imported on the C route)

    scanned = pyscan.scan_bytes(data, source, warnings)
    del data  # (freed before routing)
    if scanned is None:
        raise ProfileFormatError(
            source,
            "is JSON but not a PyTorch profiler (Kineto) trace: it has no traceEvents list",
            "expected the .json / .json.gz written by torch.profiler",
        )
    return _classify(scanned)


def finish(
    state: RouteState,
    doc: dict[str, Any],
    warnings: list[str],
    add_memory: Callable[[dict[int, int]], None],
) -> None:
    """The steps after routing: flows bound, threads named, the Memory line (``add_memory``
    given the device memory sizes), plane stats, the warnings (the tests' per-event oracle
    runs them too)."""
    builder = state.builder
    _bind_flows(state, warnings)
    _name_threads(state)
    props = device_properties(doc)
    sizes = {
        device: size
        for device, entry in props.items()
        if isinstance(size := entry.get("totalGlobalMem"), int)
    }
    add_memory(sizes)
    vendor = trace_vendor(doc)
    for device, plane in state.device_planes.items():
        plane.stats.update(device_plane_stats(props.get(device), vendor))
    state.host.stats.update(distributed_stats(doc))
    _finish_planes(builder, state, doc)
    for what, count in sorted(state.skipped.items()):
        warnings.append(f"skipped {count} {what}")
    builder.warnings.extend(warnings)
    builder.warnings.extend(_kineto_log(doc, "WARNING"))
    builder.errors.extend(_kineto_log(doc, "ERROR"))


def _classify(scanned: scan.ScannedTrace) -> tuple[dict[str, Any], Classified]:
    """The header and the classified columns."""
    doc = scanned.header
    base = doc.get("baseTimeNanoseconds")
    base = base if type(base) is int else 0
    return doc, fast_route.classify(scanned, base)


def _hostname(doc: dict[str, Any], source: str) -> str:
    info = doc.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return f"rank{info['rank']}"
    if source.startswith("<"):  # "<bytes>": no file name to go by
        return "localhost"
    name = Path(source).name
    for suffix in (".gz", ".json", ".pt.trace"):
        name = name.removesuffix(suffix)
    return _TIME_SUFFIX.sub("", name) or "localhost"


def _bind_flows(state: RouteState, warnings: list[str]) -> None:
    unbound = 0
    bound = state.fwdbwd
    if bound is not None:  # the column route's fwdbwd flows, bound on arrays
        fwdbwd.add_stats(bound, cast("list[ColumnLine]", state.lines))
        unbound = bound.unbound
    launches: dict[tuple[object, object, object], object] = {}
    for flow in state.flows:
        cat = flow.cat
        key = (flow.pid, normalize_tid(flow.tid), flow.ts)
        if cat == "fwdbwd":
            ref = state.ops_by_start.get(key)
            flow_id = flow.id
            if ref is None or not isinstance(flow_id, int):
                unbound += 1
                continue
            line, index = ref
            if flow.ph == "s":
                line.add_stats(index, {"_p": flow_id, "_pt": FWDBWD_CONTEXT_TYPE})
            else:
                line.add_stats(index, {"_c": flow_id, "_ct": FWDBWD_CONTEXT_TYPE})
        elif cat in _LAUNCH_FLOW_CATEGORIES and state.uncorrelated:
            launches[key] = flow.id
    for start, (line, index) in state.uncorrelated.items():
        launch_id = launches.get(start)
        if isinstance(launch_id, int):
            line.add_stats(index, {"correlation_id": launch_id})
    if unbound:
        warnings.append(f"{unbound} fwdbwd flow ends matched no op (left out)")


def _name_threads(state: RouteState) -> None:
    for key, line in state.host_lines.items():
        line.name = thread_line_name(state.thread_names.get(key), key[1])


def _finish_planes(builder: XSpaceBuilder, state: RouteState, doc: dict[str, Any]) -> None:
    lo: int | None = None
    hi: int | None = None
    for plane in builder.planes:
        lines = plane.column_lines if isinstance(plane, ColumnPlane) else plane.lines
        for line in lines:
            span = _time_range(line)
            if span is not None:
                lo = span[0] if lo is None else min(lo, span[0])
                hi = span[1] if hi is None else max(hi, span[1])
        lines.sort(key=lambda line: (line.id >= MEMORY_LINE_ID, line.id))
    for start, end in state.spans:
        lo = start if lo is None else min(lo, start)
        hi = end if hi is None else max(hi, end)
    env = builder.plane(TASK_ENV_PLANE)
    env.stats.update(_environment_stats(doc, lo or 0, hi or 0))
    if state.spans:  # where the profiler stopped recording (decision 1075)
        env.stats[RECORDING_STOP_STAT] = max(end for _start, end in state.spans)
    builder.planes.sort(key=_plane_order)
    for index, plane in enumerate(builder.planes):
        plane.id = index


def _time_range(line: LineBuilder | ColumnLine) -> tuple[int, int] | None:
    """(first start, last end) of a line's events; sorts a `LineBuilder`'s events."""
    if isinstance(line, ColumnLine):
        return line.time_range()  # sorted when its columns are built
    line.sort_events()
    if not line.events:
        return None
    return line.events[0][1], max([start + dur for _meta, start, dur, _stats in line.events])


def _plane_order(plane: PlaneBuilder) -> tuple[int, int]:
    if plane.name == HOST_PLANE:
        return 0, 0
    if plane.name.startswith("/device:"):
        return 1, int(plane.name.rsplit(":", 1)[-1])
    return (2, 0) if plane.name == CUPTI_PLANE else (3, 0)


def _environment_stats(doc: dict[str, Any], start_ns: int, stop_ns: int) -> dict[str, StatValue]:
    stats: dict[str, StatValue] = {
        "profile_start_time": start_ns,
        "profile_stop_time": stop_ns,
        "framework": "pytorch",
        "trace_format": "kineto",
    }
    for key in HEADER_STATS:
        value = doc.get(key)
        if isinstance(value, bool):
            stats[key] = int(value)
        elif isinstance(value, (int, float, str)):
            stats[key] = value
    return stats


def _kineto_log(doc: dict[str, Any], level: str) -> list[str]:
    lines = doc.get(level)
    if not isinstance(lines, list):
        return []
    return [f"kineto: {line}" for line in lines if isinstance(line, str)]
