"""`merge_xspace` on raw columns: a framework's 100k events merged with array passes.

`merge_columns(target, source, clock, window=..., line_ids=...)` returns the `RawColumns` that
`merge_xspace` would leave in ``target`` (see `stepscope.xspace.merge` for the rules: times
through ``clock``, events outside ``window`` dropped, same-named planes merged with their
same-id lines sorted together, metadata re-interned by name, the ``Task Environment`` plane
merged and kept last). The parsed profiles are equal up to the numbering of metadata ids; the
capture's save writes the result with `columns_pb.encode_space`.

Per plane pair the side with more events keeps its ids and the other is re-interned (as
`merge_xspace` does): the few thousand events stepscope records are renumbered into the
framework's plane, not the reverse. Only the metadata the re-interned side's kept events name
is copied (with the metadata of its plane stats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace

import numpy as np

from stepscope.records import record
from stepscope.xspace.headers import (
    HeaderEventMetadata,
    HeaderStat,
    HeaderStatMetadata,
    PlaneHeader,
    SpaceHeader,
)
from stepscope.xspace.merge import _OWN_ENV_STATS, PS_PER_NS, TASK_ENV_PLANE, ClockMap, MergeReport
from stepscope.xspace.pb_columns import ranges_to_indices
from stepscope.xspace.wire import KIND_BYTES, KIND_REF, KIND_STR, RawColumns, RawLine


def _clock_array(clock: ClockMap, t_ns: np.ndarray) -> np.ndarray:
    """``clock`` applied to each value (the same rounding as `ClockMap.__call__`)."""
    shifted = t_ns + clock.offset_ns
    if not clock.rate:
        return shifted
    drift = np.round(clock.rate * (t_ns - clock.anchor_ns).astype(np.float64))
    return shifted + drift.astype(np.int64)


@record(frozen=False)
class _Side:
    """One input's events after retiming and the window: kept rows and new offsets."""

    raw: RawColumns
    offset_ps: np.ndarray  # per event, relative to the line's (new) timestamp
    keep: np.ndarray  # bool per event
    line_ts: list[int]  # new timestamp per line
    pool_base: int  # this side's first event in the pooled arrays
    stat_base: int  # this side's first stat row in the pooled arrays
    string_base: int


def _retimed(raw: RawColumns, clock: ClockMap, window: tuple[int, int] | None) -> _Side:
    offsets = raw.ev_offset_ps.copy()
    old_ts = np.array([line.timestamp_ns for line in raw.lines], np.int64)
    new_ts = _clock_array(clock, old_ts)
    if clock.rate and raw.n_events:  # drift: every event moves by its own amount
        line_of = raw.ev_line
        start_ns = old_ts[line_of] + offsets // PS_PER_NS
        moved = _clock_array(clock, start_ns) - new_ts[line_of]
        offsets = moved * PS_PER_NS + offsets % PS_PER_NS
    keep = np.ones(raw.n_events, bool)
    if window is not None and raw.n_events:
        lo, hi = window
        begin = new_ts[raw.ev_line] * PS_PER_NS + offsets
        keep = (begin + raw.ev_duration_ps >= lo * PS_PER_NS) & (begin <= hi * PS_PER_NS)
    return _Side(raw, offsets, keep, new_ts.tolist(), 0, 0, 0)


@record(frozen=False)
class _OutLine:
    """A line of the result: its fields and its events as (side, event index) pieces."""

    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    pieces: list[np.ndarray] = field(default_factory=list)  # pooled event indices
    shifts_ps: list[int] = field(default_factory=list)  # added to each piece's offsets
    combined: bool = False


@record(frozen=False)
class _OutPlane:
    header: PlaneHeader
    lines: list[_OutLine]


