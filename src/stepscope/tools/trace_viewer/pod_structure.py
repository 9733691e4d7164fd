"""The multi-host trace viewer's first answer: every host's sections, tracks, counters and
steps in global numbers on the shared time axis (see `pod`). The events come from the
endpoints (`pod_api`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepscope.model import ALL_HOSTS
from stepscope.records import record
from stepscope.stats.trace_index.flows import KIND_NAMES
from stepscope.stats.trace_index.tracks import sections
from stepscope.tools.output import out
from stepscope.tools.trace_viewer.api import step_columns
from stepscope.tools.trace_viewer.responses import CounterInfo, Section, StepColumns, Track

if TYPE_CHECKING:
    from stepscope.tools.trace_viewer.pod import HostTrace, PodTrace


@record
class PodHost:
    name: str = out("the host")
    line_base: int = out("its first global line number")
    event_base: int = out("its first global event number")
    counter_base: int = out("its first global counter id")
    events: int = out("its events")
    zero_ns: str = out("its absolute time drawn at 0 (ns since the epoch; a string)")
    shift_ns: int = out("how much later its 0 is than the clock alignment's (0 with clock)", "ns")
    start_ns: int = out("its first event on the shared axis", "ns")
    end_ns: int = out("its last event's end on the shared axis", "ns")
    sections: tuple[Section, ...] = out(
        "its sections, as one host's trace viewer shows them (global line numbers)"
    )
    counters: tuple[CounterInfo, ...] = out("its counter tracks (global counter ids)")
    steps: StepColumns = out("its training steps, on the shared axis (global event ids)")


@record
class PodTraceView:
    format_version: int = out("layout of this answer (1)")
    host: str = out(f"`{ALL_HOSTS}`")
    align: str = out("`clock` (every host's own wall clock) or `start` (first events at 0)")
    events: int = out("events of all shown hosts")
    duration_ns: int = out("length of the shared axis", "ns")
    hosts: tuple[PodHost, ...] = out("one per shown host, run order")
    steps: StepColumns = out("the first host's steps (the step picker's)")
    flows: int = out("flows (within hosts) of all shown hosts")
    flow_kinds: tuple[str, ...] = out("flow kind names, by kind number")
    endpoints: tuple[str, ...] = out("the follow-up queries")


def host_steps(t: HostTrace) -> StepColumns:
    """A host's steps on the shared axis, in global event ids."""
    return step_columns(t.index, t.zero_ns, t.event_base)


def _host(t: HostTrace, clock_zero: int) -> PodHost:
    p, index = t.profile, t.index
    return PodHost(
        name=t.host,
        line_base=t.line_base,
        event_base=t.event_base,
        counter_base=t.counter_base,
        events=p.n_events,
        zero_ns=str(t.zero_ns),
        shift_ns=t.zero_ns - clock_zero,
        start_ns=index.origin_ns - t.zero_ns,
        end_ns=index.end_ns - t.zero_ns,
        sections=tuple(
            Section(
                s.name,
                s.kind,
                s.plane,
                tuple(
                    Track(k.line + t.line_base, k.name, k.line_id, k.events, k.depth_count)
                    for k in s.tracks
                ),
            )
            for s in sections(p, index.line_depths)
        ),
        counters=tuple(
            CounterInfo(t.counter_base + k, c.name, c.unit) for k, c in enumerate(index.counters)
        ),
        steps=host_steps(t),
    )


def pod_view(pod: PodTrace, endpoints: tuple[str, ...]) -> PodTraceView:
    clock_zero = min(t.index.origin_ns for t in pod.hosts)
    return PodTraceView(
        format_version=1,
        host=ALL_HOSTS,
        align=pod.align,
        events=pod.n_events,
        duration_ns=pod.duration_ns,
        hosts=tuple(_host(t, clock_zero) for t in pod.hosts),
        steps=host_steps(pod.hosts[0]),
        flows=sum(len(t.index.flows) for t in pod.hosts),
        flow_kinds=tuple(KIND_NAMES),
        endpoints=endpoints,
    )
