"""Columnar event buffers for the Kineto importer.

A trace has millions of events; holding each as a tuple with a dict of stats until the end
costs about 400 B per event. Here a line keeps its events in typed arrays (20 B per event) and
their stats as (key, kind, value) rows (13 B per stat); strings and stat names are interned
once per trace. `ColumnSpace.to_raw_columns` gives the columnar model's input (`RawColumns`),
built with numpy without going through protobuf: what `stepscope` does when it opens a trace.
For an XSpace message (`kineto_to_xspace`) the importer fills a plain `XSpaceBuilder`, which
has the same interface; the tests check that both give the same profile.

Events keep the order `LineBuilder.sort_events` gives: by start, longer first at equal starts,
insertion order on full ties.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from stepscope.event_order import start_order
from stepscope.xspace.builder import (
    PlaneBuilder,
    Stats,
    StatValue,
    XSpaceBuilder,
)
from stepscope.xspace.headers import PlaneHeader, SpaceHeader
from stepscope.xspace.kineto.stat_codec import StatCodec
from stepscope.xspace.wire import (
    KIND_DOUBLE,
    RawColumns,
    RawLine,
)

if TYPE_CHECKING:  # no protobuf on the Kineto path: the headers are `headers`' classes
    from stepscope.xspace.proto.xplane_pb2 import XSpace


class _Part:
    """The events one `ColumnLine.extend` call (or the buffered `add_event` calls) added, in
    insertion order: their columns as given, and their stat rows (event after event, ``counts``
    rows each)."""

    __slots__ = ("counts", "dur", "key", "kind", "meta", "start", "value")

    def __init__(
        self,
        meta: np.ndarray,
        times: tuple[np.ndarray, np.ndarray],
        counts: np.ndarray,
        rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        self.meta = meta
        self.start, self.dur = times  # int64
        self.counts = counts  # int64
        self.key, self.kind, self.value = rows

    def __len__(self) -> int:
        return len(self.start)

    def reordered_rows(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(count per event, row indices) of the events in ``order``, event after event."""
        row_starts = np.zeros(len(self.counts), np.int64)
        np.cumsum(self.counts[:-1], out=row_starts[1:])
        counts = self.counts.take(order)
        return counts, _rows_after(row_starts.take(order), counts)


