"""Export a profile as a Perfetto protobuf trace (``Trace`` of ``TracePacket``s), the format
ui.perfetto.dev and trace_processor read natively.

Field numbers are Perfetto's (protos/perfetto/trace/: trace.proto, trace_packet.proto,
track_event/track_event.proto, track_descriptor.proto, process/thread_descriptor.proto,
debug_annotation.proto, interned_data/interned_data.proto). Layout:

- one packet of interned data first (event names, stat names, string stat values; iid = string
  id + 1), on one packet sequence (``trusted_packet_sequence_id`` 1), flagged as clearing the
  incremental state; every later packet is flagged as needing it;
- a process track per plane (``ProcessDescriptor`` pid, name; child tracks in our order) and a
  thread track per line (``ThreadDescriptor`` pid, tid = line id, the track name the trace
  viewer shows);
- events as ``TYPE_SLICE_BEGIN`` / ``TYPE_SLICE_END`` pairs at absolute nanosecond timestamps
  (zero-duration events: ``TYPE_INSTANT``), with their stats (and their metadata's) as debug
  annotations, and flows as ``flow_ids`` on the source and ``terminating_flow_ids`` on the
  destination. Perfetto stacks slices of a track by begin/end order, so only properly nested
  events stay on the line's track; an event that outlives its parent (async work) goes, with
  its descendants, to a child track per nesting row ("<line> · overlapping 3"), where events
  never overlap.

Packets are encoded a chunk of events at a time with numpy (`pb_columns`), so the file is
written as a stream in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from stepscope.export.chrome_trace import _SHOWN_KINDS, Progress, _pids, selected_events
from stepscope.model import Profile
from stepscope.stats.trace_index.flows import FlowTable, build_flows
from stepscope.stats.trace_index.lod import line_order, nesting_depth, nesting_parents
from stepscope.stats.trace_index.tracks import sections
from stepscope.xspace.pb_columns import (
    Encoded,
    blob,
    const,
    encode,
    fixed64,
    nested,
    raw,
    strings_column,
    tag,
    varint,
    varint_bytes,
)
from stepscope.xspace.wire import KIND_BYTES, KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT

CHUNK = 200_000
SEQUENCE = 1
SEQ_CLEARED, SEQ_NEEDS_STATE = 1, 2
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3
CHILD_ORDER_EXPLICIT = 3
_LINE_UUID, _OVERFLOW_UUID, _PLANE_UUID = 1 << 40, 2 << 40, 3 << 40


# ---- single messages (tracks, a few hundred at most) ---------------------------------------


def _int(field: int, value: int) -> bytes:
    return tag(field, 0) + varint_bytes(value)


def _len(field: int, data: bytes) -> bytes:
    return tag(field, 2) + varint_bytes(len(data)) + data


def _text(field: int, text: str) -> bytes:
    return _len(field, text.encode("utf-8", "surrogatepass"))


def _packet(body: bytes) -> bytes:
    """A Trace.packet (field 1) on our sequence."""
    return _len(1, body + _int(10, SEQUENCE) + _int(13, SEQ_NEEDS_STATE))


# ---- nesting -----------------------------------------------------------------------------


def _nesting(profile: Profile, depth: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(depth, off_stack): off_stack marks events that cannot nest on their line's track.
    ``depth`` (the trace index's, when at hand) saves computing it again."""
    end = profile.start_ns + profile.dur_ns
    order = line_order(profile.line, profile.start_ns, end)
    if depth is None:
        depth = nesting_depth(order, profile.line, profile.start_ns, profile.dur_ns)
    parent = nesting_parents(order, profile.line, profile.start_ns, profile.dur_ns)
    has = parent >= 0
    flag = np.zeros(len(parent), dtype=bool)
    flag[has] = end[has] > end[parent[has]]
    # An event below an off-stack event is off the stack too: OR along the ancestor chain.
    up = parent.copy()
    live = np.flatnonzero(up >= 0)
    while len(live):
        flag[live] |= flag[up[live]]
        up[live] = up[up[live]]
        live = live[up[live] >= 0]
    return depth, flag


def _track_packets(
    profile: Profile, pids: list[int], overflow: dict[int, set[int]]
) -> tuple[bytes, dict[int, int]]:
    """Track descriptors; and the thread-track uuid of each line with events."""
    out = bytearray()
    line_uuid: dict[int, int] = {}
    depth_count = np.ones(len(profile.lines), dtype=np.int32)
    for rank, section in enumerate(sections(profile, depth_count)):
        plane = profile.planes[section.plane]
        pid = pids[section.plane]
        plane_uuid = _PLANE_UUID + section.plane
        process = _int(1, pid) + _text(6, plane.name)
        out += _packet(
            _len(
                60,
                _int(1, plane_uuid)
                + _len(3, process)
                + _int(11, CHILD_ORDER_EXPLICIT)
                + _int(12, rank),
            )
        )
        for order, track in enumerate(section.tracks):
            line = profile.lines[track.line]
            uuid = _LINE_UUID + track.line
            line_uuid[track.line] = uuid
            thread = _int(1, pid) + _int(2, line.id) + _text(5, track.name)
            out += _packet(
                _len(60, _int(1, uuid) + _int(5, plane_uuid) + _len(4, thread) + _int(12, order))
            )
            for depth in sorted(overflow.get(track.line, ())):
                out += _packet(
                    _len(
                        60,
                        _int(1, _OVERFLOW_UUID + (track.line << 12) + depth)
                        + _int(5, uuid)
                        + _text(2, f"{track.name} · overlapping {depth}"),
                    )
                )
    return bytes(out), line_uuid


