"""XSpace bytes -> raw columns, the input of the columnar model.

Two implementations give identical results: the C accelerator `_fastwire` (built at install
time when a compiler is present) and a protobuf-based fallback. `decode_columns` picks the
accelerator when `stepscope.accelerators` gives it (`STEPSCOPE_PURE_PYTHON=1` forces the
fallback).

The raw form keeps XSpace's plane-local metadata ids; `stepscope.model` maps them to
profile-wide interned names.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Sequence
from types import ModuleType

import numpy as np

from stepscope import accelerators, limits, workers
from stepscope.records import record
from stepscope.xspace import headers
from stepscope.xspace.headers import PlaneHeader, SpaceHeader

TYPE_CHECKING = False  # protobuf only where a message is parsed: not with the C decoder
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XSpace

# Stat value kinds in `RawColumns.st_kind` (and in the model).
KIND_NONE, KIND_INT, KIND_UINT, KIND_DOUBLE, KIND_STR, KIND_BYTES, KIND_REF = range(7)


@record
class RawLine:
    """One line of a decoded plane: its ids, names, timestamp and event range."""

    plane: int
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    first_event: int
    event_count: int


@record(frozen=False)
class RawColumns:
    """Decoded XSpace: small structures as `headers`' classes, events and stats as arrays.

    Events are in file order (plane, line, event); the stats of event i are rows
    ``ev_stat_start[i]:ev_stat_start[i + 1]``. For STR/BYTES stats ``st_value`` indexes
    ``strings``; for DOUBLE it holds the float64 bit pattern; for REF the stat metadata id.
    """

    space_header: SpaceHeader  # hostnames, errors, warnings (no planes)
    plane_headers: Sequence[PlaneHeader]  # id, name, metadata maps, plane stats
    lines: list[RawLine]
    ev_meta: np.ndarray  # int64, plane-local event metadata id
    ev_offset_ps: np.ndarray  # int64
    ev_duration_ps: np.ndarray  # int64
    ev_stat_start: np.ndarray  # int64, length n_events + 1
    ev_line: np.ndarray  # int32, index into `lines`
    st_meta: np.ndarray  # int64, plane-local stat metadata id
    st_kind: np.ndarray  # int8
    st_value: np.ndarray  # int64
    strings: list[bytes]
    aggregated_events: int  # events carrying num_occurrences instead of an offset

    @property
    def n_events(self) -> int:
        return len(self.ev_meta)


def _fastwire() -> ModuleType | None:
    return accelerators.get("_fastwire")


def accelerated() -> bool:
    """Whether the C decoder is in use."""
    return _fastwire() is not None


def row_owners(stat_start: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The event owning each of ``rows`` (stat rows counted from ``stat_start[0]``, in the
    layout of `RawColumns.ev_stat_start`): ``searchsorted(stat_start, rows + stat_start[0],
    "right") - 1``, int32 when ``rows`` are int32 and the events fit, else int64. The C module
    gallops from each answer to the next (ascending rows cost O(log gap) each: 6M rows in
    about 20 ms instead of NumPy's 0.2 s of binary searches), so callers need no column of
    every row's event."""
    narrow = rows.dtype == np.int32 and len(stat_start) <= 2**31
    rows = np.ascontiguousarray(rows, np.int32 if narrow else np.int64)
    fast = _fastwire()
    if fast is not None:
        out = np.empty(len(rows), dtype=rows.dtype)
        fast.row_owners(np.ascontiguousarray(stat_start, np.int64), rows, out)
        return out
    found = np.searchsorted(stat_start, rows + np.int64(stat_start[0]), "right") - 1
    return found.astype(rows.dtype, copy=False)


def last_at_or_before(owners: np.ndarray, events: np.ndarray) -> np.ndarray:
    """Per event, the position of the last of ``owners`` (ascending event numbers: a stat's
    or an argument's rows) at or before it, -1 when none: ``np.searchsorted(owners, events,
    "right") - 1``, by one merge in C when the events ascend (the usual ask: 2 ms -> 0.2 ms
    for 65k kernels' correlation ids). Read-only."""
    fast = _fastwire()
    if fast is not None and owners.dtype == np.int32:
        found = fast.last_at_or_before(
            np.ascontiguousarray(owners), np.ascontiguousarray(events, dtype=np.int64)
        )
        if found is not None:
            return np.frombuffer(found, np.int64)
    return np.searchsorted(owners, events, side="right") - 1


# The pure-Python decoder's peak memory per input byte on crafted input (protobuf's messages,
# about 40 bytes per byte of empty events, then the columns); it cannot count before parsing.
FALLBACK_BYTES_PER_BYTE = 48


def decode_columns(
    data: bytes | mmap.mmap, source: str = "<bytes>", threads: int | None = None
) -> RawColumns:
    """Decode serialized XSpace bytes, the events by ``threads`` workers (default
    ``$STEPSCOPE_THREADS``; the same columns with any number). Raises ValueError on corrupt
    data and `ProfileTooLargeError` when the result would exceed `limits.max_profile_bytes()`."""
    fast = _fastwire()
    if fast is not None:
        return _decode_fast(fast, data, source, workers.threads() if threads is None else threads)
    from google.protobuf.message import DecodeError

    from stepscope.xspace.proto.xplane_pb2 import XSpace

    try:
        limits.check(
            source,
            "decoding this XSpace (pure-Python decoder)",
            len(data) * FALLBACK_BYTES_PER_BYTE,
        )
        space = XSpace()
        space.ParseFromString(bytes(data) if isinstance(data, mmap.mmap) else data)
    except DecodeError as exc:
        raise ValueError(str(exc)) from exc
    return columns_from_message(space)


