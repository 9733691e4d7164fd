"""What routing a Kineto trace leaves for the importer's later steps (`RouteState`).

`fast_route.route` fills it from the trace's columns: the builder's planes and lines, the
event metadata ids by (plane, name, display name), thread names, flows, the ops a flow can
end at, launches and kernels without a correlation id, the profiler's own spans and the
events left out. `importer.finish` then binds the flows, names the threads, adds the Memory
line and the plane stats.
"""

from __future__ import annotations

from typing import NamedTuple

from stepscope.xspace.builder import LineBuilder, PlaneBuilder, XSpaceBuilder
from stepscope.xspace.kineto.devices import SYNTHETIC_LINE_BASE
from stepscope.xspace.kineto.fwdbwd import Bound

HOST_PLANE = "/host:CPU"
CUPTI_PLANE = "/host:CUPTI"
ThreadKey = tuple[object, object]
# Where an event was added: its line and index there (flows are bound after routing).
EventRef = tuple[LineBuilder, int]


class Flow(NamedTuple):
    """A flow event (``s`` / ``f`` / ``t``): what binding it reads."""

    ph: str
    cat: str | None
    pid: object
    tid: object
    ts: int | None  # ns relative to the trace's base time (None: no valid timestamp)
    id: int | None


class RouteState:
    """See the module docstring. ``builder``: a `columns.ColumnSpace` (a plain `XSpaceBuilder`
    for the tests' per-event oracle)."""

    def __init__(self, builder: XSpaceBuilder, base_ns: int) -> None:
        self.builder = builder
        self.base_ns = base_ns
        self.host = builder.plane(HOST_PLANE)
        self.host_lines: dict[ThreadKey, LineBuilder] = {}
        self.device_planes: dict[int, PlaneBuilder] = {}
        self.thread_names: dict[ThreadKey, str] = {}
        # (plane, name, display name) -> (metadata id, category of its first event)
        self.metadata: dict[tuple[str, str, str], tuple[int, str]] = {}
        self.ops_by_start: dict[tuple[object, object, object], EventRef] = {}
        self.flows: list[Flow] = []
        self.uncorrelated: dict[tuple[object, object, object], EventRef] = {}
        self.spans: list[tuple[int, int]] = []  # profiler "Trace" spans
        self.skipped: dict[str, int] = {}
        # The lines `fast_route.route` made, by its line number.
        self.lines: list[LineBuilder] = []
        # The fwdbwd flows `fast_route` bound on arrays (their stats are added after routing).
        self.fwdbwd: Bound | None = None
        self._used_line_ids: set[int] = set()

    def host_line(self, key: ThreadKey) -> LineBuilder:
        """The host line of thread ``key`` (pid, tid), made on first use: its id is the tid
        when that is a number no other thread's line has, else a synthetic id."""
        tid = key[1]
        if type(tid) is int and tid not in self._used_line_ids:
            line_id = tid
        else:
            line_id = SYNTHETIC_LINE_BASE + len(self.host_lines)
        self._used_line_ids.add(line_id)
        line = self.host.line(line_id)
        self.host_lines[key] = line
        return line
