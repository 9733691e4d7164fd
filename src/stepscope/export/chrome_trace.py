"""Export a profile as Chrome-trace JSON (loads in Perfetto, chrome://tracing and stepscope).

Layout (the Chrome trace event format, as XProf writes it): ``{"displayTimeUnit": "ns",
"baseTimeNanoseconds": origin, "traceEvents": [...]}``; ``ts``/``dur`` are microseconds relative to
``origin`` (the first event's start) with three decimals, so every nanosecond survives (absolute
microsecond timestamps would not fit a double's precision). One process per plane (``ph: "M"``
``process_name`` / ``process_sort_index``; GPUs keep their ordinal as pid, as PyTorch writes them),
one thread per line (``thread_name`` / ``thread_sort_index``), ``ph: "X"`` events with their stats
as ``args``, flows as ``ph: "s"`` / ``ph: "f"`` pairs (``cat`` ``ac2g`` for launch -> kernel, as
PyTorch names them).

The file is written in chunks of events, never held whole: a 10M-event trace exports in
constant memory. Numpy prepares each chunk column-wise and Python's ``%`` prints it
(chrome_text); chrome_reference holds the event-by-event writer it must match byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from stepscope.export import chrome_text as ct
from stepscope.model import Profile
from stepscope.stats.trace_index.flows import FlowTable, build_flows
from stepscope.stats.trace_index.tracks import is_stream_line, sections
from stepscope.xspace.wire import KIND_BYTES, KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT

CHUNK = 50_000
_EVENT = '%s"ts":%d.%03d,"dur":%d.%03d,"cat":%s,"name":%s,"args":{%s}}'
_SHOWN_KINDS = (KIND_INT, KIND_UINT, KIND_DOUBLE, KIND_STR, KIND_BYTES)
HOST_PID_BASE = 100_000
FLOW_CATS = ("ac2g", "flow")
Progress = Callable[[int, int], None]  # (events written, events to write)


class _Fragments:
    """JSON text of names and ``"key":value`` stat pairs, cached by string id."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.text: dict[int, str] = {}

    def string(self, string_id: int) -> str:
        found = self.text.get(string_id)
        if found is None:
            found = self.text[string_id] = json.dumps(self.profile.strings[string_id])
        return found

    def pairs(self, key: np.ndarray, kind: np.ndarray, value: np.ndarray) -> list[str]:
        out = []
        for k, t, v in zip(key.tolist(), kind.tolist(), value.tolist(), strict=True):
            if t == KIND_INT:
                shown: Any = v
            elif t == KIND_UINT:
                shown = v if v >= 0 else v + (1 << 64)
            elif t == KIND_DOUBLE:
                number = float(np.int64(v).view(np.float64))
                shown = json.dumps(number) if np.isfinite(number) else f'"{number}"'
            elif t in (KIND_STR, KIND_BYTES):
                shown = self.string(v)
            else:
                continue
            out.append(f"{self.string(k)}:{shown}")
        return out


def _pids(profile: Profile) -> list[int]:
    ordinals = [p.device_ordinal for p in profile.planes]
    unique = {o for o in ordinals if o is not None}
    duplicated = len(unique) != len([o for o in ordinals if o is not None])
    return [
        o if o is not None and not duplicated else HOST_PID_BASE + p.index
        for o, p in zip(ordinals, profile.planes, strict=True)
    ]


def _metadata(profile: Profile, pids: list[int]) -> Iterator[str]:
    depth_count = np.ones(len(profile.lines), dtype=np.int32)
    for rank, section in enumerate(sections(profile, depth_count)):
        pid = pids[section.plane]
        name = json.dumps(profile.planes[section.plane].name)
        yield (f'{{"ph":"M","pid":{pid},"tid":0,"name":"process_name","args":{{"name":{name}}}}}')
        yield (
            f'{{"ph":"M","pid":{pid},"tid":0,"name":"process_sort_index",'
            f'"args":{{"sort_index":{rank}}}}}'
        )
        for order, track in enumerate(section.tracks):
            tid = profile.lines[track.line].id
            label = json.dumps(track.name)
            yield (
                f'{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name",'
                f'"args":{{"name":{label}}}}}'
            )
            yield (
                f'{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_sort_index",'
                f'"args":{{"sort_index":{order}}}}}'
            )


