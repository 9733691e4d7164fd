"""The trace viewer's endpoints over several hosts: each host's own index is queried and the
answers merged, in global line/event numbers and times on the shared axis (see `pod`).

Pixel budget: a window answers at most ``MAX_WINDOW_ROWS`` rows (one row is one line at one
nesting depth; the page asks for the tracks in view with ``lines`` and ``counter_ids``, global
numbers as ranges, ``none`` for none) and at most ``MAX_ROW_PIXELS`` rows x resolution (a
request beyond it is answered at a lower resolution, given in the header), so whatever the
host count a response holds at most about two events per row per pixel of that budget.
Rows beyond the budget are left out and counted in the header (``rows_left_out``); hosts
with no row asked for cost nothing. A request without ``lines`` (a script's, not the page's)
gets the first ``MAX_ROWS_WITHOUT_LINES`` rows: a screen of them, not 256 rows of dense
tracks (155,000 events, 5 MB, for a 64-host pod), and ``rows_left_out`` says to choose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from stepscope.distinct import distinct
from stepscope.stats.trace_index.counters import sample
from stepscope.stats.trace_index.flows import KIND_NAMES, window_flows
from stepscope.stats.trace_index.window import events_in_box, query_window
from stepscope.tools import output
from stepscope.tools.trace_viewer import compact
from stepscope.tools.trace_viewer import wire as trace_wire
from stepscope.tools.trace_viewer.api import (
    MAX_COUNTER_BUCKETS,
    MAX_FLOWS,
    MAX_RESOLUTION,
    MAX_SEARCH_RESULTS,
    MAX_WINDOW_MATCHES,
    _int,
    _int_list,
    _json,
    _number,
    _one_per_pixel,
    _rows,
    by_name,
    event_details,
    selection_json,
)
from stepscope.tools.trace_viewer.pod import HostTrace, PodTrace
from stepscope.tools.trace_viewer.pod_structure import host_steps

MAX_WINDOW_ROWS = 256  # a 4K screen of 16-pixel rows, and as much again around it
MAX_ROWS_WITHOUT_LINES = 64  # a screen of rows when no track list is given
MAX_ROW_PIXELS = 200_000  # rows x resolution: beyond it the resolution is lowered to fit
MAX_SEARCH_DEPTH = 100_000  # offset + limit of a search over many hosts


def _span(params: Mapping[str, str], pod: PodTrace) -> tuple[int, int]:
    """[t0, t1) on the shared axis, bounded as for one host (one axis length either side)."""
    span = pod.duration_ns
    t0 = min(max(_number(params, "t0", 0.0), -span), 2 * span)
    t1 = min(max(_number(params, "t1", float(span)), -span), 2 * span)
    if t1 <= t0:
        raise ValueError("parameter 't1' must be greater than 't0'")
    return int(np.floor(t0)), int(np.ceil(t1))


def _lines_by_host(params: Mapping[str, str], pod: PodTrace) -> dict[int, np.ndarray]:
    """Host position -> its local line numbers named by ``lines`` (global numbers; all lines
    of every host without it), within the row budget in the order given."""
    text = params.get("lines", "")
    bases = np.array([h.line_base for h in pod.hosts])
    if text == "none":
        return {}
    if text:
        wanted = np.zeros(pod.n_lines + 1, dtype=np.int32)
        for a, b in _int_list(text, "lines", 0, pod.n_lines - 1):
            wanted[a] += 1
            wanted[b + 1] -= 1
        lines = np.flatnonzero(np.cumsum(wanted[: pod.n_lines]) > 0)
    else:
        lines = np.arange(pod.n_lines)
    owner = np.searchsorted(bases, lines, side="right") - 1
    out: dict[int, np.ndarray] = {}
    for k in distinct(owner).tolist():
        out[k] = lines[owner == k] - pod.hosts[k].line_base
    return out


def _within_budget(
    pod: PodTrace, chosen: dict[int, np.ndarray], max_rows: int
) -> tuple[dict[int, np.ndarray], int]:
    kept: dict[int, np.ndarray] = {}
    rows = 0
    left_out = 0
    for k, lines in chosen.items():
        depths = pod.hosts[k].index.line_depths[lines]
        room = np.cumsum(depths) + rows <= max_rows
        if room.any():
            kept[k] = lines[room]
            rows += int(depths[room].sum())
        left_out += int(depths[~room].sum())
    return kept, left_out


def _counter_ids(params: Mapping[str, str], pod: PodTrace, hosts: list[int]) -> set[int]:
    if params.get("counters", "1") == "0":
        return set()
    text = params.get("counter_ids", "")
    if text == "none":
        return set()
    if text:
        total = pod.hosts[-1].counter_base + len(pod.hosts[-1].index.counters)
        return {c for a, b in _int_list(text, "counter_ids", 0, total - 1) for c in range(a, b + 1)}
    return {
        pod.hosts[k].counter_base + c
        for k in hosts
        for c in range(len(pod.hosts[k].index.counters))
    }


def window(pod: PodTrace, params: Mapping[str, str]) -> tuple[bytes, str]:
    t0, t1 = _span(params, pod)
    res = _int(params, "res", 2000, 1, MAX_RESOLUTION)
    form = compact.form_of(params)
    max_rows = MAX_WINDOW_ROWS if params.get("lines") else MAX_ROWS_WITHOUT_LINES
    chosen, left_out = _within_budget(pod, _lines_by_host(params, pod), max_rows)
    rows = sum(int(pod.hosts[k].index.line_depths[lines].sum()) for k, lines in chosen.items())
    res = max(1, min(res, MAX_ROW_PIXELS // max(rows, 1)))
    cols: dict[str, list[np.ndarray]] = {}
    level = 0
    bucket = (t1 - t0) / res
    flows_total = 0

    def add(name: str, values: np.ndarray) -> None:
        cols.setdefault(name, []).append(values)

    for k, lines in chosen.items():
        h = pod.hosts[k]
        p, index = h.profile, h.index
        ev = query_window(p, index, h.zero_ns + t0, h.zero_ns + t1, res, lines)
        level = max(level, ev.level)
        add("event", ev.event + h.event_base)
        add("line", ev.line + h.line_base)
        add("depth", ev.depth)
        add("start", ev.start_ns - h.zero_ns)
        add("dur", ev.dur_ns)
        add("name", pod.names.pod_ids(k, p.strings, ev.name))
        flows, total = window_flows(index.flows, p.start_ns, ev.event, ev.bucket_ns, MAX_FLOWS)
        flows_total += total
        for end in ("src", "dst"):
            fe = getattr(index.flows, end)[flows]
            add(end, fe + h.event_base)
            add(f"{end}_line", p.line[fe] + h.line_base)
            add(f"{end}_depth", index.depth[fe])
            add(f"{end}_start", p.start_ns[fe] - h.zero_ns)
        add("flow_kind", index.flows.kind[flows])
    ids = "i4" if pod.n_events < (1 << 31) else "f8"
    name_col, names = pod.names.compact(_cat(cols, "name"))
    arrays: dict[str, tuple[str, np.ndarray]] = {
        "event": (ids, _cat(cols, "event")),
        "line": ("i4", _cat(cols, "line")),
        "depth": ("i4", _cat(cols, "depth")),
        "start": ("f8", _cat(cols, "start")),
        "dur": ("f8", _cat(cols, "dur")),
        "name": ("i4", name_col),
    }
    for end in ("src", "dst"):  # the first MAX_FLOWS flows, as for one host
        arrays[end] = (ids, _cat(cols, end)[:MAX_FLOWS])
        arrays[f"{end}_line"] = ("i4", _cat(cols, f"{end}_line")[:MAX_FLOWS])
        arrays[f"{end}_depth"] = ("i4", _cat(cols, f"{end}_depth")[:MAX_FLOWS])
        arrays[f"{end}_start"] = ("f8", _cat(cols, f"{end}_start")[:MAX_FLOWS])
    arrays["flow_kind"] = ("u1", _cat(cols, "flow_kind")[:MAX_FLOWS])
    counters = []
    wanted = _counter_ids(params, pod, list(chosen))
    buckets = min(res, MAX_COUNTER_BUCKETS)
    for h in pod.hosts:
        for c, counter in enumerate(h.index.counters):
            gid = h.counter_base + c
            if gid in wanted:
                times, values = sample(counter, h.zero_ns + t0, h.zero_ns + t1, buckets)
                arrays[f"c{gid}.t"] = ("f8", times - h.zero_ns)
                arrays[f"c{gid}.v"] = ("f8", values)
                counters.append({"id": gid, "name": counter.name, "unit": counter.unit})
    header = {
        "kind": "window",
        "t0": t0,
        "t1": t1,
        "resolution": res,
        "bucket_ns": bucket,
        "level": level,
        "events": len(arrays["event"][1]),
        "names": names,
        "flows": len(arrays["flow_kind"][1]),
        "flows_total": flows_total,
        "flow_kinds": list(KIND_NAMES),
        "counters": counters,
        "hosts": [pod.hosts[k].host for k in chosen],
        "rows_left_out": left_out,
    }
    return trace_wire.encode(header, arrays, form), trace_wire.CONTENT_TYPE


def _cat(cols: dict[str, list[np.ndarray]], name: str) -> np.ndarray:
    parts = cols.get(name)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _columns(h: HostTrace, events: np.ndarray) -> dict[str, list[Any]]:
    p = h.profile
    return {
        "event": (events + h.event_base).tolist(),
        "line": (p.line[events] + h.line_base).tolist(),
        "depth": h.index.depth[events].tolist(),
        "start_ns": (p.start_ns[events] - h.zero_ns).tolist(),
        "dur_ns": p.dur_ns[events].tolist(),
        "name": p.strings.lookup(p.name[events]),
        "host": [h.host] * len(events),
    }


def _merged(parts: list[dict[str, list[Any]]], first: int, count: int) -> dict[str, list[Any]]:
    """Columns of several hosts' results in time order, rows [first, first + count)."""
    keys = ("event", "line", "depth", "start_ns", "dur_ns", "name", "host")
    merged: dict[str, list[Any]] = {k: [x for part in parts for x in part[k]] for k in keys}
    order = sorted(range(len(merged["start_ns"])), key=merged["start_ns"].__getitem__)
    rows = order[first : first + count]
    return {k: [merged[k][i] for i in rows] for k in keys}


