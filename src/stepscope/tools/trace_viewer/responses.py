"""The trace viewer's JSON answers as declared fields (`stepscope.tools.output`): the
structure `build` returns and the steps, search, event and select endpoints' responses (the window
endpoint answers in the binary format of `wire`). Times are ns relative to ``origin_ns``."""

from __future__ import annotations

from typing import Any

from stepscope.records import record
from stepscope.tools.output import out


@record
class Track:
    line: int = out("the track's line number, used by the queries (`lines`, `rows`)")
    name: str = out("its label")
    id: int = out("the line id in the profile")
    events: int = out("events on the track")
    rows: int = out("depth rows (deepest nesting + 1)")


@record
class Section:
    name: str = out("plane name")
    kind: str = out("`device`, `host` or `other`")
    plane: int = out("plane number in the profile")
    tracks: tuple[Track, ...] = out("its tracks, in display order")


@record
class CounterInfo:
    id: int = out("counter number (the window's `c{id}` arrays)")
    name: str = out("e.g. memory in use")
    unit: str = out("`bytes` or `percent`")


@record
class StepColumns:
    number: list[int] = out("step numbers (the overview's steps)")
    start_ns: list[int] = out("step starts since the trace start", unit="ns")
    dur_ns: list[int] = out("step durations", unit="ns")
    event: list[int] = out("the step marker's event id")


@record
class TraceStructure:
    format_version: int = out("version of this structure and of the window wire format (1)")
    host: str = out("the host shown")
    events: int = out("number of events of the host")
    origin_ns: str = out("absolute start of the trace (a string: beyond 2^53)", unit="ns")
    duration_ns: int = out("last event end - `origin_ns`", unit="ns")
    sections: tuple[Section, ...] = out("planes with their tracks")
    counters: tuple[CounterInfo, ...] = out("counter tracks")
    flows: int = out("number of flows")
    flow_kinds: list[str] = out("kind names by kind number (`launch`, `producer`)")
    endpoints: list[str] = out(
        "the follow-up queries this tool answers (`window`, `steps`, `search`, `event`, `select`)"
    )


@record
class EventColumns:
    event: list[int] = out("event ids (for `event?id=`)")
    line: list[int] = out("their tracks")
    depth: list[int] = out("their rows")
    start_ns: list[int] = out("starts since the trace start", unit="ns")
    dur_ns: list[int] = out("durations", unit="ns")
    name: list[str] = out("names")


@record
class SearchAnswer:
    query: str = out("the text searched for (any case, substring of the name)")
    total: int = out("matches in the whole trace")
    names: int = out("distinct matching names")
    offset: int = out("the first match returned, in start order")
    results: EventColumns = out("matches `offset .. offset+limit` in start order")
    window_total: int | None = out(
        "with a window (`t0`, `t1`): matches overlapping it", omit_none=True
    )
    window: EventColumns | None = out(
        "with a window: those matches, one per row and pixel as in the window rule",
        omit_none=True,
    )


@record
class EventBrief:
    event: int = out("event id")
    name: str = out("event name")
    line: int = out("its track's line number")
    track: str = out("its track's label")
    section: str = out("its plane's name")
    depth: int = out("its row")
    start_ns: int = out("start since the trace start", unit="ns")
    dur_ns: int = out("duration", unit="ns")


@record
class FlowHead:
    direction: str = out("`out` when the event is the flow's source, else `in`")
    kind: str = out("flow kind (`launch`, `producer`)")


@record
class FlowEnd(EventBrief, FlowHead):
    """The other end of a flow: direction and kind first, then the event (dataclass fields
    follow the bases in reverse order)."""


@record
class EventAnswer(EventBrief):
    display_name: str = out("the event metadata's display name")
    stats: dict[str, Any] = out(
        "all stats, metadata stats first; bytes as hex, integers beyond 2^53 as strings"
    )
    flows: tuple[FlowEnd, ...] = out("the other end of each flow")


@record
class NameTotal:
    name: str = out("event name")
    count: int = out("its events in the box")
    total_ns: float = out("their total duration", unit="ns")
    avg_ns: float = out("their average duration", unit="ns")


@record
class SelectAnswer:
    count: int = out("events of the chosen rows overlapping [t0, t1)")
    total_ns: float = out("their total duration", unit="ns")
    distinct_names: int = out("their distinct names")
    by_name: tuple[NameTotal, ...] = out("the 500 names with the most time, largest first")
