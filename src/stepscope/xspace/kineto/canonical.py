"""One numbering of a Kineto trace's stat metadata and string values, whichever scanner made
the columns.

The C scanner and its Python twin (`pyscan`) give the same events and stats, but the ids can
differ: the C scanner interns strings by their bytes as written (``"a\u0062"`` and ``"ab"``
are two texts), the Python one by their value, so argument keys are registered in another
order; and the route registers every argument key, used or not. Tools read names, not ids, so
their answers agree; the trace viewer's window (names by id) and the Perfetto export
(interned by id) would not, and answers must be the same bytes with and without C
(decisions 110, 156). So the route ends here: per plane, the stat metadata that something
references (a stat row, a plane stat, an event metadata's stat, a REF value) are numbered
1..n in the order of their names, and the string values that a stat row uses are numbered in
their byte order; the rest is dropped. A few passes over the stat columns (no sort of them):
20 ms of the 0.60 s of CPU that importing 0.76M events takes with C (3%; bench_kineto's
trace at 5 copies), 4 ms of 0.97 s without (151k events, 1 copy).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from stepscope.xspace.headers import HeaderStat, HeaderStatMetadata, PlaneHeader
from stepscope.xspace.wire import KIND_BYTES, KIND_REF, KIND_STR, RawColumns


def canonical(raw: RawColumns) -> RawColumns:
    """``raw`` renumbered (its stat columns in place, new headers)."""
    for name in ("st_meta", "st_value"):
        if not getattr(raw, name).flags.writeable:
            setattr(raw, name, getattr(raw, name).copy())
    _strings_in_order(raw)
    rows = _plane_rows(raw)
    spans = sorted(rows.values())
    if any(b[0] < a[1] for a, b in itertools.pairwise(spans)):
        return raw  # planes' events interleaved (not an importer's output): ids kept
    raw.plane_headers = [
        _renumber(header, raw, *rows.get(p, (0, 0))) for p, header in enumerate(raw.plane_headers)
    ]
    return raw


def _strings_in_order(raw: RawColumns) -> None:
    """String values used by a row, by their bytes (equal ones merged); the others dropped."""
    is_str = (raw.st_kind == KIND_STR) | (raw.st_kind == KIND_BYTES)
    used = raw.st_value[is_str]
    mark = np.zeros(len(raw.strings), bool)
    mark[used] = True
    ids = np.flatnonzero(mark).tolist()
    texts = sorted({raw.strings[i] for i in ids})
    new_id = {text: k for k, text in enumerate(texts)}
    lookup = np.zeros(len(raw.strings), np.int64)
    lookup[ids] = [new_id[raw.strings[i]] for i in ids]
    raw.st_value[is_str] = lookup[used]
    raw.strings = texts


def _plane_rows(raw: RawColumns) -> dict[int, tuple[int, int]]:
    """Plane -> its stat rows [lo, hi): events are in file order (plane, line, event), so each
    plane's rows follow one another."""
    span: dict[int, tuple[int, int]] = {}
    for line in raw.lines:
        if not line.event_count:
            continue
        lo, hi = line.first_event, line.first_event + line.event_count
        a, b = span.get(line.plane, (lo, hi))
        span[line.plane] = (min(a, lo), max(b, hi))
    start = raw.ev_stat_start
    return {p: (int(start[a] - start[0]), int(start[b] - start[0])) for p, (a, b) in span.items()}


def _header_refs(stats: list[HeaderStat]) -> list[int]:
    out: list[int] = []
    for stat in stats:
        out.append(stat.metadata_id)
        if stat.which == "ref_value" and isinstance(stat.value, int):
            out.append(stat.value)
    return out


def _renumber(header: PlaneHeader, raw: RawColumns, lo: int, hi: int) -> PlaneHeader:
    """The plane's referenced stat metadata as ids 1..n in name order (same names merged);
    its rows' keys and REF values and its header's stats renumbered with them. Keys and REF
    values without metadata are left as they are."""
    if not header.stat_metadata:
        return header
    size = max(header.stat_metadata) + 1
    referenced = np.zeros(size, bool)
    refs = [r for r in _header_refs(header.stats) if 0 <= r < size]
    for event in header.event_metadata.values():
        refs += [r for r in _header_refs(event.stats) if 0 <= r < size]
    referenced[refs] = True
    keys = raw.st_meta[lo:hi]
    inside = (keys >= 0) & (keys < size)
    # every key has metadata in Kineto's planes: no compress and scatter of every row then
    every = bool(inside.all())
    referenced[keys if every else keys[inside]] = True
    kinds = raw.st_kind[lo:hi]
    ref_rows = np.flatnonzero(kinds == KIND_REF) + lo
    ref_values = raw.st_value[ref_rows]
    referenced[ref_values[(ref_values >= 0) & (ref_values < size)]] = True
    known = [m for m in np.flatnonzero(referenced).tolist() if m in header.stat_metadata]
    names = sorted({header.stat_metadata[m].name for m in known})
    by_name = {name: k for k, name in enumerate(names, 1)}
    new_of = {m: by_name[header.stat_metadata[m].name] for m in known}
    lookup = np.arange(size, dtype=np.int64)  # unknown ids map to themselves
    lookup[list(new_of)] = list(new_of.values())
    if every:
        keys[...] = lookup[keys]  # a view: the rows in place
    else:
        keys[inside] = lookup[keys[inside]]
    ok = (ref_values >= 0) & (ref_values < size)
    ref_values[ok] = lookup[ref_values[ok]]
    raw.st_value[ref_rows] = ref_values

    def stats(items: list[HeaderStat]) -> list[HeaderStat]:
        out = []
        for stat in items:
            value = stat.value
            if stat.which == "ref_value" and isinstance(value, int) and value in new_of:
                value = new_of[value]
            meta = new_of.get(stat.metadata_id, stat.metadata_id)
            out.append(HeaderStat(meta, stat.which, value))
        return out

    first_of: dict[int, HeaderStatMetadata] = {}
    for m in known:  # one entry per name, its metadata as the first id had it
        first_of.setdefault(new_of[m], header.stat_metadata[m])
    stat_metadata = {k: dataclasses.replace(first_of[k], id=k) for k in sorted(first_of)}
    events = {
        k: dataclasses.replace(e, stats=stats(e.stats)) for k, e in header.event_metadata.items()
    }
    return dataclasses.replace(
        header, stat_metadata=stat_metadata, event_metadata=events, stats=stats(header.stats)
    )