def _rows_after(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``arange(first[k], first[k] + counts[k])`` concatenated, for k in order."""
    placed = np.zeros(len(counts), np.int64)  # where each event's rows start in the output
    np.cumsum(counts[:-1], out=placed[1:])
    rows = np.repeat(first - placed, counts)
    rows += np.arange(len(rows), dtype=np.int64)
    return rows


class ColumnLine:
    """One line's events in arrays; see the module docstring.

    Events added one at a time (`add_event`) go into growing buffers; events added in bulk
    (`extend`) are kept as the arrays given, and `ColumnSpace.to_raw_columns` reads them once,
    in the output's final order, straight into the output (no copy in between)."""

    def __init__(self, plane: ColumnPlane, line_id: int, name: str, display_name: str) -> None:
        self.plane = plane
        self.codec = plane.codec
        self.id = line_id
        self.name = name
        self.display_name = display_name
        self.display_id = 0
        self._parts: list[_Part] = []  # the bulk additions, then the buffers below
        self._new_buffers()
        # Stats learnt after an event was added (flow ends), as calls of `add_stats` in order:
        # (event per call, rows per call, the rows' keys, kinds and values), merged by
        # `_stat_rows` with arrays (8.8k fwdbwd flows in 200 steps of a CPU training loop).
        self.extra: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def _new_buffers(self) -> None:
        self.meta = array("q")
        self.start = array("q")
        self.dur = array("q")
        self.stat_count = array("I")
        self.stat_key = array("i")
        self.stat_kind = array("b")
        self.stat_value = array("q")

    def _flush(self) -> None:
        """The buffered events become a part (views of the buffers), so that the parts keep the
        events' insertion order when a bulk addition follows."""
        if not self.meta:
            return
        self._parts.append(
            _Part(
                np.frombuffer(self.meta, np.int64),
                (np.frombuffer(self.start, np.int64), np.frombuffer(self.dur, np.int64)),
                np.frombuffer(self.stat_count, np.uint32).astype(np.int64),
                (
                    np.frombuffer(self.stat_key, np.int32),
                    np.frombuffer(self.stat_kind, np.int8),
                    np.frombuffer(self.stat_value, np.int64),
                ),
            )
        )
        self._new_buffers()

    def __len__(self) -> int:
        return sum(len(part) for part in self._parts) + len(self.meta)

    def add_event(self, meta_id: int, start_ns: int, dur_ns: int, stats: Stats | None) -> None:
        count = 0
        if stats:
            count = self.codec.encode(stats, self.stat_key, self.stat_kind, self.stat_value)
        self.meta.append(meta_id)
        self.start.append(start_ns)
        self.dur.append(dur_ns)
        self.stat_count.append(count)

    def extend(
        self,
        meta: np.ndarray,
        start_ns: np.ndarray,
        dur_ns: np.ndarray,
        stat_count: np.ndarray,
        keys: np.ndarray,
        kinds: np.ndarray,
        values: np.ndarray,
    ) -> None:
        """`add_event` for many events at once; their stats are rows in the codec's terms. The
        arrays are kept, not copied: the caller hands them over."""
        self._flush()
        self._parts.append(
            _Part(
                np.asarray(meta),
                (np.ascontiguousarray(start_ns, np.int64), np.ascontiguousarray(dur_ns, np.int64)),
                np.ascontiguousarray(stat_count, np.int64),
                (
                    np.ascontiguousarray(keys, np.int32),
                    np.ascontiguousarray(kinds, np.int8),
                    np.ascontiguousarray(values, np.int64),
                ),
            )
        )

    def add_stats(self, index: int, stats: Mapping[str, StatValue]) -> None:
        """As `LineBuilder.add_stats`: merged into event ``index``, existing keys win."""
        keys, kinds, values = array("i"), array("b"), array("q")
        count = self.codec.encode(dict(stats), keys, kinds, values)
        self.add_stat_rows(
            np.array([index], np.int64),
            np.array([count], np.int64),
            np.frombuffer(keys, np.int32),
            np.frombuffer(kinds, np.int8),
            np.frombuffer(values, np.int64),
        )

    def add_stat_rows(
        self,
        events: np.ndarray,
        counts: np.ndarray,
        keys: np.ndarray,
        kinds: np.ndarray,
        values: np.ndarray,
    ) -> None:
        """`add_stats` for many calls at once, in order: call k adds ``counts[k]`` rows (in the
        codec's terms, consecutive in ``keys``/``kinds``/``values``) to event ``events[k]``."""
        if len(events):
            self.extra.append((events, counts, keys, kinds, values))

    def time_range(self) -> tuple[int, int] | None:
        """(first start, last end) in ns; None for an empty line."""
        self._flush()
        lo: int | None = None
        hi: int | None = None
        for part in self._parts:
            if len(part):
                start, dur = part.start, part.dur
                first, last = int(start.min()), int((start + dur).max())
                lo, hi = (
                    (first, last) if lo is None or hi is None else (min(lo, first), max(hi, last))
                )
        return None if lo is None or hi is None else (lo, hi)

    # ---- outputs ---------------------------------------------------------------------------
    def _event_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(meta, start, dur) of every event, in insertion order."""
        self._flush()
        parts = self._parts
        if len(parts) == 1:
            return parts[0].meta, parts[0].start, parts[0].dur
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return (
            np.concatenate([part.meta for part in parts]),
            np.concatenate([part.start for part in parts]),
            np.concatenate([part.dur for part in parts]),
        )

    def _own_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(count per event, keys, kinds, values) of the events' own stats, in insertion
        order."""
        self._flush()
        each = [(part.counts, part.key, part.kind, part.value) for part in self._parts]
        if len(each) == 1:
            return each[0]
        if not each:
            return (
                np.zeros(0, np.int64),
                np.zeros(0, np.int32),
                np.zeros(0, np.int8),
                np.zeros(0, np.int64),
            )
        counts, keys, kinds, values = zip(*each, strict=True)
        return (
            np.concatenate(counts),
            np.concatenate(keys),
            np.concatenate(kinds),
            np.concatenate(values),
        )

    def _stat_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(count per event, keys, kinds, values) with the extra stats merged in.

        Each event's stats are what `LineBuilder` gives: every `add_stats` call merged as
        ``{**new, **old}`` (existing keys win), then the event's own rows over them as
        ``{**added, **own}``. Read as one sequence per event -- the calls newest first, then
        its own rows -- a key stands where it first occurs and holds the value of its last
        occurrence; that is computed here for all events at once.
        """
        counts, keys, kinds, values = self._own_rows()
        if not self.extra:
            return counts, keys, kinds, values
        offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        call_event = np.concatenate([batch[0] for batch in self.extra]).astype(np.int64)
        call_rows = np.concatenate([batch[1] for batch in self.extra]).astype(np.int64)
        n_calls = len(call_event)
        # The candidate rows: every call's rows, then the own rows of the events called.
        touched = np.flatnonzero(np.bincount(call_event, minlength=len(counts)))
        own = _ranges(offsets[touched], offsets[touched + 1])
        own_event = np.repeat(touched, counts[touched])
        event = np.concatenate((np.repeat(call_event, call_rows), own_event))
        # Rank in the sequence: newer calls first (call n-1 -> 0), own rows last (n).
        rank = np.concatenate(
            (np.repeat(n_calls - 1 - np.arange(n_calls), call_rows), np.full(len(own), n_calls))
        )
        key = np.concatenate([*(batch[2] for batch in self.extra), keys[own]]).astype(np.int64)
        kind = np.concatenate([*(batch[3] for batch in self.extra), kinds[own]])
        value = np.concatenate([*(batch[4] for batch in self.extra), values[own]])
        # Sequence order: by event, then rank; rows of one call or of the own rows keep
        # their order (stable sorts).
        sequence = np.lexsort((rank, event))
        event, key = event[sequence], key[sequence]
        # Group each event's occurrences of a key (stable: in sequence order).
        by_key = np.lexsort((key, event))
        ev_sorted, key_sorted = event[by_key], key[by_key]
        starts = np.flatnonzero(
            np.concatenate(
                ([True], (ev_sorted[1:] != ev_sorted[:-1]) | (key_sorted[1:] != key_sorted[:-1]))
            )
        )
        ends = np.concatenate((starts[1:], [len(by_key)]))
        first, last = by_key[starts], by_key[ends - 1]
        placed = np.sort(first)  # each kept key at its first occurrence, in sequence order
        value_at = np.empty(len(event), np.int64)
        value_at[first] = last  # ... holding its last occurrence's value
        source = sequence[value_at[placed]]
        merged_event = event[placed]
        merged_counts = np.bincount(merged_event, minlength=len(counts))[touched]
        # Splice: the events called get their merged rows, the others keep theirs.
        new_counts = counts.copy()
        new_counts[touched] = merged_counts
        new_offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(new_counts, out=new_offsets[1:])
        total = int(new_offsets[-1])
        out_key = np.empty(total, np.int32)
        out_kind = np.empty(total, np.int8)
        out_value = np.empty(total, np.int64)
        kept = np.ones(len(keys), bool)
        kept[own] = False
        kept_rows = np.flatnonzero(kept)
        row_event = np.repeat(np.arange(len(counts)), counts)[kept_rows]
        at = new_offsets[row_event] + (kept_rows - offsets[row_event])
        out_key[at], out_kind[at] = keys[kept_rows], kinds[kept_rows]
        out_value[at] = values[kept_rows]
        merged_at = _ranges(new_offsets[touched], new_offsets[touched + 1])
        out_key[merged_at] = key[placed]
        out_kind[merged_at], out_value[merged_at] = kind[source], value[source]
        return new_counts, out_key, out_kind, out_value

    def take_part(self) -> _Part:
        """The line's events as one part, as the output reads them; the line is empty
        afterwards (the part alone holds them)."""
        self._flush()
        if len(self._parts) == 1 and not self.extra:
            part = self._parts[0]
        else:  # several parts, or stats learnt late: one part, in insertion order, merged
            meta, start, dur = self._event_columns()
            counts, keys, kinds, values = self._stat_rows()
            part = _Part(meta, (start, dur), counts, (keys, kinds, values))
        self._parts, self.extra = [], []
        self._new_buffers()
        return part


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(lo[k], hi[k])`` (empty ranges allowed)."""
    lengths = hi - lo
    return np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


class ColumnPlane(PlaneBuilder):
    """A `PlaneBuilder` whose lines are `ColumnLine`s."""

    def __init__(self, plane_id: int, name: str, codec: StatCodec) -> None:
        super().__init__(plane_id, name)
        self.codec = codec
        self.column_lines: list[ColumnLine] = []
        self._column_lines_by_id: dict[int, ColumnLine] = {}

    def line(  # type: ignore[override]
        self, line_id: int, name: str = "", display_name: str = "", timestamp_ns: int | None = None
    ) -> ColumnLine:
        existing = self._column_lines_by_id.get(line_id)
        if existing is not None:
            if name and not existing.name:
                existing.name = name
            return existing
        line = ColumnLine(self, line_id, name, display_name)
        self.column_lines.append(line)
        self._column_lines_by_id[line_id] = line
        return line

    def header(self) -> PlaneHeader:
        """The plane without its lines: metadata, stat names (ids = codec ids + 1), stats."""
        # Stat names first, in codec order, so that stat metadata id = codec key id + 1.
        for key in self.codec.key_names:
            self.stat_metadata_id(key)
        return super().header()


class ColumnSpace(XSpaceBuilder):
    """An `XSpaceBuilder` of `ColumnPlane`s whose output is `RawColumns` (not `build`)."""

    def __init__(self, hostname: str | None = None) -> None:
        super().__init__(hostname)
        self.codec = StatCodec()

    def plane(self, name: str, plane_id: int | None = None) -> ColumnPlane:
        existing = self._by_name.get(name)
        if existing is not None:
            return existing  # type: ignore[return-value]
        plane = ColumnPlane(len(self.planes) if plane_id is None else plane_id, name, self.codec)
        self.planes.append(plane)
        self._by_name[name] = plane
        return plane

    def column_planes(self) -> list[ColumnPlane]:
        return [plane for plane in self.planes if isinstance(plane, ColumnPlane)]

    def event_count(self) -> int:
        return sum(len(line) for plane in self.column_planes() for line in plane.column_lines)

    def build(self) -> XSpace:
        raise TypeError("a ColumnSpace gives RawColumns (to_raw_columns), not an XSpace")

    def to_raw_columns(self) -> RawColumns:
        """The columnar model's input, as `wire.decode_columns` would give for `build()`.

        The lines' buffers are consumed: call it (or `build`) once.
        """
        codec = self.codec
        space_header = SpaceHeader(list(self.hostnames), list(self.errors), list(self.warnings))
        planes = self.column_planes()
        # Merging the stats learnt late comes before the headers (as it always has). Each
        # line's columns, as the route gathered them, are read once, in their final order,
        # straight into the output (decision 451): no copy into buffers and no sorted copy in
        # between.
        parts: list[list[_Part | None]] = [
            [line.take_part() for line in plane.column_lines] for plane in planes
        ]
        plane_headers = [plane.header() for plane in planes]
        n_events = sum(len(part) for in_plane in parts for part in in_plane if part is not None)
        n_rows = sum(
            int(part.counts.sum()) for in_plane in parts for part in in_plane if part is not None
        )
        ev_meta, ev_offset, ev_dur = (np.empty(n_events, np.int64) for _ in range(3))
        ev_line = np.empty(n_events, np.int32)
        stat_start = np.zeros(n_events + 1, np.int64)  # the counts, summed in place below
        st_meta, st_value = np.empty(n_rows, np.int64), np.empty(n_rows, np.int64)
        kinds = np.empty(n_rows, np.int8)
        lines: list[RawLine] = []
        first = row = 0
        for plane_index, plane in enumerate(planes):
            in_plane = parts[plane_index]
            for k, line in enumerate(plane.column_lines):
                part, in_plane[k] = in_plane[k], None  # freed once written
                assert part is not None
                start, dur = part.start, part.dur
                order = start_order(start, dur)
                counts, picked = part.reordered_rows(order)
                n, m = len(order), len(picked)
                events, rows = slice(first, first + n), slice(row, row + m)
                offset, length = ev_offset[events], ev_dur[events]
                # ("clip": with "raise" a `take` into `out` goes through a buffered copy;
                # ``order`` and ``picked`` are permutations, always in range)
                np.take(start, order, out=offset, mode="clip")
                np.take(dur, order, out=length, mode="clip")
                ev_meta[events] = part.meta.take(order)
                del start, dur, order
                base = int(offset.min()) if n else 0
                end = int((offset + length).max()) if n else base
                span = (max(end, base) - base) * 1000
                lines.append(
                    RawLine(
                        plane_index,
                        line.id,
                        line.display_id,
                        line.name,
                        line.display_name,
                        base,
                        span,
                        first,
                        n,
                    )
                )
                offset -= base
                offset *= 1000
                length *= 1000
                stat_start[first + 1 : first + 1 + n] = counts
                ev_line[events] = len(lines) - 1
                st_meta[rows] = part.key.take(picked)
                st_meta[rows] += 1  # stat metadata id = codec key id + 1
                kinds[rows] = part.kind.take(picked)
                np.take(part.value, picked, out=st_value[rows], mode="clip")
                del part, counts, picked
                first, row = first + n, row + m
        np.cumsum(stat_start, out=stat_start)
        doubles = np.flatnonzero(kinds == KIND_DOUBLE)
        if len(doubles):  # float rows hold an index into the codec's floats: store the bits
            bits = np.frombuffer(codec.floats, np.float64).view(np.int64)
            st_value[doubles] = bits[st_value[doubles]]
        return RawColumns(
            space_header,
            plane_headers,
            lines,
            ev_meta=ev_meta,
            ev_offset_ps=ev_offset,
            ev_duration_ps=ev_dur,
            ev_stat_start=stat_start,
            ev_line=ev_line,
            st_meta=st_meta,
            st_kind=kinds,
            st_value=st_value,
            strings=[text.encode("utf-8", "surrogateescape") for text in codec.string_list],
            aggregated_events=0,
        )