# ---- interned strings and annotations --------------------------------------------------------


def _interned(profile: Profile, names: np.ndarray, keys: np.ndarray, values: np.ndarray) -> bytes:
    """The interned-data packet: EventName (2), DebugAnnotationName (3), InternedString (29)."""
    strings = profile.strings
    parts = []
    for field, ids in ((2, names), (3, keys), (29, values)):
        if len(ids) == 0:
            continue
        text = strings_column([strings[i] for i in ids.tolist()])
        entry = encode([varint(1, ids + 1), blob(2, text)], len(ids))
        parts.append(encode([blob(field, entry)], len(ids)).tobytes())
    body = _len(12, b"".join(parts)) + _int(10, SEQUENCE) + _int(13, SEQ_CLEARED)
    return _len(1, body)


def _used(n_strings: int, *ids: np.ndarray) -> np.ndarray:
    """The string ids that occur in ``ids``, sorted (a mark per string: no sort needed)."""
    mark = np.zeros(n_strings, dtype=bool)
    for part in ids:
        mark[part] = True
    return np.flatnonzero(mark)


def _annotations(key: np.ndarray, kind: np.ndarray, value: np.ndarray) -> Encoded:
    """Each stat row as an encoded ``TrackEvent.debug_annotations`` (field 4) entry."""
    n = len(key)
    is_str = (kind == KIND_STR) | (kind == KIND_BYTES)
    annotation = [
        varint(1, key.astype(np.int64) + 1),
        varint(4, value, kind == KIND_INT),
        varint(3, value, kind == KIND_UINT),
        fixed64(5, value, kind == KIND_DOUBLE),
        varint(17, value + 1, is_str),
    ]
    return encode([nested(4, annotation)], n)