def _us(ns: int) -> str:
    """Microseconds with three decimals, exactly (negative values included)."""
    sign = "-" if ns < 0 else ""
    q, r = divmod(abs(ns), 1000)
    return f"{sign}{q}.{r:03d}"


def selected_events(profile: Profile, start_ns: int | None, end_ns: int | None) -> np.ndarray:
    """Mask of the events overlapping [start_ns, end_ns) (absolute; None = unbounded)."""
    keep = np.ones(profile.n_events, dtype=bool)
    end = profile.start_ns + profile.dur_ns
    if start_ns is not None:
        keep &= (end > start_ns) | ((profile.dur_ns == 0) & (profile.start_ns >= start_ns))
    if end_ns is not None:
        keep &= profile.start_ns < end_ns
    return keep


def _categories(profile: Profile, text: _Fragments) -> dict[int, str]:
    """JSON text of the ``category`` stat of each event metadata that has one."""
    key = profile.strings.id_of("category")
    out: dict[int, str] = {}
    if key < 0:
        return out
    table = profile.meta_stats
    for row in np.flatnonzero(table.key == key).tolist():
        if table.kind[row] == KIND_STR:
            meta = int(np.searchsorted(profile.meta_stat_start, row, side="right") - 1)
            out[meta] = text.string(int(table.value[row]))
    return out


def chrome_trace_chunks(
    profile: Profile,
    start_ns: int | None = None,
    end_ns: int | None = None,
    flows: FlowTable | None = None,
    progress: Progress | None = None,
) -> Iterator[str]:
    """The JSON text of the trace, in pieces; ``"".join`` of them is the whole document."""
    origin = int(profile.start_ns.min()) if profile.n_events else 0
    pids = _pids(profile)
    keep = selected_events(profile, start_ns, end_ns)
    total = int(keep.sum())
    yield f'{{"displayTimeUnit":"ns","baseTimeNanoseconds":{origin},"traceEvents":[\n'
    yield ",\n".join(_metadata(profile, pids))
    fragments = _Fragments(profile)
    strings = ct.StringTexts(profile, fragments.text)  # one cache of JSON text for both
    meta = profile.meta_stats
    meta_args = [
        ",".join(fragments.pairs(meta.key[lo:hi], meta.kind[lo:hi], meta.value[lo:hi]))
        for lo, hi in zip(
            profile.meta_stat_start[:-1].tolist(), profile.meta_stat_start[1:].tolist(), strict=True
        )
    ]
    meta_text = ct.objects(meta_args)
    meta_empty = np.array([not a for a in meta_args], dtype=bool)
    meta_cat = _categories(profile, fragments)
    # Device events name their device and stream as PyTorch does (args "device", "stream"),
    # so importers put them back on the same GPU and stream; the XSpace stats of the same
    # meaning are left out to avoid repeating them.
    device_keys = [profile.strings.id_of(k) for k in ("device", "stream")]
    written = 0
    for line in profile.lines:
        span = profile.events_of_line(line)
        plane = profile.planes[line.plane]
        on_device = plane.is_device and plane.device_ordinal is not None
        default_cat = json.dumps(
            "kernel"
            if plane.is_device and is_stream_line(line)
            else "device"
            if plane.is_device
            else "host"
        )
        cats = ct.objects([meta_cat.get(m, default_cat) for m in range(len(meta_args))])
        extra = f'"device":{plane.device_ordinal},"stream":{line.id}' if on_device else ""
        prefix = f',\n{{"ph":"X","pid":{pids[line.plane]},"tid":{line.id},"ts":'
        for lo in range(span.start, span.stop, CHUNK):
            hi = min(lo + CHUNK, span.stop)
            rows = np.flatnonzero(keep[lo:hi]) + lo
            if len(rows) == 0:
                continue
            yield _event_chunk(
                profile, rows, lo, hi, origin, on_device, device_keys, strings,
                (prefix, extra, cats, meta_text, meta_empty),
            )  # fmt: skip
            written += len(rows)
            if progress is not None:
                progress(written, total)
    if flows is None:
        flows = build_flows(profile, np.zeros(profile.n_events, np.int32))
    yield from _flow_chunks(profile, flows, keep, origin, pids)
    yield "\n]}\n"