class _Remap:
    """Metadata ids of one side's plane -> the result plane's (identity where absent)."""

    def __init__(self) -> None:
        self.events: dict[int, int] = {}
        self.stats: dict[int, int] = {}

    @staticmethod
    def _apply(table: dict[int, int], ids: np.ndarray) -> np.ndarray:
        if not table or not len(ids):
            return ids
        keys = np.array(list(table), np.int64)
        values = np.array(list(table.values()), np.int64)
        order = np.argsort(keys)
        keys, values = keys[order], values[order]
        at = np.clip(np.searchsorted(keys, ids), 0, len(keys) - 1)
        return np.where(keys[at] == ids, values[at], ids)

    def event_ids(self, ids: np.ndarray) -> np.ndarray:
        return self._apply(self.events, ids)

    def stat_ids(self, ids: np.ndarray) -> np.ndarray:
        return self._apply(self.stats, ids)


class _Interner:
    """Copies metadata of plane ``src`` into the result header ``into`` (by name)."""

    def __init__(self, into: PlaneHeader, src: PlaneHeader, remap: _Remap) -> None:
        self.into, self.src, self.remap = into, src, remap
        self.stat_ids = {meta.name: meta_id for meta_id, meta in into.stat_metadata.items()}
        self.event_ids = {
            (meta.name, meta.display_name): meta_id
            for meta_id, meta in into.event_metadata.items()
            if not meta.stats
        }
        self.next_event_id = max(into.event_metadata, default=0) + 1

    def stat(self, src_id: int) -> int:
        found = self.remap.stats.get(src_id)
        if found is not None:
            return found
        source = self.src.stat_metadata.get(src_id)
        name = source.name if source is not None else ""
        new_id = self.stat_ids.get(name)
        if new_id is None:
            new_id = max(self.into.stat_metadata, default=0) + 1
            self.into.stat_metadata[new_id] = HeaderStatMetadata(new_id, name)
            self.stat_ids[name] = new_id
        self.remap.stats[src_id] = new_id
        return new_id

    def header_stat(self, stat: HeaderStat) -> HeaderStat:
        value = stat.value
        if stat.which == "ref_value" and isinstance(value, int):
            value = self.stat(value)
        return HeaderStat(self.stat(stat.metadata_id), stat.which, value)

    def event(self, src_id: int) -> int:
        found = self.remap.events.get(src_id)
        if found is not None:
            return found
        meta = self.src.event_metadata.get(src_id) or HeaderEventMetadata(src_id, "", "")
        plain = not meta.stats
        new_id = self.event_ids.get((meta.name, meta.display_name)) if plain else None
        if new_id is None:
            new_id = self.next_event_id
            self.next_event_id += 1
            stats = [self.header_stat(s) for s in meta.stats]
            self.into.event_metadata[new_id] = HeaderEventMetadata(
                new_id, meta.name, meta.display_name, stats
            )
            if plain:
                self.event_ids[(meta.name, meta.display_name)] = new_id
        self.remap.events[src_id] = new_id
        return new_id


def _copy_header(header: PlaneHeader, plane_id: int | None = None) -> PlaneHeader:
    """A copy whose maps and stats can be changed (the header itself is frozen)."""
    return PlaneHeader(
        header.id if plane_id is None else plane_id,
        header.name,
        dict(header.event_metadata),
        dict(header.stat_metadata),
        list(header.stats),
    )


def _stat_names(header: PlaneHeader) -> set[str]:
    return {
        header.stat_metadata[s.metadata_id].name
        for s in header.stats
        if s.metadata_id in header.stat_metadata
    }


def _first_seen(ids: np.ndarray) -> list[int]:
    """Distinct values of ``ids`` in the order they first occur."""
    if not len(ids):
        return []
    values, first = np.unique(ids, return_index=True)
    return values[np.argsort(first, kind="stable")].tolist()


def _line_events(side: _Side, index: int) -> np.ndarray:
    """Pooled indices of the kept events of line ``index`` of ``side``."""
    line = side.raw.lines[index]
    local = np.arange(line.first_event, line.first_event + line.event_count)
    return side.pool_base + local[side.keep[local]]


