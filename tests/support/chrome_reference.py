"""The event-by-event Chrome-trace writer: the oracle for the columnar one in chrome_trace.

`chrome_trace.chrome_trace_chunks` builds the same text with numpy string arrays; this
straightforward per-event version is kept so tests can check both give byte-identical
documents and benchmarks/bench_export.py can time old against new in one run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np

from stepscope.export.chrome_trace import (
    _EVENT,
    _SHOWN_KINDS,
    CHUNK,
    FLOW_CATS,
    Progress,
    _categories,
    _Fragments,
    _metadata,
    _pids,
    _us,
    selected_events,
)
from stepscope.model import Profile
from stepscope.stats.trace_index.flows import FlowTable, build_flows
from stepscope.stats.trace_index.tracks import is_stream_line


def reference_chunks(
    profile: Profile,
    start_ns: int | None = None,
    end_ns: int | None = None,
    flows: FlowTable | None = None,
    progress: Progress | None = None,
) -> Iterator[str]:
    """The same text as ``chrome_trace_chunks``, built event by event in Python."""
    origin = int(profile.start_ns.min()) if profile.n_events else 0
    pids = _pids(profile)
    keep = selected_events(profile, start_ns, end_ns)
    total = int(keep.sum())
    yield f'{{"displayTimeUnit":"ns","baseTimeNanoseconds":{origin},"traceEvents":[\n'
    yield ",\n".join(_metadata(profile, pids))
    text = _Fragments(profile)
    meta = profile.meta_stats
    meta_args = [
        text.pairs(meta.key[lo:hi], meta.kind[lo:hi], meta.value[lo:hi])
        for lo, hi in zip(
            profile.meta_stat_start[:-1].tolist(), profile.meta_stat_start[1:].tolist(), strict=True
        )
    ]
    meta_cat = _categories(profile, text)
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
        extra = [f'"device":{plane.device_ordinal},"stream":{line.id}'] if on_device else []
        prefix = f'{{"ph":"X","pid":{pids[line.plane]},"tid":{line.id},'
        for lo in range(span.start, span.stop, CHUNK):
            hi = min(lo + CHUNK, span.stop)
            rows = np.flatnonzero(keep[lo:hi]) + lo
            if len(rows) == 0:
                continue
            s_lo, s_hi = int(profile.stat_start[lo]), int(profile.stat_start[hi])
            keys = profile.stats.key[s_lo:s_hi]
            kinds = profile.stats.kind[s_lo:s_hi]
            kept = np.isin(kinds, _SHOWN_KINDS)
            if on_device:
                kept &= ~np.isin(keys, device_keys)
            pairs = text.pairs(keys[kept], kinds[kept], profile.stats.value[s_lo:s_hi][kept])
            # Pairs of event lo + i: pairs[bounds[i]:bounds[i + 1]].
            kept_before = np.concatenate([[0], np.cumsum(kept)])
            bounds = kept_before[profile.stat_start[lo : hi + 1] - s_lo].tolist()
            # Times as integer microseconds and their nanosecond remainders (both >= 0).
            start = profile.start_ns[rows] - origin
            dur = profile.dur_ns[rows]
            pieces = []
            for i, s_us, s_ns, d_us, d_ns, name, m in zip(
                (rows - lo).tolist(),
                (start // 1000).tolist(),
                (start % 1000).tolist(),
                (dur // 1000).tolist(),
                (dur % 1000).tolist(),
                profile.name[rows].tolist(),
                profile.meta[rows].tolist(),
                strict=True,
            ):
                args = ",".join(meta_args[m] + pairs[bounds[i] : bounds[i + 1]] + extra)
                pieces.append(
                    _EVENT
                    % (
                        prefix,
                        s_us,
                        s_ns,
                        d_us,
                        d_ns,
                        meta_cat.get(m, default_cat),
                        text.string(name),
                        args,
                    )
                )
            yield ",\n" + ",\n".join(pieces)
            written += len(rows)
            if progress is not None:
                progress(written, total)
    if flows is None:
        flows = build_flows(profile, np.zeros(profile.n_events, np.int32))
    yield from _flow_chunks(profile, flows, keep, origin, pids)
    yield "\n]}\n"


def _flow_chunks(
    profile: Profile, flows: FlowTable, keep: np.ndarray, origin: int, pids: list[int]
) -> Iterator[str]:
    both = np.flatnonzero(keep[flows.src] & keep[flows.dst])
    for lo in range(0, len(both), CHUNK):
        part = both[lo : lo + CHUNK]
        pieces = []
        for f, src, dst, kind in zip(
            part.tolist(),
            flows.src[part].tolist(),
            flows.dst[part].tolist(),
            flows.kind[part].tolist(),
            strict=True,
        ):
            for ph, event, extra in (("s", src, ""), ("f", dst, ',"bp":"e"')):
                line = profile.lines[int(profile.line[event])]
                ts = _us(int(profile.start_ns[event]) - origin)
                pieces.append(
                    f'{{"ph":"{ph}","id":{f},"cat":"{FLOW_CATS[kind]}","name":'
                    f'"{FLOW_CATS[kind]}","pid":{pids[line.plane]},"tid":{line.id},'
                    f'"ts":{ts}{extra}}}'
                )
        yield ",\n" + ",\n".join(pieces)
