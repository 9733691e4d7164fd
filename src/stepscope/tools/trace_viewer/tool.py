"""Trace viewer: the timeline of every event of one host, browsable at any zoom.

``build`` returns the trace's structure (sections, tracks, time range, counters, steps); the
events themselves come from the endpoints in `api` (window, search, event,
select), answered from the cached `TraceIndex`. Times in responses are nanoseconds relative
to ``origin_ns`` (the first event's start), so they stay exact as JavaScript numbers.
See docs/tools/trace_viewer.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.model import Profile
from stepscope.stats.trace_index.flows import KIND_NAMES
from stepscope.stats.trace_index.index import TraceIndex
from stepscope.stats.trace_index.tracks import sections
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolEndpoint, ToolSpec
from stepscope.tools.trace_viewer import api

FORMAT_VERSION = 1


@dataclass(frozen=True)
class TraceViewerData:
    profile: Profile
    index: TraceIndex

    def to_json(self) -> dict[str, Any]:
        profile, index = self.profile, self.index
        origin = index.origin_ns
        steps = index.steps
        return {
            "format_version": FORMAT_VERSION,
            "host": profile.hostname,
            "events": profile.n_events,
            "origin_ns": str(origin),  # beyond 2**53: a string, for display only
            "duration_ns": index.end_ns - origin,
            "sections": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "plane": s.plane,
                    "tracks": [
                        {
                            "line": t.line,
                            "name": t.name,
                            "id": t.line_id,
                            "events": t.events,
                            "rows": t.depth_count,
                        }
                        for t in s.tracks
                    ],
                }
                for s in sections(profile, index.line_depths)
            ],
            "counters": [
                {"id": k, "name": c.name, "unit": c.unit} for k, c in enumerate(index.counters)
            ],
            "steps": {
                "number": steps.number.tolist(),
                "start_ns": (steps.start_ns - origin).tolist(),
                "dur_ns": steps.dur_ns.tolist(),
                "event": steps.event.tolist(),
            },
            "flows": len(index.flows),
            "flow_kinds": list(KIND_NAMES),
            "endpoints": [e.name for e in ENDPOINTS],
        }


def build(ctx: ToolContext) -> TraceViewerData:
    return TraceViewerData(*api.trace_of(ctx))


ENDPOINTS = (
    ToolEndpoint("window", api.window, "events, flows and counters of a time window"),
    ToolEndpoint("search", api.search, "events whose name contains q"),
    ToolEndpoint("event", api.event, "one event: times, all stats, flows"),
    ToolEndpoint("select", api.select, "events in a box, aggregated by name"),
)


TOOL = ToolSpec(
    name="trace_viewer",
    title="Trace viewer",
    description="Timeline of every event: zoom, pan, select, search, flows and counters.",
    build=build,
    multi_host=False,
    order=15,
    endpoints=ENDPOINTS,
)