def _decode_fast(
    fast: ModuleType, data: bytes | mmap.mmap, source: str, threads: int
) -> RawColumns:
    limit = limits.max_profile_bytes()
    try:
        header, planes, columns, strings, aggregated = fast.decode(data, limit, threads)
    except MemoryError as exc:
        needed = exc.args[1] if len(exc.args) == 2 and isinstance(exc.args[1], int) else None
        raise limits.ProfileTooLargeError(source, "decoding this XSpace", needed, limit) from exc
    # The headers by the C parsers: no protobuf import (about 11 ms per process).
    space_header = headers.space_header_of(fast.space_header(header))
    plane_headers = [headers.plane_header_of(fast.plane_header(plane)) for plane, _ in planes]
    lines: list[RawLine] = []
    for plane_index, (_, plane_lines) in enumerate(planes):
        for line_id, display_id, name, display_name, ts, dur, first, count in plane_lines:
            lines.append(
                RawLine(
                    plane_index,
                    line_id,
                    display_id,
                    name.decode("utf-8", "replace"),
                    display_name.decode("utf-8", "replace"),
                    ts,
                    dur,
                    first,
                    count,
                )
            )
    dtypes = {"ev_line": np.int32, "st_kind": np.int8}
    arrays = {
        name: np.frombuffer(buf, dtype=dtypes.get(name, np.int64)) for name, buf in columns.items()
    }
    return RawColumns(
        space_header,
        plane_headers,
        lines,
        strings=list(strings),
        aggregated_events=int(aggregated),
        **arrays,
    )


def columns_from_message(space: XSpace) -> RawColumns:
    """The fallback: walk a parsed XSpace message (about 1M events/s)."""
    n_events = sum(len(line.events) for plane in space.planes for line in plane.lines)
    n_stats = sum(len(e.stats) for p in space.planes for line in p.lines for e in line.events)
    ev_meta = np.zeros(n_events, np.int64)
    ev_offset = np.zeros(n_events, np.int64)
    ev_dur = np.zeros(n_events, np.int64)
    ev_stat_start = np.zeros(n_events + 1, np.int64)
    ev_line = np.zeros(n_events, np.int32)
    st_meta = np.zeros(n_stats, np.int64)
    st_kind = np.zeros(n_stats, np.int8)
    st_value = np.zeros(n_stats, np.int64)
    interned: dict[bytes, int] = {}
    strings: list[bytes] = []
    lines: list[RawLine] = []
    plane_headers: list[PlaneHeader] = []
    aggregated = 0
    ev = st = 0
    for plane_index, plane in enumerate(space.planes):
        plane_headers.append(headers.plane_header_from_message(plane))
        for line in plane.lines:
            first = ev
            for event in line.events:
                ev_meta[ev] = event.metadata_id
                if event.WhichOneof("data") == "num_occurrences":
                    aggregated += 1
                else:
                    ev_offset[ev] = event.offset_ps
                ev_dur[ev] = event.duration_ps
                ev_line[ev] = len(lines)
                ev_stat_start[ev] = st
                for stat in event.stats:
                    st_meta[st] = stat.metadata_id
                    st_kind[st], st_value[st] = _stat_value(stat, interned, strings)
                    st += 1
                ev += 1
            lines.append(
                RawLine(
                    plane_index,
                    line.id,
                    line.display_id,
                    line.name,
                    line.display_name,
                    line.timestamp_ns,
                    line.duration_ps,
                    first,
                    ev - first,
                )
            )
    ev_stat_start[n_events] = st
    return RawColumns(
        headers.space_header_from_message(space),
        plane_headers,
        lines,
        ev_meta,
        ev_offset,
        ev_dur,
        ev_stat_start,
        ev_line,
        st_meta,
        st_kind,
        st_value,
        strings,
        aggregated,
    )


def _stat_value(stat: object, interned: dict[bytes, int], strings: list[bytes]) -> tuple[int, int]:
    which = stat.WhichOneof("value")  # type: ignore[attr-defined]
    if which is None:
        return KIND_NONE, 0
    value = getattr(stat, which)
    if which == "double_value":
        return KIND_DOUBLE, struct.unpack("<q", struct.pack("<d", value))[0]
    if which == "int64_value":
        return KIND_INT, value
    if which == "uint64_value":
        return KIND_UINT, value - (1 << 64) if value >= 1 << 63 else value
    if which == "ref_value":
        return KIND_REF, value - (1 << 64) if value >= 1 << 63 else value
    raw = value.encode("utf-8") if which == "str_value" else value
    index = interned.get(raw)
    if index is None:
        index = interned[raw] = len(strings)
        strings.append(raw)
    return (KIND_STR if which == "str_value" else KIND_BYTES), index