def _out_line(line: RawLine, ts: int) -> _OutLine:
    return _OutLine(line.id, line.display_id, line.name, line.display_name, ts, line.duration_ps)


def merge_columns(
    target: RawColumns,
    source: RawColumns,
    clock: ClockMap | None = None,
    *,
    window: tuple[int, int] | None = None,
    line_ids: Mapping[str, Mapping[int, int]] | None = None,
    report: MergeReport | None = None,
) -> RawColumns:
    """``source`` merged into ``target`` (see the module docstring); neither is modified.
    ``report``, when given, is filled in as `merge_xspace` fills its own."""
    ours = _retimed(target, ClockMap(), None)
    theirs = _retimed(source, clock or ClockMap(), window)
    theirs.pool_base, theirs.stat_base = target.n_events, len(target.st_meta)
    theirs.string_base = len(target.strings)
    renames = line_ids or {}
    source_lines = [
        replace(
            line, id=renames.get(source.plane_headers[line.plane].name, {}).get(line.id, line.id)
        )
        for line in source.lines
    ]
    theirs.raw = replace(source, lines=source_lines)

    by_plane: list[list[int]] = [[] for _ in target.plane_headers]
    for index, line in enumerate(target.lines):
        by_plane[line.plane].append(index)
    src_by_plane: list[list[int]] = [[] for _ in source.plane_headers]
    for index, line in enumerate(source_lines):
        src_by_plane[line.plane].append(index)

    planes = [
        _OutPlane(
            _copy_header(header),
            [_whole_line(ours, i) for i in by_plane[p]],
        )
        for p, header in enumerate(target.plane_headers)
    ]
    # per (side 0/1, side's plane index): the remap of that plane's ids
    remaps: dict[tuple[int, int], _Remap] = {}
    by_name = {plane.header.name: k for k, plane in enumerate(planes)}
    for p, header in enumerate(source.plane_headers):
        at = by_name.get(header.name)
        if header.name == TASK_ENV_PLANE and at is not None:
            _merge_env(planes[at].header, header)
            remaps[(1, p)] = _Remap()
            continue
        if at is None:
            copied = _copy_header(header, max((pl.header.id for pl in planes), default=-1) + 1)
            planes.append(_OutPlane(copied, [_whole_line(theirs, i) for i in src_by_plane[p]]))
            by_name[header.name] = len(planes) - 1
            remaps[(1, p)] = _Remap()
            if report is not None:
                report.planes_added += 1
            continue
        target_plane = next(q for q, h in enumerate(target.plane_headers) if h.name == header.name)
        planes[at] = _merge_plane(
            planes[at], ours, target_plane, theirs, p, src_by_plane[p], remaps
        )
    env = next((k for k, plane in enumerate(planes) if plane.header.name == TASK_ENV_PLANE), None)
    if env is not None and env != len(planes) - 1:
        planes.append(planes.pop(env))
    if report is not None:
        report.events_dropped += int(np.count_nonzero(~theirs.keep))
        report.events_moved += int(np.count_nonzero(theirs.keep))
        report.lines_merged += sum(line.combined for plane in planes for line in plane.lines)
    head = target.space_header
    space_header = SpaceHeader(
        list(head.hostnames),
        [*head.errors, *source.space_header.errors],
        [*head.warnings, *source.space_header.warnings],
    )
    return _assemble(space_header, planes, (ours, theirs), remaps)


def _whole_line(side: _Side, index: int) -> _OutLine:
    line = side.raw.lines[index]
    out = _out_line(line, side.line_ts[index])
    out.pieces.append(_line_events(side, index))
    out.shifts_ps.append(0)
    return out


