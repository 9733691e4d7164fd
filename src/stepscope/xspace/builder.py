"""Build XSpace traces in code: used by capture, importers and tests.

    builder = XSpaceBuilder(hostname="worker0")
    host = builder.plane("/host:CPU")
    thread = host.line(1234, "python")
    thread.event("train", start_ns=1_000, dur_ns=5_000, stats={"step_num": 1, "_r": 1})
    space = builder.build()

Event and stat metadata are interned per plane, as TensorFlow does. Events are buffered as
plain tuples and turned into protobuf messages only in `build()`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from operator import itemgetter

from stepscope.records import record
from stepscope.xspace.headers import (
    HeaderEventMetadata,
    HeaderStat,
    HeaderStatMetadata,
    PlaneHeader,
)

TYPE_CHECKING = False  # protobuf only in `build()`: the Kineto importer builds columns instead
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XPlane, XSpace, XStat

INT64_MAX = (1 << 63) - 1


@record
class Ref:
    """A string stat value stored as a reference to a stat metadata name (``ref_value``)."""

    text: str


StatValue = int | float | str | bytes | bool | Ref
Stats = Mapping[str, StatValue]


def stat_oneof(value: StatValue, plane: PlaneBuilder) -> tuple[str, int | float | str | bytes]:
    """The XStat oneof field that TensorFlow would use for ``value``'s Python type, and the
    value to store there."""
    if isinstance(value, bool):
        return "int64_value", int(value)
    if isinstance(value, int):
        return ("uint64_value" if value > INT64_MAX else "int64_value"), value
    if isinstance(value, float):
        return "double_value", value
    if isinstance(value, str):
        return "str_value", value
    if isinstance(value, bytes):
        return "bytes_value", value
    if isinstance(value, Ref):
        return "ref_value", plane.stat_metadata_id(value.text)
    raise TypeError(f"unsupported stat value type {type(value).__name__} for XStat")


def set_stat_value(stat: XStat, value: StatValue, plane: PlaneBuilder) -> None:
    """Store ``value`` in the XStat oneof that TensorFlow would use for its Python type."""
    which, stored = stat_oneof(value, plane)
    setattr(stat, which, stored)


@record(frozen=False)
class LineBuilder:
    """One line (thread or stream): buffered events, converted in `PlaneBuilder.build`."""

    plane: PlaneBuilder
    id: int
    name: str
    display_name: str = ""
    display_id: int = 0
    timestamp_ns: int | None = None
    events: list[tuple[int, int, int, Stats | None]] = field(default_factory=list)

    def event(
        self,
        name: str,
        start_ns: int,
        dur_ns: int = 0,
        stats: Stats | None = None,
        display_name: str = "",
    ) -> None:
        """Add one event; ``start_ns`` is absolute (same clock as the line timestamp)."""
        meta = self.plane.event_metadata_id(name, display_name)
        self.events.append((meta, int(start_ns), int(dur_ns), stats or None))

    def add_event(self, meta_id: int, start_ns: int, dur_ns: int, stats: Stats | None) -> None:
        """`event` for importers that cache ids from `PlaneBuilder.event_metadata_id` (faster)."""
        self.events.append((meta_id, start_ns, dur_ns, stats or None))

    def add_stats(self, index: int, stats: Stats) -> None:
        """Merge ``stats`` into the already added event number ``index`` (existing keys win).

        Importers use it to attach what they learn after an event was added (flow ends).
        """
        meta, start_ns, dur_ns, old = self.events[index]
        merged = {**stats, **old} if old else dict(stats)
        self.events[index] = (meta, start_ns, dur_ns, merged)

    def sort_events(self) -> None:
        """Order events by start time, enclosing (longer) events first at equal starts."""
        # Two stable sorts with C key functions: much faster than one with a tuple key.
        self.events.sort(key=itemgetter(2), reverse=True)
        self.events.sort(key=itemgetter(1))

    def __len__(self) -> int:
        return len(self.events)


def _span_error(line: str) -> ValueError:
    return ValueError(
        f"the events of line {line!r} span more than 106 days, more than XSpace's int64 "
        "picosecond offsets hold"
    )


class PlaneBuilder:
    """One plane: its lines, interned event/stat metadata and plane-level stats."""

    def __init__(self, plane_id: int, name: str) -> None:
        self.id = plane_id
        self.name = name
        self.lines: list[LineBuilder] = []
        self._lines_by_id: dict[int, LineBuilder] = {}
        self._event_meta: dict[tuple[str, str], int] = {}
        self._event_meta_stats: dict[int, Stats] = {}
        self._stat_meta: dict[str, int] = {}
        self.stats: dict[str, StatValue] = {}

    def line(
        self, line_id: int, name: str = "", display_name: str = "", timestamp_ns: int | None = None
    ) -> LineBuilder:
        """The line with ``line_id``, created on first use."""
        existing = self._lines_by_id.get(line_id)
        if existing is not None:
            if name and not existing.name:
                existing.name = name
            return existing
        line = LineBuilder(self, line_id, name, display_name, timestamp_ns=timestamp_ns)
        self.lines.append(line)
        self._lines_by_id[line_id] = line
        return line

    def event_metadata_id(
        self, name: str, display_name: str = "", stats: Stats | None = None
    ) -> int:
        """Id of the event metadata for (name, display_name), created on first use."""
        key = (name, display_name)
        meta_id = self._event_meta.get(key)
        if meta_id is None:
            meta_id = len(self._event_meta) + 1
            self._event_meta[key] = meta_id
        if stats:
            self._event_meta_stats[meta_id] = stats
        return meta_id

    def stat_metadata_id(self, name: str) -> int:
        """Id of the stat metadata named ``name``, created on first use."""
        meta_id = self._stat_meta.get(name)
        if meta_id is None:
            meta_id = len(self._stat_meta) + 1
            self._stat_meta[name] = meta_id
        return meta_id

    def _add_stats(self, add: Callable[[], XStat], stats: Stats) -> None:
        stat_meta = self._stat_meta
        for key, value in stats.items():
            stat = add()
            meta_id = stat_meta.get(key)
            stat.metadata_id = self.stat_metadata_id(key) if meta_id is None else meta_id
            # Fast paths for the common types (millions of stats); the rest as in set_stat_value.
            if type(value) is int and value <= INT64_MAX:
                stat.int64_value = value
            elif type(value) is str:
                stat.str_value = value
            elif type(value) is float:
                stat.double_value = value
            else:
                set_stat_value(stat, value, self)

    def build_into(self, plane: XPlane) -> None:
        plane.id = self.id
        plane.name = self.name
        for line_builder in self.lines:
            line = plane.lines.add()
            line.id = line_builder.id
            line.display_id = line_builder.display_id
            line.name = line_builder.name
            line.display_name = line_builder.display_name
            events = line_builder.events
            base_ns = line_builder.timestamp_ns
            if base_ns is None:
                base_ns = min((e[1] for e in events), default=0)
            line.timestamp_ns = base_ns
            end_ns = base_ns
            add_event = line.events.add
            for meta, start_ns, dur_ns, stats in events:
                event = add_event()
                event.metadata_id = meta
                try:  # free unless raised (3.11+)
                    event.offset_ps = (start_ns - base_ns) * 1000
                    event.duration_ps = dur_ns * 1000
                except ValueError:
                    raise _span_error(line.name) from None
                end_ns = max(end_ns, start_ns + dur_ns)
                if stats:
                    self._add_stats(event.stats.add, stats)
            try:
                line.duration_ps = (end_ns - base_ns) * 1000
            except ValueError:
                raise _span_error(line.name) from None
        for (name, display_name), meta_id in self._event_meta.items():
            meta = plane.event_metadata[meta_id]
            meta.id = meta_id
            meta.name = name
            meta.display_name = display_name
            meta_stats = self._event_meta_stats.get(meta_id)
            if meta_stats:
                self._add_stats(meta.stats.add, meta_stats)
        if self.stats:
            self._add_stats(plane.stats.add, self.stats)
        # Stat metadata last: building stats above may have interned new names.
        for name, meta_id in self._stat_meta.items():
            stat_meta = plane.stat_metadata[meta_id]
            stat_meta.id = meta_id
            stat_meta.name = name

    def header(self) -> PlaneHeader:
        """What `build_into` writes but the lines, without protobuf (see `headers`)."""

        def stats_of(stats: Stats) -> list[HeaderStat]:
            out = []
            for key, value in stats.items():
                which, stored = stat_oneof(value, self)
                out.append(HeaderStat(self.stat_metadata_id(key), which, stored))
            return out

        event_metadata = {
            meta_id: HeaderEventMetadata(
                meta_id, name, display_name, stats_of(self._event_meta_stats.get(meta_id, {}))
            )
            for (name, display_name), meta_id in self._event_meta.items()
        }
        stats = stats_of(self.stats)
        # Stat metadata last: the stats above may have interned new names.
        stat_metadata = {i: HeaderStatMetadata(i, name) for name, i in self._stat_meta.items()}
        return PlaneHeader(self.id, self.name, event_metadata, stat_metadata, stats)


class XSpaceBuilder:
    """Collects planes and produces an `XSpace` message."""

    def __init__(self, hostname: str | None = None) -> None:
        self.planes: list[PlaneBuilder] = []
        self._by_name: dict[str, PlaneBuilder] = {}
        self.hostnames: list[str] = [hostname] if hostname else []
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def plane(self, name: str, plane_id: int | None = None) -> PlaneBuilder:
        """The plane named ``name``, created on first use."""
        existing = self._by_name.get(name)
        if existing is not None:
            return existing
        plane = PlaneBuilder(len(self.planes) if plane_id is None else plane_id, name)
        self.planes.append(plane)
        self._by_name[name] = plane
        return plane

    def event_count(self) -> int:
        return sum(len(line) for plane in self.planes for line in plane.lines)

    def build(self) -> XSpace:
        from stepscope.xspace.proto.xplane_pb2 import XSpace

        space = XSpace()
        for plane_builder in self.planes:
            plane_builder.build_into(space.planes.add())
        space.hostnames.extend(self.hostnames)
        space.errors.extend(self.errors)
        space.warnings.extend(self.warnings)
        return space