def steps(pod: PodTrace, params: Mapping[str, str]) -> tuple[bytes, str]:
    """The first host's steps (the structure's ``steps``, the step picker's); every host's
    are in the structure's ``hosts[].steps``."""
    return _json(host_steps(pod.hosts[0]))


def search(pod: PodTrace, params: Mapping[str, str]) -> tuple[bytes, str]:
    query = params.get("q", "").strip()
    if not query:
        raise ValueError("parameter 'q' (the text to search for) is empty")
    limit = _int(params, "limit", 200, 0, MAX_SEARCH_RESULTS)
    offset = _int(params, "offset", 0, 0, MAX_SEARCH_DEPTH - limit)
    windowed = bool(params.get("t0") or params.get("t1"))
    if windowed:
        t0, t1 = _span(params, pod)
        res = _int(params, "res", 2000, 1, MAX_RESOLUTION)
    total = names = in_view = 0
    firsts, shown = [], []
    for h in pod.hosts:
        p, index = h.profile, h.index
        groups = index.names.matching_groups(p, query)
        if not len(groups):
            continue
        total += int(index.names.sizes(groups).sum())
        names += len(groups)
        firsts.append(_columns(h, index.names.first_by_time(p, groups, 0, offset + limit)))
        if windowed:
            inside = index.names.in_window(p, groups, h.zero_ns + t0, h.zero_ns + t1)
            in_view += len(inside)
            bucket = (t1 - t0) / res
            shown.append(_columns(h, _one_per_pixel(p, index, inside, h.zero_ns + t0, bucket)))
    out: dict[str, Any] = {
        "query": query,
        "total": total,
        "names": names,
        "offset": offset,
        "results": _merged(firsts, offset, limit),
    }
    if windowed:
        out["window_total"] = in_view
        out["window"] = _merged(shown, 0, MAX_WINDOW_MATCHES)
    return _json(out)