def _merge_plane(
    dst: _OutPlane,
    ours: _Side,
    target_plane: int,
    theirs: _Side,
    source_plane: int,
    source_lines: Sequence[int],
    remaps: dict[tuple[int, int], _Remap],
) -> _OutPlane:
    """Same-named planes: the side with more events keeps its ids, the other is re-interned."""
    src_header = theirs.raw.plane_headers[source_plane]
    src_lines = [_whole_line(theirs, i) for i in source_lines]
    dst_count = sum(len(piece) for line in dst.lines for piece in line.pieces)
    src_count = sum(len(piece) for line in src_lines for piece in line.pieces)
    if src_count <= dst_count:  # into = the target
        into, into_lines, other_header, other_lines = dst.header, dst.lines, src_header, src_lines
        into_key, other_key, into_is_target = (0, target_plane), (1, source_plane), True
    else:
        into = replace(_copy_header(src_header, dst.header.id), name=dst.header.name)
        into_lines, other_header, other_lines = src_lines, dst.header, dst.lines
        into_key, other_key, into_is_target = (1, source_plane), (0, target_plane), False
    remap = _Remap()
    remaps[into_key], remaps[other_key] = _Remap(), remap
    interner = _Interner(into, other_header, remap)
    _merge_plane_stats(into, other_header, interner, other_wins=not into_is_target)
    other_side = theirs if other_key[0] == 1 else ours
    pieces = [piece for line in other_lines for piece in line.pieces]
    if pieces:
        pooled = np.concatenate(pieces) - other_side.pool_base
        raw = other_side.raw
        for meta_id in _first_seen(raw.ev_meta[pooled]):
            interner.event(meta_id)
        rows = ranges_to_indices(raw.ev_stat_start[pooled], raw.ev_stat_start[pooled + 1])
        rows = rows - raw.ev_stat_start[0]
        for meta_id in _first_seen(raw.st_meta[rows]):
            interner.stat(meta_id)
        refs = rows[raw.st_kind[rows] == KIND_REF]
        for meta_id in _first_seen(raw.st_value[refs]):
            interner.stat(meta_id)
    lines = {line.id: line for line in into_lines}
    for other in other_lines:
        line = lines.get(other.id)
        if line is None:
            into_lines.append(other)
            lines[other.id] = other
            continue
        if other.name and (not line.name or not into_is_target):
            line.name, line.display_name = other.name, other.display_name
        _combine(line, other)
    return _OutPlane(into, into_lines)


def _merge_plane_stats(
    into: PlaneHeader, other: PlaneHeader, interner: _Interner, other_wins: bool
) -> None:
    """Plane-level stats: the target's win over the source's of the same name."""
    other_names = _stat_names(other)
    if other_wins:
        into.stats[:] = [
            s for s in into.stats if into.stat_metadata[s.metadata_id].name not in other_names
        ]
    have = _stat_names(into)
    for stat in other.stats:
        if other.stat_metadata[stat.metadata_id].name not in have:
            into.stats.append(interner.header_stat(stat))


def _combine(line: _OutLine, other: _OutLine) -> None:
    """``other``'s events join ``line`` (on the earlier timestamp), to be sorted together."""
    has_events = any(len(piece) for piece in line.pieces)
    base = min(line.timestamp_ns, other.timestamp_ns) if has_events else other.timestamp_ns
    shift = (line.timestamp_ns - base) * PS_PER_NS
    line.shifts_ps = [s + shift for s in line.shifts_ps]
    line.pieces.extend(other.pieces)
    line.shifts_ps.extend(s + (other.timestamp_ns - base) * PS_PER_NS for s in other.shifts_ps)
    line.timestamp_ns = base
    line.combined = True


def _merge_env(env: PlaneHeader, src: PlaneHeader) -> None:
    have = _stat_names(env)
    interner = _Interner(env, src, _Remap())
    for stat in src.stats:
        name = src.stat_metadata[stat.metadata_id].name
        if name in have or name in _OWN_ENV_STATS:
            continue
        env.stats.append(interner.header_stat(stat))
        have.add(name)


