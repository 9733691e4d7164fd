"""Window queries on a `TraceIndex`: what the timeline draws for [t0, t1) at R pixels.

The rule (XProf's trace viewer's levels of detail, ``xprof/convert/trace_viewer/``, made
exact): with bucket width w = (t1 - t0) / R,
- every event overlapping the window that is at least w long is returned;
- narrower events are represented: wherever a row (line, depth) has an event starting in a
  pixel bucket (an event crossing t0 counts in bucket 0), a returned event of that row starts
  in the same bucket or a neighbouring one (the longest event of its 2**m-ns bin, m =
  floor(log2 w), so at most one bin width away); in the two bins cut by the window's edges,
  in the same bucket;
- no row gets two narrow events in one bucket (the longest is kept).
Cost: the index gives the candidates directly (about two per pixel per row, see `lod`),
found with one vectorized binary search per (row, level) segment; nothing scans the trace.
"""

from __future__ import annotations

import math

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import unique_many
from stepscope.stats.trace_index.index import TraceIndex
from stepscope.stats.trace_index.lod import MAX_LEVEL
from stepscope.stats.trace_index.segments import (
    first_max_per_group,
    group_starts,
    ranges_to_indices,
    segmented_search,
    stable_argsort,
)
from stepscope.stats.trace_index.wide import (
    MAX_SHARE,
    WIDE,
    Edges,
    WideLevel,
    lay_out,
    level_size,
    wide_answer,
)


@record(frozen=False)
class WindowEvents:
    event: np.ndarray  # int64 event index, ascending
    line: np.ndarray  # int32
    depth: np.ndarray  # int32
    start_ns: np.ndarray  # int64 absolute
    dur_ns: np.ndarray  # int64
    name: np.ndarray  # int32 string id
    level: int  # detail level used (bins of 2**level ns)
    bucket_ns: float  # w

    def __len__(self) -> int:
        return len(self.event)


def level_for(bucket_ns: float) -> int:
    return 0 if bucket_ns < 2 else min(math.floor(math.log2(bucket_ns)), MAX_LEVEL)


def _segments(
    index: TraceIndex, t0: int, t1: int, min_level: int, rows: np.ndarray | None
) -> np.ndarray:
    keep = (index.seg_level >= min_level) & (index.seg_start_ns < t1) & (index.seg_end_ns > t0)
    if rows is not None:
        keep &= np.isin(index.seg_row, rows)
    return np.flatnonzero(keep)


