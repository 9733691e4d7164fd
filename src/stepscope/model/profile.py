"""The columnar event model: one host's trace, whatever framework or file it came from.

Per event (NumPy columns, no Python object per event): line, event metadata, interned name,
start and duration in int64 nanoseconds. Stats live in a side table addressed by
``stat_start`` (CSR layout: the stats of event i are rows ``stat_start[i]:stat_start[i+1]``).
Planes and lines are few and kept as small dataclasses.

Time base: ``start_ns`` is on the profile's own clock (XSpace line timestamp + offset), the
same clock for every plane of a host.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Hashable
from dataclasses import field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from stepscope.distinct import distinct
from stepscope.model.strings import StringTable
from stepscope.records import record
from stepscope.xspace.wire import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT,
    KIND_NONE,
    KIND_STR,
    KIND_UINT,
    last_at_or_before,
    row_owners,
)

PyStat = int | float | str | bytes | None


T = TypeVar("T")


@record
class Plane:
    """One plane of a profile: its id, name, stats and range of lines."""

    index: int
    id: int
    name: str
    stats: dict[str, PyStat]
    first_line: int
    line_count: int

    @property
    def is_device(self) -> bool:
        return self.name.startswith("/device:")

    @property
    def device_ordinal(self) -> int | None:
        """N of ``/device:GPU:N`` / ``/device:TPU:N``; None for host planes."""
        if not self.is_device:
            return None
        tail = self.name.rsplit(":", 1)[-1]
        return int(tail) if tail.isdigit() else None


@record
class Line:
    """One line of a profile (a thread, a stream): its ids, names and range of events."""

    index: int
    plane: int
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    first_event: int
    event_count: int

    @property
    def label(self) -> str:
        return self.display_name or self.name or str(self.id)


@record(frozen=False)
class Stats:
    """A stat table: key (string id of the stat name), kind (see xspace.wire), value.

    ``value`` holds ints directly (uint64 as its two's-complement bits), float64 bits for
    doubles, and a string id for STR (and resolved REF) and BYTES values.
    """

    key: np.ndarray  # int32
    kind: np.ndarray  # int8
    value: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.key)


@record(frozen=False)
class StatColumn:
    """One stat, dense over all events: ``present[i]`` tells whether event i has it."""

    present: np.ndarray  # bool
    kind: np.ndarray  # int8
    value: np.ndarray  # int64

    def as_float(self) -> np.ndarray:
        """Values as float64 (NaN where absent or not numeric)."""
        ints = self.present & ((self.kind == KIND_INT) | (self.kind == KIND_UINT))
        if ints.all():  # every value an integer (a stat read where events have it): one pass
            return self.value.astype(np.float64)
        out = np.full(len(self.value), np.nan)
        out[ints] = self.value[ints]
        doubles = self.present & (self.kind == KIND_DOUBLE)
        out[doubles] = self.value[doubles].view(np.float64)
        return out

    def as_int(self, default: int = -1) -> np.ndarray:
        """Values as int64 (doubles truncated; ``default`` where absent or a string)."""
        ints = self.present & ((self.kind == KIND_INT) | (self.kind == KIND_UINT))
        if ints.all():  # every value an integer (a stat read where events have it): a copy
            return self.value.astype(np.int64)
        out = np.full(len(self.value), default, dtype=np.int64)
        out[ints] = self.value[ints]
        doubles = self.present & (self.kind == KIND_DOUBLE)
        out[doubles] = self.value[doubles].view(np.float64).astype(np.int64)
        return out

    def string_ids(self) -> np.ndarray:
        """String ids for string values, -1 elsewhere."""
        out = np.full(len(self.value), -1, dtype=np.int32)
        strs = self.present & ((self.kind == KIND_STR) | (self.kind == KIND_BYTES))
        out[strs] = self.value[strs]
        return out


@record(frozen=False)
class Profile:
    """One host's trace in columns. Build with `stepscope.model.profile_from_bytes`."""

    hostname: str
    source: str
    strings: StringTable
    planes: list[Plane]
    lines: list[Line]
    # events
    line: np.ndarray  # int32: index into `lines`
    meta: np.ndarray  # int32: index into the metadata columns
    name: np.ndarray  # int32: string id of the event name
    start_ns: np.ndarray  # int64
    dur_ns: np.ndarray  # int64
    stat_start: np.ndarray  # int64, length n_events + 1
    stats: Stats
    # event metadata (profile-wide rows; XSpace ids are plane-local)
    meta_plane: np.ndarray  # int32
    meta_id: np.ndarray  # int64: the XSpace id within its plane
    meta_name: np.ndarray  # int32: string id
    meta_display_name: np.ndarray  # int32: string id ('' when none)
    meta_stat_start: np.ndarray  # int64, length n_metadata + 1
    meta_stats: Stats
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Values derived from the columns, computed once (see `derived`); freed with the profile.
    _derived: dict[Hashable, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per profile and ``key``: the one cache of values derived from a
        profile's columns (event types, ...), so no module keeps its own memo of profiles."""
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    # ---- sizes and derived columns -------------------------------------------------------
    @property
    def n_events(self) -> int:
        return len(self.start_ns)

    @cached_property
    def end_ns(self) -> np.ndarray:
        # Computed once: the analysis asks for it about ten times per profile (0.3 s of CPU
        # and as many 8 B/event temporaries at 5M events). The columns are never changed.
        return self.start_ns + self.dur_ns

    def end_at(self, events: np.ndarray) -> np.ndarray:
        """``end_ns[events]`` (an index or mask array), without making the cached `end_ns`
        when it is not there: the step database reads its events' ends this way, so that the
        8 B/event column is not alive under its peaks (decision 77)."""
        cached = self.__dict__.get("end_ns")
        if cached is not None:
            return cached[events]
        out = self.start_ns[np.asarray(events)]  # an array index: a copy, summed in place
        out += self.dur_ns[events]
        return out

    def release_end_ns(self) -> None:
        """Forget the cached `end_ns` (8 B/event): for a phase whose peak needs the memory
        more than the time of one sum when `end_ns` is next read."""
        self.__dict__.pop("end_ns", None)

    @cached_property
    def line_plane(self) -> np.ndarray:
        """Plane index of each line."""
        return np.array([line.plane for line in self.lines], dtype=np.int32)

    @cached_property
    def plane(self) -> np.ndarray:
        """Plane index of each event."""
        return self.line_plane.take(self.line) if len(self.lines) else np.zeros(0, np.int32)

    @cached_property
    def _stat_rows(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """`stat`'s memo: key id -> its stat rows, ascending."""
        return {}

    def time_span_ns(self) -> tuple[int, int]:
        """(first start, last end) over all events; (0, 0) when empty."""
        if self.n_events == 0:
            return 0, 0
        return int(self.start_ns.min()), int(self.end_ns.max())

    # ---- lookups ---------------------------------------------------------------------------
    def plane_by_name(self, name: str) -> Plane | None:
        return next((p for p in self.planes if p.name == name), None)

    def planes_where(self, predicate: Callable[[Plane], bool]) -> list[Plane]:
        return [p for p in self.planes if predicate(p)]

    def events_of_plane(self, plane: Plane) -> slice:
        """Events of a plane form one contiguous range."""
        if plane.line_count == 0:
            return slice(0, 0)
        first = self.lines[plane.first_line]
        last = self.lines[plane.first_line + plane.line_count - 1]
        return slice(first.first_event, last.first_event + last.event_count)

    def events_of_line(self, line: Line) -> slice:
        return slice(line.first_event, line.first_event + line.event_count)

    def display_name_ids(self) -> np.ndarray:
        """Per event: the metadata display name's string id, or the name's when it has none."""
        empty = self.strings.id_of("")
        display = self.meta_display_name[self.meta]
        return np.where(display == empty, self.name, display)

    def stat(self, name: str) -> StatColumn:
        """The stat ``name`` for every event: event stats, else its metadata's stats."""
        n = self.n_events
        present = np.zeros(n, dtype=bool)
        kind = np.zeros(n, dtype=np.int8)
        value = np.zeros(n, dtype=np.int64)
        key = self.strings.id_of(name)
        if key < 0:
            return StatColumn(present, kind, value)
        meta = self._meta_stat(key)
        if meta is not None:
            kind = meta[0].take(self.meta)
            value = meta[1].take(self.meta)
            present = kind != KIND_NONE
        rows, owners = self._rows_of(key)
        if len(rows):
            present[owners] = True
            kind[owners] = self.stats.kind.take(rows)
            value[owners] = self.stats.value.take(rows)
        return StatColumn(present, kind, value)

    def stat_at(self, name: str, events: np.ndarray) -> StatColumn:
        """`stat` for ``events`` only, in their order (no column over every event: callers
        that look at a few events, such as the kernels' launches, ask this many times)."""
        m = len(events)
        key = self.strings.id_of(name)
        if key < 0 or not m:
            return StatColumn(np.zeros(m, bool), np.zeros(m, np.int8), np.zeros(m, np.int64))
        rows, owners = self._rows_of(key)
        if len(owners) == m and _each_once(owners, events):
            # the events are the stat's own events (`stat_events`, or a stat always set with
            # another): its rows in order, which override any metadata's
            ones = np.ones(m, bool)
            return StatColumn(ones, self.stats.kind.take(rows), self.stats.value.take(rows))
        meta = self._meta_stat(key)
        if meta is None:
            kind, value = np.zeros(m, np.int8), np.zeros(m, np.int64)
        else:
            at = self.meta.take(events)
            kind, value = meta[0].take(at), meta[1].take(at)
        present = kind != KIND_NONE
        if len(rows):
            # An event's last row of the key, as `stat`'s assignment keeps the last.
            at = last_at_or_before(owners, events)
            hit = at >= 0
            hit[hit] = owners.take(at[hit]) == events[hit]
            found = rows.take(at[hit])
            present[hit] = True
            kind[hit] = self.stats.kind.take(found)
            value[hit] = self.stats.value.take(found)
        return StatColumn(present, kind, value)

    def in_metadata(self, name: str) -> bool:
        """Whether some event metadata carries the stat ``name`` (its events then have it
        without a row of their own)."""
        key = self.strings.id_of(name)
        return key >= 0 and bool((self.meta_stats.key == key).any())

    def _meta_stat(self, key: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Per metadata row: the kind (KIND_NONE when absent) and value of stat ``key``; None
        when no metadata has it."""
        meta_rows = np.flatnonzero(self.meta_stats.key == key)
        if not len(meta_rows):
            return None
        meta_kind = np.zeros(len(self.meta_id), dtype=np.int8)
        meta_value = np.zeros(len(self.meta_id), dtype=np.int64)
        meta_owner = np.searchsorted(self.meta_stat_start, meta_rows, side="right") - 1
        meta_kind[meta_owner] = self.meta_stats.kind[meta_rows]
        meta_value[meta_owner] = self.meta_stats.value[meta_rows]
        return meta_kind, meta_value

    def _rows_of(self, key: int) -> tuple[np.ndarray, np.ndarray]:
        """(stat rows of ``key``, their events), both ascending. The analysis asks for about
        25 keys 59 times (correlation_id 16 times): each key's rows are found once (a pass
        over every stat row, 4M rows at 1M events)."""
        found = self._stat_rows.get(key)
        if found is None:
            rows = np.flatnonzero(self.stats.key == key)
            if len(self.stats) < 2**31:  # kept for the profile's life: 4 B per row, not 8
                rows = rows.astype(np.int32)
            # each row's event found from the stat offsets (no column of every row's event
            # kept for the profile's life: 4 B per stat row, at the step attribution's peak)
            found = self._stat_rows[key] = (rows, row_owners(self.stat_start, rows))
        return found

    def stat_events(self, name: str) -> np.ndarray:
        """Ascending indices of the events that have the stat ``name`` (`stat`'s ``present``)
        without `stat`'s three dense columns: a key found on few events costs a few rows."""
        key = self.strings.id_of(name)
        if key < 0:
            return np.zeros(0, np.int64)
        owners = self._rows_of(key)[1]
        meta = self._meta_stat(key)
        if meta is not None:
            by_meta = np.flatnonzero(meta[0][self.meta] != KIND_NONE)
            if not len(owners):
                return by_meta.astype(np.int64)
            # not np.union1d: its plain np.unique takes NumPy 2.3+'s hash table, 0.36 s for
            # the 757k events with a `category` at 1M Kineto events
            return distinct(np.concatenate((by_meta, owners))).astype(np.int64)
        if len(owners) > 1 and not (owners[1:] > owners[:-1]).all():
            owners = distinct(owners)  # the same key twice on an event
        return owners.astype(np.int64)

    def stat_present(self, name: str) -> np.ndarray:
        """`stat`'s ``present`` alone, from `stat_events` (no kind and value columns: 9 bytes
        an event less, and no scatter of the values)."""
        present = np.zeros(self.n_events, dtype=bool)
        present[self.stat_events(name)] = True
        return present

    def stat_among(self, name: str, events: np.ndarray) -> tuple[np.ndarray, StatColumn]:
        """The events among ``events`` (ascending, distinct event indices) that have the stat
        ``name``: (their positions in ``events``, their stat) — ``flatnonzero`` of
        ``stat(name).present[events]`` and `stat` there, without a column over all of them."""
        events = np.asarray(events, dtype=np.int64)
        key = self.strings.id_of(name)
        if key >= 0 and self._meta_stat(key) is None:  # event stats only: read from the rows
            rows, owners = self._rows_of(key)
            pos, found = _positions(events, owners, self.n_events)
            if found is not None:
                rows = rows[found]
            last = np.ones(len(pos), dtype=bool)  # an event with the key twice: its last row
            last[:-1] = pos[1:] != pos[:-1]
            if not last.all():
                pos, rows = pos[last], rows[last]
            present = np.ones(len(pos), dtype=bool)
            return pos, StatColumn(present, self.stats.kind[rows], self.stats.value[rows])
        pos = _positions(events, self.stat_events(name), self.n_events)[0]
        return pos, self.stat_at(name, events[pos])

    def stat_value_py(self, kind: int, value: int) -> PyStat:
        """One stat value as a Python object."""
        if kind in (KIND_INT, KIND_UINT):
            return value if kind == KIND_INT or value >= 0 else value + (1 << 64)
        if kind == KIND_DOUBLE:
            return float(struct.unpack("<d", struct.pack("<q", value))[0])
        if kind == KIND_STR:
            return self.strings[value]
        if kind == KIND_BYTES:
            return self.strings[value].encode("utf-8", "surrogateescape")
        return None

    def event_stats(self, event: int) -> dict[str, PyStat]:
        """All stats of one event (metadata stats first, event stats override)."""
        out: dict[str, PyStat] = {}
        meta = int(self.meta[event])
        for table, lo, hi in (
            (self.meta_stats, self.meta_stat_start[meta], self.meta_stat_start[meta + 1]),
            (self.stats, self.stat_start[event], self.stat_start[event + 1]),
        ):
            for row in range(int(lo), int(hi)):
                out[self.strings[int(table.key[row])]] = self.stat_value_py(
                    int(table.kind[row]), int(table.value[row])
                )
        return out

    def event_name(self, event: int) -> str:
        return self.strings[int(self.name[event])]


def _each_once(owners: np.ndarray, events: np.ndarray) -> bool:
    """Whether ``events`` are ``owners`` (a stat's row owners, ascending) and each event owns
    one row: the stat's rows are then the events' rows, in their order."""
    return bool(np.array_equal(owners, events)) and bool(np.all(owners[1:] > owners[:-1]))


def _positions(
    events: np.ndarray, targets: np.ndarray, n_events: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """(positions in ``events`` of the ``targets`` found there (int32 where they fit), which
    targets they are; None when all are): both ascending event indices below ``n_events``,
    ``events`` distinct."""
    m = len(events)
    if not m or not len(targets):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(targets) * max(m.bit_length(), 1) < n_events // 4:  # few look-ups: binary searches
        pos = np.searchsorted(events, targets)
        np.minimum(pos, m - 1, out=pos)
        found = np.flatnonzero(events[pos] == targets)
        return pos[found], found
    # many (a stat on most events): one position per event in a dense map, gathered
    index_type = np.int32 if m < 2**31 else np.int64
    where = np.full(n_events, -1, dtype=index_type)
    where[events] = np.arange(m, dtype=index_type)
    pos = where[targets]
    del where
    if pos.min() >= 0:  # every target among the events (the usual case): no gathers
        return pos, None
    found = np.flatnonzero(pos >= 0)
    return pos[found], found