def _assemble(
    space_header: SpaceHeader,
    planes: list[_OutPlane],
    sides: tuple[_Side, _Side],
    remaps: dict[tuple[int, int], _Remap],
) -> RawColumns:
    """The pooled events of both sides, remapped and gathered in the result's line order."""
    pool_meta = np.concatenate([s.raw.ev_meta for s in sides])
    pool_offset = np.concatenate([s.offset_ps for s in sides])
    pool_dur = np.concatenate([s.raw.ev_duration_ps for s in sides])
    stat_lo = np.concatenate(
        [s.raw.ev_stat_start[:-1] - s.raw.ev_stat_start[0] + s.stat_base for s in sides]
    )
    stat_hi = np.concatenate(
        [s.raw.ev_stat_start[1:] - s.raw.ev_stat_start[0] + s.stat_base for s in sides]
    )
    st_meta = np.concatenate([s.raw.st_meta for s in sides])
    st_kind = np.concatenate([s.raw.st_kind for s in sides])
    st_value = np.concatenate([s.raw.st_value for s in sides])
    for k, side in enumerate(sides):  # ids by plane, string indices by side
        raw = side.raw
        for line in raw.lines:
            remap = remaps.get((k, line.plane))
            if remap is None or not line.event_count:
                continue
            first = side.pool_base + line.first_event
            events = slice(first, first + line.event_count)
            rows = slice(int(stat_lo[first]), int(stat_hi[first + line.event_count - 1]))
            pool_meta[events] = remap.event_ids(pool_meta[events])
            st_meta[rows] = remap.stat_ids(st_meta[rows])
            refs = np.flatnonzero(st_kind[rows] == KIND_REF) + rows.start
            st_value[refs] = remap.stat_ids(st_value[refs])
        if side.string_base:
            texts = np.arange(side.stat_base, side.stat_base + len(raw.st_meta))
            texts = texts[(st_kind[texts] == KIND_STR) | (st_kind[texts] == KIND_BYTES)]
            st_value[texts] += side.string_base

    lines: list[RawLine] = []
    order: list[np.ndarray] = []
    shift_parts: list[np.ndarray] = []
    at = 0
    for plane_index, plane in enumerate(planes):
        for out in plane.lines:
            picked = np.concatenate(out.pieces) if out.pieces else np.zeros(0, np.int64)
            shifts = np.repeat(
                np.array(out.shifts_ps, np.int64), [len(piece) for piece in out.pieces]
            )
            duration = out.duration_ps
            if out.combined:
                offsets = pool_offset[picked] + shifts
                durations = pool_dur[picked]
                sort = np.lexsort((-durations, offsets))
                picked, shifts = picked[sort], shifts[sort]
                duration = int((offsets + durations).max()) if len(picked) else 0
            lines.append(
                RawLine(
                    plane_index,
                    out.id,
                    out.display_id,
                    out.name,
                    out.display_name,
                    out.timestamp_ns,
                    duration,
                    at,
                    len(picked),
                )
            )
            order.append(picked)
            shift_parts.append(shifts)
            at += len(picked)
    chosen = np.concatenate(order) if order else np.zeros(0, np.int64)
    shifts = np.concatenate(shift_parts) if shift_parts else np.zeros(0, np.int64)
    stat_rows = ranges_to_indices(stat_lo[chosen], stat_hi[chosen])
    counts = stat_hi[chosen] - stat_lo[chosen]
    stat_start = np.zeros(len(chosen) + 1, np.int64)
    np.cumsum(counts, out=stat_start[1:])
    ev_line = np.repeat(np.arange(len(lines), dtype=np.int32), [ln.event_count for ln in lines])
    return RawColumns(
        space_header,
        [plane.header for plane in planes],
        lines,
        ev_meta=pool_meta[chosen],
        ev_offset_ps=pool_offset[chosen] + shifts,
        ev_duration_ps=pool_dur[chosen],
        ev_stat_start=stat_start,
        ev_line=ev_line,
        st_meta=st_meta[stat_rows],
        st_kind=st_kind[stat_rows],
        st_value=st_value[stat_rows],
        strings=[*sides[0].raw.strings, *sides[1].raw.strings],
        aggregated_events=sides[0].raw.aggregated_events + sides[1].raw.aggregated_events,
    )