def _positions(
    index: TraceIndex, segs: np.ndarray, t0: int | np.ndarray, t1: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted positions in the segments that may overlap [t0, t1) (each segment's own, when
    arrays), and the row of each."""
    lo, hi = index.seg_lo[segs], index.seg_hi[segs]
    first = segmented_search(index.end_max_ns, lo, hi, np.broadcast_to(t0, len(segs)), "right")
    last = segmented_search(index.start_ns, lo, hi, np.broadcast_to(t1, len(segs)), "left")
    counts = np.maximum(last - first, 0)
    return ranges_to_indices(first, last), np.repeat(index.seg_row[segs], counts)


def rows_of_lines(index: TraceIndex, lines: np.ndarray | None) -> np.ndarray | None:
    if lines is None:
        return None
    return np.flatnonzero(np.isin(index.row_line, lines))


def rows_of_pairs(index: TraceIndex, lines: np.ndarray, depths: np.ndarray) -> np.ndarray:
    """Row numbers of (line, depth) pairs (pairs that are no row are left out)."""
    key = (index.row_line.astype(np.int64) << 32) | index.row_depth.astype(np.int64)
    want = (np.asarray(lines, np.int64) << 32) | np.asarray(depths, np.int64)
    pos = np.minimum(np.searchsorted(key, want), max(len(key) - 1, 0))
    return unique_many(pos[key[pos] == want]) if len(key) else np.zeros(0, np.int64)


def query_window(
    profile: Profile,
    index: TraceIndex,
    t0: int,
    t1: int,
    resolution: int,
    lines: np.ndarray | None = None,
) -> WindowEvents:
    """The events to draw for [t0, t1) (absolute ns) at ``resolution`` pixels."""
    t1 = max(t1, t0 + 1)
    bucket = (t1 - t0) / max(resolution, 1)
    level = level_for(bucket)
    rows = rows_of_lines(index, lines)
    # Bins are aligned to the trace origin, not to the window: a bin cut by a window edge may
    # have its representative outside. Those two pieces (each under one pixel) get every
    # event instead, from the finer levels.
    width = 1 << level
    left = min(t1, index.origin_ns + -(-(t0 - index.origin_ns) // width) * width)
    right = max(t0, index.origin_ns + ((t1 - index.origin_ns) // width) * width)
    pieces = [(a, b) for a, b in ((t0, left), (right, t1)) if b > a and level > 0]
    # A window over a good part of the trace reads much of its level: from the level laid
    # out (`wide`), when the edge pieces are apart (no event in both).
    wide = WIDE * (t1 - t0) >= index.end_ns - index.origin_ns
    if wide and level > 0 and right - left >= 2 * width:
        laid = _wide_level(profile, index, level)
        found = None
        if laid is not None:
            found = _wide_window(profile, index, laid, t0, t1, resolution, rows, pieces, bucket)
        if found is not None:
            return found
    pos, row = _positions(index, _segments(index, t0, t1, level, rows), t0, t1)
    if pieces:
        more_pos, more_row = _pieces_positions(index, pieces, level, rows)
        pos, row = np.concatenate([pos, more_pos]), np.concatenate([row, more_row])
    event = index.order[pos].astype(np.int64)
    start = index.start_ns[pos]
    dur = profile.dur_ns[event]
    keep = start + np.maximum(dur, 1) > t0  # overlapping; then the narrow ones thinned
    narrow = np.flatnonzero(keep & (dur < bucket))
    if len(narrow):
        # One narrow event per (row, pixel): the longest (the first on ties).
        keep[narrow] = False
        pixel = ((np.maximum(start[narrow], t0) - t0) / bucket).astype(np.int64)
        key = _row_ranks(row[narrow], len(index.row_line)) * (resolution + 2)
        key += np.minimum(pixel, resolution)
        keep[narrow[longest_per_key(key, dur[narrow], bucket)]] = True
    chosen = np.flatnonzero(keep)
    chosen = chosen[stable_argsort(event[chosen])]
    row, event, start, dur = row[chosen], event[chosen], start[chosen], dur[chosen]
    return WindowEvents(
        event=event,
        line=index.row_line[row],
        depth=index.row_depth[row],
        start_ns=start,
        dur_ns=dur,
        name=profile.name[event].astype(np.int32),
        level=level,
        bucket_ns=bucket,
    )


def _pieces_positions(
    index: TraceIndex, pieces: list[tuple[int, int]], level: int, rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (and rows) of the events finer than ``level`` that may overlap each piece,
    concatenated, found by one search of all the pieces' segments (a search is some twenty
    NumPy steps whatever the segments: two pieces searched apart cost a near-full window
    0.7 ms, decision 1042)."""
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    found = []
    for a, b in pieces:
        finer = _segments(index, a, b, 0, rows)
        found.append(finer[index.seg_level[finer] < level])
    segs = np.concatenate(found)
    sizes = [len(f) for f in found]
    t0 = np.repeat(np.array([a for a, _ in pieces], dtype=np.int64), sizes)
    t1 = np.repeat(np.array([b for _, b in pieces], dtype=np.int64), sizes)
    return _positions(index, segs, t0, t1)


def _wide_level(profile: Profile, index: TraceIndex, level: int) -> WideLevel | None:
    """``level`` laid out in event order (kept by the index), or None when it is too big."""
    if level not in index.wide_levels:
        size = level_size(index.seg_level, index.seg_lo, index.seg_hi, level)
        if size * MAX_SHARE > index.n_events:
            return None
    return index.wide_levels.get(
        level,
        lambda: lay_out(
            level,
            index.seg_level,
            index.seg_lo,
            index.seg_hi,
            index.seg_row,
            index.order,
            index.start_ns,
            profile.dur_ns,
            profile.name,
            index.row_line,
            index.row_depth,
        ),
    )


def _wide_window(
    profile: Profile,
    index: TraceIndex,
    laid: WideLevel,
    t0: int,
    t1: int,
    resolution: int,
    rows: np.ndarray | None,
    pieces: list[tuple[int, int]],
    bucket: float,
) -> WindowEvents | None:
    """`query_window`'s answer from a laid-out level plus the edge ``pieces``' events."""
    pos, row = _pieces_positions(index, pieces, laid.level, rows)
    event = index.order[pos].astype(np.int64)
    start, dur = index.start_ns[pos], profile.dur_ns[event]
    near = np.flatnonzero(start + np.maximum(dur, 1) > t0)
    edges = Edges(
        row=row[near],
        start_ns=start[near],
        dur_ns=dur[near],
        event=event[near],
        name=profile.name[event[near]].astype(np.int32),
    )
    wanted = None
    if rows is not None:
        wanted = np.zeros(len(index.row_line), dtype=bool)
        wanted[rows] = True
    answer = wide_answer(
        laid,
        edges,
        t0,
        t1,
        resolution,
        bucket,
        wanted,
        index.n_events,
        index.row_line,
        index.row_depth,
    )
    if answer is None:
        return None
    event, line, depth, start, dur, name = answer
    return WindowEvents(
        event=event,
        line=line,
        depth=depth,
        start_ns=start,
        dur_ns=dur,
        name=name,
        level=laid.level,
        bucket_ns=bucket,
    )


def _row_ranks(row: np.ndarray, n_rows: int) -> np.ndarray:
    """Each row's rank among the distinct rows of ``row`` (same order): keys per (row,
    pixel) then span the rows in the window, not every row of the trace."""
    present = np.zeros(n_rows, dtype=bool)
    present[row] = True
    return (np.cumsum(present) - 1)[row]


def longest_per_key(key: np.ndarray, dur: np.ndarray, bucket: float) -> np.ndarray:
    """Position of the longest ``dur`` (the first on ties) of each distinct non-negative
    ``key``, in key order; every ``dur`` is under ``bucket``."""
    n = len(key)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    low, high = int(key.min()), int(key.max())
    rank_bits = n.bit_length()
    if (
        high - low <= 4 * n + (1 << 16)
        and int(dur.min()) >= 0
        and int(bucket).bit_length() + rank_bits <= 62
    ):
        # Keys of a window span its rows times its pixels: a slot per key, each holding
        # the largest (duration, -position) packed in one int64, costs one pass where a
        # sort of the keys cost three (a full view at 8000 px of a 10M-event trace: 240k
        # narrow candidates, 9 -> 1 ms). dur < bucket, so the pair fits 62 bits.
        last = (1 << rank_bits) - 1
        packed = (dur.astype(np.int64) << rank_bits) | (last - np.arange(n, dtype=np.int64))
        best = np.full(high - low + 1, -1, dtype=np.int64)
        np.maximum.at(best, key - low if low else key, packed)
        return last - (best[best >= 0] & last)
    # One stable sort by (key, longest first) when the pair fits the radix sort's 48 bits:
    # each group's first is its pick (a third of the sorts and no per-group maximum).
    width = int(bucket) + 2
    if int(key.max()) < (1 << 48) // width:
        order = stable_argsort(key * width + (width - 1 - dur))  # width-1-dur in [1, width)
        return order[group_starts(key[order])]
    order = stable_argsort(key)
    return order[first_max_per_group(dur[order], group_starts(key[order]))]


def events_in_box(
    profile: Profile, index: TraceIndex, t0: int, t1: int, rows: np.ndarray | None
) -> np.ndarray:
    """Every event of ``rows`` (all rows when None) overlapping [t0, t1), no level of detail."""
    segs = _segments(index, t0, max(t1, t0 + 1), 0, rows)
    pos, _ = _positions(index, segs, t0, max(t1, t0 + 1))
    event = index.order[pos].astype(np.int64)
    end = index.start_ns[pos] + np.maximum(profile.dur_ns[event], 1)
    return event[end > t0]
