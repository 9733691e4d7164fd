"""The trace viewer over several hosts: one timeline with a section per host, on one clock.

Per-host work. Each selected host's converted profile and trace index (its level-of-detail
index, `stepscope.stats.trace_index`) are built by the run's executor, one task per host
(`index_host`), and left in the cache; the driver then memory-maps them. Windows, searches
and selections query each host's own index and merge the answers (`pod_api`), so a host
costs the driver nothing until it is in view, and no index spans two hosts.

Clock. ``align=clock`` (the default) keeps every host's own timestamps: profilers stamp host
events with the wall clock (nanoseconds since the Unix epoch) and device events are
converted to it, so hosts line up as well as their clocks are synchronized (NTP: about a
millisecond; PTP: microseconds). Time 0 is the earliest first event of all hosts.
``align=start`` shifts each host so its own first event is at 0 (profiles captured at
different times, or clocks known to be off). Each host's shift is in the structure.

Numbering. Lines and events get global numbers: host k's line ``i`` is ``line_base[k] + i`` and
its event ``e`` is ``event_base[k] + e`` (bases in the structure), so the page and the
endpoints address any host's track or event with one number.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

import numpy as np

from stepscope import log
from stepscope.errors import StepscopeError
from stepscope.executor import HostTask
from stepscope.model import Profile, cache, open_host
from stepscope.model.runs import HostFile
from stepscope.records import record
from stepscope.stats.trace_index.index import TraceIndex, open_trace_index
from stepscope.store import background, location
from stepscope.tools._fanout import check_some_left, map_hosts
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolUsageError
from stepscope.tools.trace_viewer.pod_names import PodNames

ALIGNMENTS = ("clock", "start")


@record
class IndexArgs:
    cache_dir: str


@record
class IndexReady:
    events: int


def index_host(task: HostTask) -> IndexReady:
    """Runs in a worker: converts the host's profile and builds its trace index, both saved in
    the cache where the driver memory-maps them. Only the event count comes back."""
    cache_dir = Path(task.args.cache_dir)
    profile = open_host(task.host, use_cache=True, cache_dir=cache_dir)
    open_trace_index(profile, use_cache=True, cache_dir=cache_dir)
    background.wait()  # written before "ready": the driver maps them next
    return IndexReady(profile.n_events)


@record
class HostTrace:
    host: str
    profile: Profile
    index: TraceIndex
    line_base: int
    event_base: int
    counter_base: int
    zero_ns: int  # this host's absolute time drawn at 0 on the shared axis


@record
class PodTrace:
    hosts: tuple[HostTrace, ...]
    align: str
    duration_ns: int
    names: PodNames = field(default_factory=PodNames, compare=False)

    @property
    def n_lines(self) -> int:
        last = self.hosts[-1]
        return last.line_base + len(last.profile.lines)

    @property
    def n_events(self) -> int:
        last = self.hosts[-1]
        return last.event_base + last.profile.n_events

    def host_of_line(self, line: int) -> int:
        bases = [h.line_base for h in self.hosts]
        return int(np.searchsorted(bases, line, side="right")) - 1

    def host_of_event(self, event: int) -> int:
        bases = [h.event_base for h in self.hosts]
        return int(np.searchsorted(bases, event, side="right")) - 1


def chosen_hosts(ctx: ToolContext) -> list[HostFile]:
    """The hosts the ``hosts`` option names (comma-separated; empty: all), run order."""
    text = ctx.option("hosts").strip()
    if not text:
        return list(ctx.run.hosts)
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = set(ctx.run.host_names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ToolUsageError(
            f"option hosts: no host {unknown[0]!r} in run {ctx.run.name!r} "
            f"(hosts: {', '.join(ctx.run.host_names[:20])}"
            f"{', ...' if len(known) > 20 else ''})"
        )
    wanted = set(names)
    return [h for h in ctx.run.hosts if h.host in wanted]


def _warn_unshared(ready: list[HostFile], cache_dir: Path | None) -> None:
    """One line when workers built hosts' entries this process cannot see (a cache directory
    not shared with them): they are built again here."""
    missing = [
        h for h in ready if not (cache.entry_dir(h.path, cache_dir) / "header.json").exists()
    ]
    if missing:
        log.warn(
            f"stepscope: warning: the workers' converted profiles of {len(missing)} host(s) "
            f"are not in this process's cache directory {location.root(cache_dir)}: built "
            "here instead; give the workers this directory at the same path (a shared "
            'file system; see docs/pod_scale.md, "Caches")'
        )


def _alignment(ctx: ToolContext) -> str:
    align = ctx.option("align", "clock") or "clock"
    if align not in ALIGNMENTS:
        raise ToolUsageError(
            f"option align={align[:40]!r} of tool trace_viewer must be one of "
            f"{', '.join(ALIGNMENTS)}"
        )
    return align


def _open(ctx: ToolContext, host: HostFile) -> tuple[Profile, TraceIndex] | None:
    store = ctx.store
    try:
        profile = open_host(host, use_cache=store.use_cache, cache_dir=store.cache_dir)
        index = open_trace_index(profile, use_cache=store.use_cache, cache_dir=store.cache_dir)
    except StepscopeError as exc:
        store.fail(host.path, str(exc))
        return None
    return profile, index


def _assemble(ctx: ToolContext, hosts: list[HostFile], align: str) -> PodTrace:
    store = ctx.store
    todo = [h for h in hosts if h.path not in store.host_errors]
    if store.use_cache and len(todo) > 1:
        # Indexes built in parallel by the executor and left in the cache; without a cache
        # (--no-cache) there is nowhere to leave them, so they are built below, here. The
        # workers write into this process's cache directory, at this process's paths.
        args = IndexArgs(str(location.root(store.cache_dir)))
        ready = [h for h, _ in map_hosts(store, todo, index_host, args, portable=False)]
        _warn_unshared(ready, store.cache_dir)
    opened = []
    for h in hosts:
        if h.path in store.host_errors:
            continue
        found = _open(ctx, h)
        if found is not None:
            opened.append((h, *found))
    check_some_left(ctx)
    if not opened:
        raise StepscopeError("none of the chosen hosts could be read")
    common = min(index.origin_ns for _h, _p, index in opened)
    traces, line_base, event_base, counter_base = [], 0, 0, 0
    for h, profile, index in opened:
        zero = common if align == "clock" else index.origin_ns
        traces.append(HostTrace(h.host, profile, index, line_base, event_base, counter_base, zero))
        line_base += len(profile.lines)
        event_base += profile.n_events
        counter_base += len(index.counters)
    duration = max(t.index.end_ns - t.zero_ns for t in traces)
    return PodTrace(tuple(traces), align, max(duration, 1))


def pod_trace(ctx: ToolContext) -> PodTrace:
    """The pod's hosts, opened and numbered, memoized for the life of the store."""
    hosts = chosen_hosts(ctx)
    align = _alignment(ctx)
    key = ("trace_viewer.pod", ctx.run.name, align, *(h.path for h in hosts))
    return ctx.store.reduction(key, lambda: _assemble(ctx, hosts, align))