def _event_chunk(
    profile: Profile,
    rows: np.ndarray,
    lo: int,
    hi: int,
    origin: int,
    on_device: bool,
    device_keys: list[int],
    strings: ct.StringTexts,
    line_text: tuple[str, str, np.ndarray, np.ndarray, np.ndarray],
) -> str:
    """Text of the kept events ``rows`` of ``[lo, hi)``, all on one line, each after ",\\n"."""
    prefix, extra, cats, meta_text, meta_empty = line_text
    s_lo, s_hi = int(profile.stat_start[lo]), int(profile.stat_start[hi])
    keys = profile.stats.key[s_lo:s_hi]
    kinds = profile.stats.kind[s_lo:s_hi]
    shown = np.isin(kinds, _SHOWN_KINDS)
    if on_device:
        shown &= ~np.isin(keys, device_keys)
    # The kept event (index into rows) of each stat, -1 for stats of events left out.
    event_of_stat = np.repeat(np.arange(hi - lo), np.diff(profile.stat_start[lo : hi + 1]))
    local = np.full(hi - lo, -1, dtype=np.int64)
    local[rows - lo] = np.arange(len(rows))
    owner = local[event_of_stat]
    shown &= owner >= 0
    owner = owner[shown]
    metas = profile.meta[rows]
    # args = ",".join(metadata stats + event stats + device/stream): a pair takes a leading
    # comma unless it is the first thing in its args.
    first = np.ones(len(owner), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    count = np.bincount(owner, minlength=len(rows)).astype(np.int64)
    code, value_text = ct.stat_values(kinds[shown], profile.stats.value[s_lo:s_hi][shown], strings)
    if extra:
        empty = meta_empty[metas] & (count == 0)
        tails = np.where(empty, extra + "}}", "," + extra + "}}").tolist()
    else:
        tails = ["}}"] * len(rows)
    return ct.format_events(
        ct.EventColumns(
            prefix=prefix,
            start_us_ns=np.ascontiguousarray(profile.start_ns[rows] - origin, dtype=np.int64),
            dur_ns=np.ascontiguousarray(profile.dur_ns[rows], dtype=np.int64),
            cats=cats[metas].tolist(),
            names=strings.of(profile.name[rows]).tolist(),
            metas=meta_text[metas].tolist(),
            tails=tails,
            pair_count=count,
            comma=(~(first & meta_empty[metas[owner]])).astype(np.int64),
            keys=strings.of(keys[shown]).tolist(),
            code=code,
            value=np.ascontiguousarray(profile.stats.value[s_lo:s_hi][shown], dtype=np.int64),
            text=value_text,
        )
    )


def _flow_chunks(
    profile: Profile, flows: FlowTable, keep: np.ndarray, origin: int, pids: list[int]
) -> Iterator[str]:
    both = np.flatnonzero(keep[flows.src] & keep[flows.dst])
    line_pid = np.array([pids[line.plane] for line in profile.lines], dtype=np.int64)
    line_tid = np.array([line.id for line in profile.lines], dtype=np.int64)
    for lo in range(0, len(both), CHUNK):
        part = both[lo : lo + CHUNK]
        # Source then destination of each flow, interleaved.
        ends = np.stack([flows.src[part], flows.dst[part]], axis=1).ravel()
        lines = profile.line[ends]
        yield ct.format_flows(
            part.astype(np.int64),
            flows.kind[part].astype(np.int64),
            line_pid[lines],
            line_tid[lines],
            (profile.start_ns[ends] - origin).astype(np.int64),
            list(FLOW_CATS),
        )