def event(pod: PodTrace, params: Mapping[str, str]) -> tuple[bytes, str]:
    global_id = _int(params, "id", -1, 0, max(pod.n_events - 1, 0))
    h = pod.hosts[pod.host_of_event(global_id)]
    detail = output.to_json(event_details(h.profile, h.index, global_id - h.event_base))
    shift = h.index.origin_ns - h.zero_ns  # event_details counts from the host's first event
    for brief in (detail, *detail["flows"]):
        brief["event"] += h.event_base
        brief["line"] += h.line_base
        brief["start_ns"] += shift
        brief["host"] = h.host
    return _json(detail)


def select(pod: PodTrace, params: Mapping[str, str]) -> tuple[bytes, str]:
    t0, t1 = _span(params, pod)
    text = params.get("rows", "")
    parts: dict[int, list[str]] = {}
    for part in filter(None, text.split(",")):
        line_text, sep, span = part.partition(":")
        try:
            line = int(line_text)
        except ValueError:
            raise ValueError(f"parameter 'rows': bad item {part[:20]!r}") from None
        if not 0 <= line < pod.n_lines:
            continue
        k = pod.host_of_line(line)
        parts.setdefault(k, []).append(f"{line - pod.hosts[k].line_base}{sep}{span}")
    chosen = parts if text else {k: [] for k in range(len(pod.hosts))}
    groups: dict[str, tuple[int, float]] = {}
    count = 0
    by_host = []
    for k, local in chosen.items():
        h = pod.hosts[k]
        rows = _rows({"rows": ",".join(local)}, h.index) if local else None
        events = events_in_box(h.profile, h.index, h.zero_ns + t0, h.zero_ns + t1, rows)
        count += len(events)
        host_total = float(h.profile.dur_ns[events].sum())
        by_host.append({"host": h.host, "count": len(events), "total_ns": host_total})
        for name, (n, total) in by_name(h.profile, events).items():
            was = groups.get(name, (0, 0.0))
            groups[name] = (was[0] + n, was[1] + total)
    return _json(selection_json(groups, count, by_host=by_host))