def _ranges(enc: Encoded, first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) in ``enc.buf`` of the messages first..last-1 of each row."""
    cum = np.concatenate([[0], np.cumsum(enc.size)])
    return cum[first], cum[last] - cum[first]


_Range = tuple[np.ndarray, np.ndarray, np.ndarray]  # bytes, start per record, length per record


class _Flows:
    """Encoded flow ids of each event: ``flow_ids`` (47) as source, ``terminating`` (48)."""

    def __init__(self, flows: FlowTable, keep: np.ndarray) -> None:
        both = keep[flows.src] & keep[flows.dst]
        by_src = np.flatnonzero(both)  # the table is sorted by source
        by_dst = flows.by_dst[both[flows.by_dst]]
        self.src = flows.src[by_src]
        self.dst = flows.dst[by_dst]
        self.out = encode([fixed64(47, by_src + 1)], len(by_src))
        self.into = encode([fixed64(48, by_dst + 1)], len(by_dst))

    def ranges(self, events: np.ndarray, who: np.ndarray, present: np.ndarray) -> list[_Range]:
        """(buffer, start, length) of the outgoing and the terminating flow ids of records
        ``events[who]`` (``events`` sorted, as a chunk's are)."""
        found = []
        for ends, enc in ((self.src, self.out), (self.dst, self.into)):
            lo = np.searchsorted(ends, events, side="left")
            hi = np.searchsorted(ends, events, side="right")
            start, length = _ranges(enc, lo, hi)
            found.append((enc.buf, start[who], np.where(present, length[who], 0)))
        return found


# ---- events ------------------------------------------------------------------------------------


def perfetto_trace_chunks(
    profile: Profile,
    start_ns: int | None = None,
    end_ns: int | None = None,
    flows: FlowTable | None = None,
    progress: Progress | None = None,
    depth: np.ndarray | None = None,
) -> Iterator[bytes]:
    """The trace's bytes in pieces; their concatenation is one ``perfetto.protos.Trace``.
    ``flows`` and ``depth`` (per event) may come from the trace index when it is cached."""
    keep = selected_events(profile, start_ns, end_ns)
    total = int(keep.sum())
    pids = _pids(profile)
    depth, off_stack = _nesting(profile, depth)
    moved = np.flatnonzero(off_stack & keep)
    overflow: dict[int, set[int]] = {}
    for line, d in zip(profile.line[moved].tolist(), depth[moved].tolist(), strict=True):
        overflow.setdefault(line, set()).add(min(d, 4095))
    stats = profile.stats
    per_event_stat = np.isin(stats.kind, _SHOWN_KINDS)
    meta = profile.meta_stats
    meta_shown = np.isin(meta.kind, _SHOWN_KINDS)
    str_kinds = (KIND_STR, KIND_BYTES)
    names = _used(len(profile.strings), profile.name[keep])
    keys = _used(len(profile.strings), stats.key[per_event_stat], meta.key[meta_shown])
    values = _used(
        len(profile.strings),
        stats.value[np.isin(stats.kind, str_kinds)],
        meta.value[np.isin(meta.kind, str_kinds)],
    )
    yield _interned(profile, names, keys, values)
    tracks, line_uuid = _track_packets(profile, pids, overflow)
    yield tracks
    uuid_of_line = np.zeros(len(profile.lines), dtype=np.int64)
    for line, uuid in line_uuid.items():
        uuid_of_line[line] = uuid
    # Metadata stats, encoded once; each event copies its metadata's range.
    meta_enc = _annotations(meta.key[meta_shown], meta.kind[meta_shown], meta.value[meta_shown])
    meta_before = np.concatenate([[0], np.cumsum(meta_shown)])
    meta_first = meta_before[profile.meta_stat_start[:-1]]
    meta_last = meta_before[profile.meta_stat_start[1:]]
    meta_start, meta_len = _ranges(meta_enc, meta_first, meta_last)
    if flows is None:
        flows = build_flows(profile, depth)
    flow_ids = _Flows(flows, keep)
    written = 0
    for lo in range(0, profile.n_events, CHUNK):
        hi = min(lo + CHUNK, profile.n_events)
        ev = np.flatnonzero(keep[lo:hi]) + lo
        if len(ev) == 0:
            continue
        # This chunk's stats, as annotations; event e's are rows first[e]..last[e]-1.
        s_lo, s_hi = int(profile.stat_start[lo]), int(profile.stat_start[hi])
        shown = per_event_stat[s_lo:s_hi]
        enc = _annotations(
            stats.key[s_lo:s_hi][shown], stats.kind[s_lo:s_hi][shown], stats.value[s_lo:s_hi][shown]
        )
        before = np.concatenate([[0], np.cumsum(shown)])
        ann_start, ann_len = _ranges(
            enc, before[profile.stat_start[ev] - s_lo], before[profile.stat_start[ev + 1] - s_lo]
        )
        yield _event_packets(
            profile,
            ev,
            depth,
            off_stack,
            uuid_of_line,
            enc,
            ann_start,
            ann_len,
            meta_enc,
            meta_start,
            meta_len,
            flow_ids,
        )
        written += len(ev)
        if progress is not None:
            progress(written, total)


def _event_packets(
    profile: Profile,
    ev: np.ndarray,
    depth: np.ndarray,
    off_stack: np.ndarray,
    uuid_of_line: np.ndarray,
    ann: Encoded,
    ann_start: np.ndarray,
    ann_len: np.ndarray,
    meta_enc: Encoded,
    meta_start: np.ndarray,
    meta_len: np.ndarray,
    flow_ids: _Flows,
) -> bytes:
    """Begin/end (or instant) packets of events ``ev``, ordered so that at equal timestamps ends
    come before begins, outer begins before inner ones and inner ends before outer ones."""
    line = profile.line[ev]
    d = depth[ev].astype(np.int64)
    track = np.where(
        off_stack[ev],
        _OVERFLOW_UUID + (line.astype(np.int64) << 12) + np.minimum(d, 4095),
        uuid_of_line[line],
    )
    start = profile.start_ns[ev]
    dur = profile.dur_ns[ev]
    spans = np.flatnonzero(dur > 0)
    # Records: one per event (begin or instant), one more per span (its end).
    who = np.concatenate([np.arange(len(ev)), spans])
    is_end = np.concatenate([np.zeros(len(ev), bool), np.ones(len(spans), bool)])
    ts = np.concatenate([start, start[spans] + dur[spans]])
    kind = np.where(is_end, SLICE_END, np.where(dur[who] > 0, SLICE_BEGIN, INSTANT))
    tie = np.where(is_end, -d[who], d[who])
    order = np.lexsort((tie, ~is_end, ts))
    who, is_end, ts, kind = who[order], is_end[order], ts[order], kind[order]
    first = ~is_end
    m = profile.meta[ev][who]
    copies: list[_Range] = [
        (ann.buf, ann_start[who], np.where(first, ann_len[who], 0)),
        (meta_enc.buf, meta_start[m], np.where(first, meta_len[m], 0)),
        *flow_ids.ranges(ev, who, first),
    ]
    names = profile.name[ev][who].astype(np.int64) + 1
    n = len(who)
    fields = [
        varint(9, kind),
        varint(11, track[who]),
        varint(10, names, first),
        *(raw(buf, start_at, length) for buf, start_at, length in copies),
    ]
    packet = [
        varint(8, ts),
        const(10, SEQUENCE),
        const(13, SEQ_NEEDS_STATE),
        nested(11, fields),
    ]
    return encode([nested(1, packet)], n).tobytes()
