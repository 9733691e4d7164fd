"""Raw columns -> serialized XSpace bytes, the events encoded as columns (no per-event Python).

`encode_space(raw)` is the inverse of `wire.decode_columns`: the bytes parse to an XSpace
whose planes, lines, events, stats and metadata are those of ``raw`` (field order and map
order may differ from protobuf's own serializer; the parsed messages are equal). A capture's
save writes the merged profile with it: the framework's 100k events cost a few array passes
instead of a protobuf message each.

Headers (plane metadata, plane stats, hostnames) are small and go through protobuf's own
serializer; the events and their stats are encoded by `pb_columns`, and the lines are cut out
of the encoded events: every line holds a contiguous range of them (`RawLine.first_event`).

Not encodable: aggregated events (``num_occurrences``: `RawColumns` does not keep the count),
and metadata fields the headers drop (event metadata ``metadata`` / ``child_id``, stat
metadata ``description``): ``raw`` holds none of these when it comes from the Kineto importer
or a capture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stepscope.xspace import pb_columns as pb
from stepscope.xspace.headers import HeaderStat, PlaneHeader
from stepscope.xspace.wire import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT,
    KIND_REF,
    KIND_STR,
    KIND_UINT,
    RawColumns,
    RawLine,
)

if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XPlane, XStat

_WIRE_VARINT, _WIRE_FIXED64, _WIRE_LEN = 0, 1, 2


def _key(number: int, wire: int) -> bytes:
    return pb.varint_bytes((number << 3) | wire)


def _len_field(number: int, payload: bytes) -> bytes:
    return _key(number, _WIRE_LEN) + pb.varint_bytes(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return _key(number, _WIRE_VARINT) + pb.varint_bytes(value) if value else b""


def _stat_messages(raw: RawColumns) -> pb.Encoded:
    """Every stat row as an XStat message, wrapped as field 4 of its event (``stats``)."""
    n = len(raw.st_meta)
    kind, value = raw.st_kind, raw.st_value
    texts = raw.strings or [b""]  # one empty string: an index for the rows without one
    sizes = np.fromiter((len(s) for s in texts), np.int64, len(texts))
    text_buf = np.frombuffer(b"".join(texts), np.uint8)
    text_start = np.cumsum(sizes) - sizes
    fields = [pb.varint(1, raw.st_meta)]
    for number, code in ((3, KIND_UINT), (4, KIND_INT), (7, KIND_REF)):
        fields.append(pb.varint(number, value, kind == code))
    fields.append(pb.fixed64(2, value, kind == KIND_DOUBLE))  # value holds the float's bits
    for number, code in ((5, KIND_STR), (6, KIND_BYTES)):
        present = kind == code
        index = np.where(present, value, 0)
        field = pb.Field(pb.tag(number, _WIRE_LEN), pb.BLOB, text_start[index], present)
        field.source, field.lengths = text_buf, sizes[index]
        fields.append(field)
    return pb.encode([pb.nested(4, fields)], n)  # each written in place: no second copy


def _event_messages(raw: RawColumns) -> pb.Encoded:
    """Every event as an XEvent message, wrapped as field 4 of its line (``events``)."""
    n = raw.n_events
    wrapped_stats = _stat_messages(raw)
    # the stats of event i: rows ev_stat_start[i]:ev_stat_start[i + 1] (from ev_stat_start[0])
    rows = raw.ev_stat_start - raw.ev_stat_start[0]
    ends = np.append(wrapped_stats.start, len(wrapped_stats.buf))
    first, last = ends[rows[:-1]], ends[rows[1:]]
    fields = [
        pb.varint(1, raw.ev_meta, raw.ev_meta != 0),
        pb.varint(2, raw.ev_offset_ps),  # a oneof member: written even when 0
        pb.varint(3, raw.ev_duration_ps, raw.ev_duration_ps != 0),
        pb.raw(wrapped_stats.buf, first, last - first),
    ]
    return pb.encode([pb.nested(4, fields)], n)


def _line_parts(line: RawLine, events: memoryview) -> list[bytes | memoryview]:
    """The XLine message's bytes in order, its events (fields 4) a view of the events' buffer."""
    return [
        _int_field(1, line.id),
        _len_field(2, line.name.encode("utf-8", "surrogateescape")) if line.name else b"",
        _int_field(3, line.timestamp_ns),
        events,
        _int_field(9, line.duration_ps),
        _int_field(10, line.display_id),
        _len_field(11, line.display_name.encode("utf-8", "surrogateescape"))
        if line.display_name
        else b"",
    ]


def _len_prefix(number: int, size: int) -> bytes:
    return _key(number, _WIRE_LEN) + pb.varint_bytes(size)


def _set_stat(stat: XStat, header: HeaderStat) -> None:
    stat.metadata_id = header.metadata_id
    if header.which and header.value is not None:
        setattr(stat, header.which, header.value)


def plane_message(header: PlaneHeader) -> XPlane:
    """The plane without lines, as a protobuf message."""
    from stepscope.xspace.proto.xplane_pb2 import XPlane

    plane = XPlane(id=header.id, name=header.name)
    for key, meta in header.event_metadata.items():
        entry = plane.event_metadata[key]
        entry.id, entry.name, entry.display_name = meta.id, meta.name, meta.display_name
        for stat in meta.stats:
            _set_stat(entry.stats.add(), stat)
    for key, stat_meta in header.stat_metadata.items():
        found = plane.stat_metadata[key]
        found.id, found.name = stat_meta.id, stat_meta.name
    for stat in header.stats:
        _set_stat(plane.stats.add(), stat)
    return plane


def encode_space(raw: RawColumns) -> bytes:
    """``raw`` as serialized XSpace bytes (see the module docstring)."""
    from stepscope.xspace.proto.xplane_pb2 import XSpace

    if raw.aggregated_events:
        raise ValueError("aggregated events (num_occurrences) cannot be encoded from columns")
    events = _event_messages(raw)
    view = events.buf.data  # a memoryview of the array
    ends = np.append(events.start, len(events.buf)).tolist()
    # The parts of each plane in order, the events as views of their buffer: one copy of
    # them, by the final join (copies per line and per plane faulted in fresh memory for
    # each: ~14k page faults of a 200-step stop's ~30k, decision 252).
    lines_of: list[list[bytes | memoryview]] = [[] for _ in raw.plane_headers]
    sizes_of = [0] * len(raw.plane_headers)
    for line in raw.lines:
        chunk = view[ends[line.first_event] : ends[line.first_event + line.event_count]]
        parts = _line_parts(line, chunk)
        size = sum(len(part) for part in parts)
        prefix = _len_prefix(3, size)
        lines_of[line.plane] += [prefix, *parts]
        sizes_of[line.plane] += len(prefix) + size
    out: list[bytes | memoryview] = []
    for header, lines, size in zip(raw.plane_headers, lines_of, sizes_of, strict=True):
        plane = plane_message(header).SerializeToString()
        out += [_len_prefix(1, len(plane) + size), plane, *lines]
    head = raw.space_header
    tail = XSpace(hostnames=head.hostnames, errors=head.errors, warnings=head.warnings)
    out.append(tail.SerializeToString())
    return b"".join(out)
