"""Trace viewer: the timeline of every event of one host, or of several hosts on one clock
(ALL_HOSTS, see `pod`), browsable at any zoom.

``build`` returns the trace's structure (sections, tracks, time range, counters); the
events and the steps come from the endpoints in `api` (window, steps, search, event,
select), answered from the cached `TraceIndex`: a first window waits for neither the steps
(the step database) nor the name index. Times in responses are nanoseconds relative
to ``origin_ns`` (the first event's start), so they stay exact as JavaScript numbers.
See docs/tools/trace_viewer.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from stepscope.model import ALL_HOSTS, Profile
from stepscope.stats.trace_index.flows import KIND_NAMES
from stepscope.stats.trace_index.index import TraceIndex
from stepscope.stats.trace_index.tracks import sections
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolEndpoint, ToolOption, ToolSpec, ToolUsageError
from stepscope.tools.trace_viewer import api
from stepscope.tools.trace_viewer.pod_structure import PodTraceView, pod_view
from stepscope.tools.trace_viewer.responses import (
    CounterInfo,
    EventAnswer,
    SearchAnswer,
    Section,
    SelectAnswer,
    StepColumns,
    TraceStructure,
    Track,
)

if TYPE_CHECKING:
    from stepscope.tools.trace_viewer.pod import PodTrace

FORMAT_VERSION = 1


def _structure(profile: Profile, index: TraceIndex) -> TraceStructure:
    origin = index.origin_ns
    return TraceStructure(
        format_version=FORMAT_VERSION,
        host=profile.hostname,
        events=profile.n_events,
        origin_ns=str(origin),  # beyond 2**53: a string, for display only
        duration_ns=index.end_ns - origin,
        sections=tuple(
            Section(
                s.name,
                s.kind,
                s.plane,
                tuple(Track(t.line, t.name, t.line_id, t.events, t.depth_count) for t in s.tracks),
            )
            for s in sections(profile, index.line_depths)
        ),
        counters=tuple(CounterInfo(k, c.name, c.unit) for k, c in enumerate(index.counters)),
        flows=len(index.flows),
        flow_kinds=list(KIND_NAMES),
        endpoints=[e.name for e in ENDPOINTS],
    )


def is_pod(ctx: ToolContext) -> bool:
    return ctx.host == ALL_HOSTS


def build(ctx: ToolContext) -> TraceStructure | PodTraceView:
    if is_pod(ctx):
        from stepscope.tools.trace_viewer.pod import pod_trace

        return pod_view(pod_trace(ctx), tuple(e.name for e in ENDPOINTS))
    return _structure(*api.trace_of(ctx))


Handler = Callable[[ToolContext, Mapping[str, str]], tuple[bytes, str]]


def _any_host(one: Handler, many: str) -> Handler:
    """``one`` for a host, `pod_api`'s ``many`` for ALL_HOSTS (whose ``hosts`` and ``align``
    come with the query, as the tool's options do). The multi-host modules are imported when
    a query needs them: one host's first window does not wait for them (about 40 ms)."""

    def handle(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
        if not is_pod(ctx):
            return one(ctx, params)
        from stepscope.tools.trace_viewer import pod_api
        from stepscope.tools.trace_viewer.pod import pod_trace

        options = {k: params.get(k, "") for k in ("hosts", "align")}
        try:
            pod = pod_trace(ToolContext(ctx.run, ctx.host, ctx.store, options))
        except ToolUsageError as exc:
            raise ValueError(str(exc)) from None
        answer: Callable[[PodTrace, Mapping[str, str]], tuple[bytes, str]] = getattr(pod_api, many)
        return answer(pod, params)

    return handle


ENDPOINTS = (
    ToolEndpoint(
        "window",
        _any_host(api.window, "window"),
        "events, flows and counters of a time window",
    ),
    ToolEndpoint(
        "steps",
        _any_host(api.steps, "steps"),
        "the training steps (the overview's), as columns",
        StepColumns,
    ),
    ToolEndpoint(
        "search",
        _any_host(api.search, "search"),
        "events whose name contains q",
        SearchAnswer,
    ),
    ToolEndpoint(
        "event",
        _any_host(api.event, "event"),
        "one event: times, all stats, flows",
        EventAnswer,
    ),
    ToolEndpoint(
        "select",
        _any_host(api.select, "select"),
        "events in a box, aggregated by name",
        SelectAnswer,
    ),
)


TOOL = ToolSpec(
    name="trace_viewer",
    title="Trace viewer",
    description="Timeline of every event: zoom, pan, select, search, flows and counters.",
    build=build,
    # ALL_HOSTS (or the hosts option): one timeline, a section per host (pod.py); the hosts'
    # indexes are its own per-host tasks, not the summaries of tools/_fanout.py.
    fan_out=False,
    options=(
        ToolOption("hosts", "at ALL_HOSTS: the hosts to show, comma-separated (default: all)", ""),
        ToolOption(
            "align",
            "at ALL_HOSTS: clock (each host's own timestamps) or start (first events at 0)",
            "clock",
        ),
    ),
    order=15,
    endpoints=ENDPOINTS,
)
