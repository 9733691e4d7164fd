"""The trace viewer's query endpoints (mounted as /api/tool/trace_viewer/<name>).

All times in parameters and answers are nanoseconds relative to the trace's ``origin_ns``.

- ``window?t0=&t1=&res=&lines=&counters=&form=`` -> binary `wire` response: the events to
  draw (level-of-detail rule in `stepscope.stats.trace_index.window`), the flows touching them and
  the counters sampled at ``res`` buckets; ``form=compact`` (what the page asks): the same
  arrays stored narrower (`compact`).
- ``steps`` -> JSON: the training steps (the overview's), as columns; kept out of the
  structure so that the first window does not wait for the step database.
- ``search?q=&limit=&offset=[&t0=&t1=&res=]`` -> JSON: total matches in the whole trace, the
  first ``limit`` in time order, and (with a window) the matches to highlight in it.
- ``event?id=`` -> JSON: one event with all its stats and the other ends of its flows.
- ``select?t0=&t1=&rows=`` -> JSON: the events of a box (rows ``line:depth`` or
  ``line:d0-d1``, comma-separated), aggregated by name.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from stepscope import limits
from stepscope.distinct import distinct_inverse
from stepscope.model import Profile, cache
from stepscope.stats.trace_index.counters import sample
from stepscope.stats.trace_index.flows import KIND_NAMES, window_flows
from stepscope.stats.trace_index.index import TraceIndex, open_trace_index
from stepscope.stats.trace_index.window import events_in_box, query_window, rows_of_pairs
from stepscope.store import background, entries
from stepscope.tools import kept, kept_apart, output
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.trace_viewer import compact
from stepscope.tools.trace_viewer import wire as trace_wire
from stepscope.tools.trace_viewer.responses import (
    EventAnswer,
    EventColumns,
    FlowEnd,
    NameTotal,
    SearchAnswer,
    SelectAnswer,
    StepColumns,
)

if TYPE_CHECKING:
    from stepscope.stats.trace_index.tracks import Steps

JSON = "application/json; charset=utf-8"
MAX_RESOLUTION = 16384
MAX_FLOWS = 20_000
MAX_COUNTER_BUCKETS = 4096
MAX_SEARCH_RESULTS = 1000
MAX_WINDOW_MATCHES = 50_000
MAX_SELECT_NAMES = 500
MAX_LIST_CHARS = 65_536  # `lines` / `rows` lists: what a URL can reasonably hold
_SAFE_INT = 1 << 53


# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
TRACE_INDEX: Key[TraceIndex] = Key("trace_index")


def trace_of(ctx: ToolContext) -> tuple[Profile, TraceIndex]:
    """The profile and its trace index for the context's (single) host, memoized. Their
    store entries are written once this answer is computed (`background.foreground`)."""
    host = ctx.hosts[0]
    store = ctx.store
    with background.foreground():
        profile = store.profile(ctx.run, host)
        index = ctx.intermediate(
            host,
            TRACE_INDEX,
            lambda p: open_trace_index(
                p,
                use_cache=store.use_cache,
                cache_dir=store.cache_dir,
                verbose=True,
                steps=lambda: _steps(ctx, host),
            ),
        )
    return profile, index


def _steps(ctx: ToolContext, host: str) -> Steps:
    """The steps the trace viewer draws, kept in the store on their own (`_analysis.trace_steps`)
    beside the step database they come from, which other tools share. Imported when the steps
    are asked for: the analysis modules are a third of the imports a first window waits for.
    A large profile's are built in a process of its own (`_build_apart`); read from the store
    after it, they are a few arrays, where the whole step database took 6.5 ms of CPU to
    decode beside the windows (decision 660)."""
    from stepscope.tools._analysis import trace_steps

    _build_apart(ctx, host)
    return trace_steps(ctx, host)


_apart = threading.Lock()  # one such process at a time: the second caller reads its result


def _build_apart(ctx: ToolContext, host: str) -> None:
    """Builds the steps of a profile of `kept_apart.APART_MIN_EVENTS` or more, and the step
    database they come from, in another process, which keeps both in the store for `_steps`
    to read (decision 174): on a thread of this one it held the GIL for seconds, and the
    windows the page asks for meanwhile (panning, zooming while the steps load) took several
    times longer. Skipped where it would not pay: a small profile, no store, the steps or the
    step database already built or kept (the steps are then found from the database here), a
    profile not yet converted into the store (the child would convert the file again)."""
    store = ctx.store
    source = ctx.option("step_source", "auto")
    name = f"trace_steps:{source}"
    if not store.keep_intermediates or name not in kept_apart.KEPT_APART:
        return
    host_file = ctx.run.host(host)
    n_events = store.profile(ctx.run, host).n_events
    if n_events < kept_apart.APART_MIN_EVENTS:
        return
    with _apart:
        built = store.intermediates()
        if any((host_file.path, n) in built for n in (name, f"step_db:{source}")):
            return
        targets = [
            kept.entry(host_file.path, host_file.host, n, store.cache_dir)
            for n in (name, f"step_db:{source}")
        ]
        if targets[0] is None or any(t is not None and t.exists() for t in targets):
            return
        converted = cache.entry_dir(host_file.path, store.cache_dir)
        # Its write, held back for the first window, is waited for without hurrying it: it
        # still pauses while a window is computed and just after (`background.give_way`), so
        # the windows the page asks before the child start no longer share the cores with
        # it (their p95 94 ms at load 1, the write's CPU beside each p50 41 ms; decision 920)
        background.after(converted)
        if (converted / entries.MANIFEST).exists():
            kept_apart.build_apart(
                ctx.run.path,
                host_file.host,
                (name,),
                store.cache_dir,
                timeout_s=kept_apart.apart_timeout_s(n_events),
            )


# ---- parameters ---------------------------------------------------------------------------


def _number(params: Mapping[str, str], name: str, default: float | None = None) -> float:
    text = params.get(name, "")
    if text == "":
        if default is None:
            raise ValueError(f"parameter {name!r} is required")
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"parameter {name!r} must be a number, not {text[:30]!r}") from None
    if not np.isfinite(value):
        raise ValueError(f"parameter {name!r} must be finite")
    return value


def _int(params: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    value = _number(params, name, float(default))
    if value != int(value) or not lo <= value <= hi:
        raise ValueError(f"parameter {name!r} must be an integer from {lo} to {hi}")
    return int(value)


def _window(params: Mapping[str, str], index: TraceIndex) -> tuple[int, int]:
    """[t0, t1) in absolute ns. Times are relative to the trace's start and bounded by the
    data: a view may reach one trace length before its start and after its end (zoomed
    out), never further (``t0=-1e300`` would overflow int64 arithmetic), and never beyond the
    time policy's bounds (`limits.TIME_LIMIT_NS`: a trace near them has no room for a
    trace length more)."""
    origin = int(index.origin_ns)
    span = max(int(index.end_ns) - origin, 1)
    t0 = min(max(_number(params, "t0", 0.0), -span), 2 * span)
    t1 = min(max(_number(params, "t1", float(span)), -span), 2 * span)
    if t1 <= t0:
        raise ValueError("parameter 't1' must be greater than 't0'")
    first = limits.clamp_time_ns(origin + int(np.floor(t0)))
    last = limits.clamp_time_ns(origin + int(np.ceil(t1)))
    return first, max(last, first + 1)


def _int_list(text: str, name: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """'1,3-5' -> [(1, 1), (3, 5)], each range clipped to [lo, hi]; empty ones dropped."""
    if len(text) > MAX_LIST_CHARS:
        raise ValueError(f"parameter {name!r} is too long")
    out = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        try:
            a, b = int(first), int(last or first)
        except ValueError:
            raise ValueError(f"parameter {name!r}: bad item {part[:20]!r}") from None
        a, b = max(a, lo), b if hi is None else min(b, hi)
        if a <= b:
            out.append((a, b))
    return out


def _lines(params: Mapping[str, str], index: TraceIndex) -> np.ndarray | None:
    """The line numbers named by ``lines``, within the lines that exist (a set, not a list:
    ``lines=0-100000000`` costs what the profile's lines do)."""
    text = params.get("lines", "")
    if not text:
        return None
    n_lines = len(index.line_depths)
    wanted = np.zeros(n_lines + 1, dtype=np.int32)  # +1 for each range's end marker
    for a, b in _int_list(text, "lines", 0, n_lines - 1):
        wanted[a] += 1
        wanted[b + 1] -= 1
    return np.flatnonzero(np.cumsum(wanted[:n_lines]) > 0)


def _json(answer: Any) -> tuple[bytes, str]:
    data = output.to_json(answer)  # a declared-field answer, or a plain dict (ALL_HOSTS)
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode(), JSON


def _id_dtype(index: TraceIndex) -> str:
    return "i4" if index.n_events < (1 << 31) else "f8"


# ---- endpoints ----------------------------------------------------------------------------


def window(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    # The store's writes under way pause while it is computed (`background.give_way`): the
    # page waits for each window, nobody for the writes (decision 795).
    with background.foreground():
        return _window_of(ctx, params)


def _window_of(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    profile, index = trace_of(ctx)
    t0, t1 = _window(params, index)
    res = _int(params, "res", 2000, 1, MAX_RESOLUTION)
    lines = _lines(params, index)
    with_counters = params.get("counters", "1") != "0"
    form = compact.form_of(params)
    if t0 > index.origin_ns or t1 < index.end_ns:
        return _window_answer(profile, index, t0, t1, res, lines, with_counters, form)
    # The whole trace: the request every page opens with, the same answer each time (`memo`).
    # The key holds every parameter the answer reads.
    key = (t0, t1, res, None if lines is None else lines.tobytes(), with_counters, form)
    return index.full_views.get(
        key, lambda: _window_answer(profile, index, t0, t1, res, lines, with_counters, form)
    )


def _window_answer(
    profile: Profile,
    index: TraceIndex,
    t0: int,
    t1: int,
    res: int,
    lines: np.ndarray | None,
    with_counters: bool,
    form: str = "plain",
) -> tuple[bytes, str]:
    events = query_window(profile, index, t0, t1, res, lines)
    name_ids, name_of = distinct_inverse(events.name)
    origin = index.origin_ns
    ids = _id_dtype(index)
    arrays: dict[str, tuple[str, np.ndarray]] = {
        "event": (ids, events.event),
        "line": ("i4", events.line),
        "depth": ("i4", events.depth),
        "start": ("f8", events.start_ns - origin),
        "dur": ("f8", events.dur_ns),
        "name": ("i4", name_of.reshape(-1)),
    }
    flows, flows_total = window_flows(
        index.flows, profile.start_ns, events.event, events.bucket_ns, MAX_FLOWS
    )
    for end in ("src", "dst"):
        ev = getattr(index.flows, end)[flows]
        arrays[f"{end}"] = (ids, ev)
        arrays[f"{end}_line"] = ("i4", profile.line[ev])
        arrays[f"{end}_depth"] = ("i4", index.depth[ev])
        arrays[f"{end}_start"] = ("f8", profile.start_ns[ev] - origin)
    arrays["flow_kind"] = ("u1", index.flows.kind[flows])
    counters = []
    if with_counters:
        buckets = min(res, MAX_COUNTER_BUCKETS)
        for k, counter in enumerate(index.counters):
            times, values = sample(counter, t0, t1, buckets)
            arrays[f"c{k}.t"] = ("f8", times - origin)
            arrays[f"c{k}.v"] = ("f8", values)
            counters.append({"id": k, "name": counter.name, "unit": counter.unit})
    header = {
        "kind": "window",
        "t0": t0 - origin,
        "t1": t1 - origin,
        "resolution": res,
        "bucket_ns": events.bucket_ns,
        "level": events.level,
        "events": len(events),
        "names": profile.strings.lookup(name_ids),
        "flows": len(flows),
        "flows_total": flows_total,
        "flow_kinds": list(KIND_NAMES),
        "counters": counters,
    }
    return trace_wire.encode(header, arrays, form), trace_wire.CONTENT_TYPE


def steps(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    _, index = trace_of(ctx)
    columns = step_columns(index, index.origin_ns)
    # `_json`'s bytes without `output.to_json`'s walk over every number: 5,598 steps' 22,392
    # numbers took it 1.2 ms of the answer's 3.5 (decision 660); the fields are plain lists
    plain = {f.name: getattr(columns, f.name) for f in dataclasses.fields(columns)}
    return json.dumps(plain, separators=(",", ":"), allow_nan=False).encode(), JSON


def step_columns(index: TraceIndex, zero_ns: int, event_base: int = 0) -> StepColumns:
    """The steps of ``index`` with times from ``zero_ns`` and event ids from ``event_base``."""
    s = index.steps
    return StepColumns(
        number=s.number.tolist(),
        start_ns=(s.start_ns - zero_ns).tolist(),
        dur_ns=s.dur_ns.tolist(),
        event=(s.event + event_base).tolist(),
    )


def _columns(profile: Profile, index: TraceIndex, events: np.ndarray) -> EventColumns:
    return EventColumns(
        event=events.tolist(),
        line=profile.line[events].tolist(),
        depth=index.depth[events].tolist(),
        start_ns=(profile.start_ns[events] - index.origin_ns).tolist(),
        dur_ns=profile.dur_ns[events].tolist(),
        name=profile.strings.lookup(profile.name[events]),
    )


def _one_per_pixel(
    profile: Profile, index: TraceIndex, events: np.ndarray, t0: int, bucket: float
) -> np.ndarray:
    """The longest event per (line, depth, pixel) of ``events``; wider ones all kept."""
    if len(events) == 0:
        return events
    start, dur = profile.start_ns[events], profile.dur_ns[events]
    pixel = ((np.maximum(start, t0) - t0) / bucket).astype(np.int64)
    pixel[dur >= bucket] = -1 - np.arange(int((dur >= bucket).sum()))  # never merged
    order = np.lexsort((-dur, pixel, index.depth[events], profile.line[events]))
    key = np.stack([profile.line[events], index.depth[events], pixel], 1)[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = np.any(key[1:] != key[:-1], axis=1)
    return np.sort(events[order[first]])


def search(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    profile, index = trace_of(ctx)
    query = params.get("q", "").strip()
    if not query:
        raise ValueError("parameter 'q' (the text to search for) is empty")
    limit = _int(params, "limit", 200, 0, MAX_SEARCH_RESULTS)
    offset = _int(params, "offset", 0, 0, 1 << 40)
    groups = index.names.matching_groups(profile, query)
    first = index.names.first_by_time(profile, groups, offset, limit)
    window_total, window = None, None
    if params.get("t0") or params.get("t1"):
        t0, t1 = _window(params, index)
        res = _int(params, "res", 2000, 1, MAX_RESOLUTION)
        inside = index.names.in_window(profile, groups, t0, t1)
        shown = _one_per_pixel(profile, index, inside, t0, (t1 - t0) / res)[:MAX_WINDOW_MATCHES]
        window_total, window = len(inside), _columns(profile, index, shown)
    return _json(
        SearchAnswer(
            query=query,
            total=int(index.names.sizes(groups).sum()),
            names=len(groups),
            offset=offset,
            results=_columns(profile, index, first),
            window_total=window_total,
            window=window,
        )
    )


def _plain(value: object) -> object:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, int) and abs(value) >= _SAFE_INT:
        return str(value)  # JSON numbers beyond 2**53 lose digits in browsers
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value


def _brief(profile: Profile, index: TraceIndex, event: int) -> dict[str, Any]:
    """`EventBrief`'s fields of ``event``."""
    line = profile.lines[int(profile.line[event])]
    return {
        "event": event,
        "name": profile.event_name(event),
        "line": line.index,
        "track": line.label,
        "section": profile.planes[line.plane].name,
        "depth": int(index.depth[event]),
        "start_ns": int(profile.start_ns[event]) - index.origin_ns,
        "dur_ns": int(profile.dur_ns[event]),
    }


def event(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    profile, index = trace_of(ctx)
    if profile.n_events == 0:
        raise ValueError("the trace has no events")
    return _json(event_details(profile, index, _int(params, "id", -1, 0, profile.n_events - 1)))


def event_details(profile: Profile, index: TraceIndex, event_id: int) -> EventAnswer:
    """One event with all its stats and the other ends of its flows (times from the index's
    origin)."""
    display = profile.strings[int(profile.meta_display_name[profile.meta[event_id]])]
    flows = []
    for f in index.flows.touching(np.array([event_id])).tolist():
        src, dst = int(index.flows.src[f]), int(index.flows.dst[f])
        outgoing = src == event_id
        flows.append(
            FlowEnd(
                direction="out" if outgoing else "in",
                kind=KIND_NAMES[int(index.flows.kind[f])],
                **_brief(profile, index, dst if outgoing else src),
            )
        )
    stats = {k: _plain(v) for k, v in profile.event_stats(event_id).items()}
    return EventAnswer(
        **_brief(profile, index, event_id),
        display_name=display,
        stats=stats,
        flows=tuple(flows),
    )


def _rows(params: Mapping[str, str], index: TraceIndex) -> np.ndarray | None:
    """Row numbers named by ``rows`` ("line:depth", "line:d0-d1" or "line" for all depths);
    a set within the rows that exist, however the request repeats or overstates them."""
    text = params.get("rows", "")
    if not text:
        return None
    if len(text) > MAX_LIST_CHARS:
        raise ValueError("parameter 'rows' is too long")
    chosen: dict[int, np.ndarray] = {}  # line -> which depths
    for part in filter(None, text.split(",")):
        line_text, _, span = part.partition(":")
        try:
            line = int(line_text)
        except ValueError:
            raise ValueError(f"parameter 'rows': bad item {part[:20]!r}") from None
        if not 0 <= line < len(index.line_depths) or index.line_depths[line] <= 0:
            continue
        deepest = int(index.line_depths[line]) - 1
        mask = chosen.setdefault(line, np.zeros(deepest + 1, dtype=bool))
        for lo, hi in _int_list(span, "rows", 0, deepest) if span else [(0, deepest)]:
            mask[lo : hi + 1] = True
    lines = [np.full(int(mask.sum()), line) for line, mask in chosen.items()]
    depths = [np.flatnonzero(mask) for mask in chosen.values()]
    if not lines or not sum(len(d) for d in depths):
        return np.zeros(0, np.int64)
    return rows_of_pairs(index, np.concatenate(lines), np.concatenate(depths))


def select(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    profile, index = trace_of(ctx)
    t0, t1 = _window(params, index)
    events = events_in_box(profile, index, t0, t1, _rows(params, index))
    return _json(selection(by_name(profile, events), len(events)))


def by_name(profile: Profile, events: np.ndarray) -> dict[str, tuple[int, float]]:
    """Count and total duration of ``events`` per event name."""
    names = profile.name[events]
    dur = profile.dur_ns[events].astype(np.float64)
    count = np.bincount(names, minlength=0)
    total = np.bincount(names, weights=dur, minlength=0)
    used = np.flatnonzero(count).tolist()
    return {profile.strings[k]: (int(count[k]), float(total[k])) for k in used}


def selection(groups: Mapping[str, tuple[int, float]], count: int) -> SelectAnswer:
    """The ``select`` answer: totals and the names with the most time first."""
    ranked = sorted(groups.items(), key=lambda item: -item[1][1])
    return SelectAnswer(
        count=count,
        total_ns=float(sum(total for _n, total in groups.values())),
        distinct_names=len(groups),
        by_name=tuple(
            NameTotal(name=name, count=n, total_ns=total, avg_ns=total / n)
            for name, (n, total) in ranked[:MAX_SELECT_NAMES]
        ),
    )


def selection_json(
    groups: Mapping[str, tuple[int, float]], count: int, **extra: Any
) -> dict[str, Any]:
    """`selection` as JSON data with ``extra`` keys (ALL_HOSTS adds ``by_host``)."""
    data: dict[str, Any] = output.to_json(selection(groups, count))
    return {**data, **extra}
