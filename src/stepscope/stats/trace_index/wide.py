"""Wide windows from a laid-out level: the events of one level of detail, ready to thin.

A window over a good part of the trace (the full view at another width, a zoom out, a pan
at a wide range) reads much of its level: at 10M events and 8000 px, 250,000 candidates
spread over every segment of that level. `window.query_window` finds them by binary
searches, gathers each one's duration from the profile, keeps the longest narrow event per
(row, pixel) with a scatter and sorts the answer back into event order: about 60 ns per
candidate. Here a level's events (``level >= m``) are laid out once, on first use: sorted by
(row, start), what a window thins (start, duration, position in the index, and the rank of
(duration, -position) that picks a pixel's narrow event), and in event order, what it
answers (event, line, depth, start, duration, name), with the permutation between the two.
A window is then elementwise passes: the (row, pixel) keys are non-decreasing, so each
pixel's narrow events are a short run of neighbours (at most three bins of the level and
one event crossing the window's start), and the answer is read in event order, with no
sort and no gather at random (decision 337). The keys are made for the whole level, the
events the window does not keep among them, with no gather of the narrow ones (decision
1042). The answer is the same set in the same order
(`window` states the rule): narrow events tie-break by the index's position order, as
`window.longest_per_key` does over `window._positions`' candidates, with the edge pieces'
events after the level's (`tests/stats/test_trace_wide.py` compares both ways).

Bounded: a level is laid out only when it holds at most 1 / `MAX_SHARE` of the events, and
only the last `KEPT` levels asked for are kept (88 bytes per laid-out event with 32-bit
positions: 22 MB for the 8000 px full view's level of a 10.6M-event trace, whose index
holds 446 MB of arrays). Laying a level out is a wide window's first cost at a new width
(the page's first full view, each zoom level): merges of the level's sorted runs and one
pass for the pick's order, 15 ms of CPU for that level (decision 420).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from stepscope.records import record
from stepscope.stats.trace_index.search import index_dtype
from stepscope.stats.trace_index.segments import ranges_to_indices, stable_argsort

WIDE = 4  # windows of at least 1 / WIDE of the trace are answered from the laid-out level
MAX_SHARE = 16  # a level is laid out when it holds at most 1 / MAX_SHARE of the events
KEPT = 2  # levels kept per index (a user zooming between two widths)
RUNS_COMPARED = 8  # runs up to this long are compared elementwise (`_longest_of_runs`)
ROW_KEY = float(1 << 32)  # a (row, pixel) key is row * ROW_KEY + pixel (`_level_keys`)


@record(frozen=False)
class WideLevel:
    """The events with level >= ``level``: what a window thins, sorted by (row, start)
    (starts are distinct within a row: its events do not overlap), and what it answers, in
    event order; ``by_event``: the (row, start) position of each event in event order."""

    level: int
    row: np.ndarray  # int32
    start_ns: np.ndarray  # int64 absolute
    dur_ns: np.ndarray  # the profile's durations
    last_ns: np.ndarray  # start + max(dur, 1) - 1: the window overlaps an event lasting to t0
    row_key: np.ndarray  # float64: row * ROW_KEY, the keys' row part (`_level_keys`)
    row_first: np.ndarray  # int64: where each row's events begin
    tie: np.ndarray  # int32/int64: position in the index (the order of ties)
    strength: np.ndarray  # int64: (duration, -tie) packed (`_strength`): a pixel keeps its largest
    by_event: np.ndarray  # int32/int64
    # in event order
    event: np.ndarray  # int64, ascending (the answer's type: no conversion a window)
    line: np.ndarray  # int32
    depth: np.ndarray  # int32
    event_start_ns: np.ndarray  # int64
    event_dur_ns: np.ndarray  # int64
    name: np.ndarray  # int32 string id
    first_start_ns: int
    last_start_ns: int
    min_dur_ns: int
    disjoint: bool  # no two events of a row overlap (each ends by the next one's start + 1)

    def __len__(self) -> int:
        return len(self.event)


def level_size(seg_level: np.ndarray, seg_lo: np.ndarray, seg_hi: np.ndarray, level: int) -> int:
    """Events at ``level`` or coarser."""
    coarse = seg_level >= level
    return int((seg_hi[coarse] - seg_lo[coarse]).sum())


def lay_out(
    level: int,
    seg_level: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    seg_row: np.ndarray,
    order: np.ndarray,
    start_ns: np.ndarray,
    dur_ns: np.ndarray,
    name: np.ndarray,
    row_line: np.ndarray,
    row_depth: np.ndarray,
) -> WideLevel:
    """The events of ``level`` or coarser; ``order``/``start_ns`` are the index's (by
    position), ``dur_ns``/``name`` the profile's (by event), ``row_line``/``row_depth`` the
    index's rows."""
    segs = np.flatnonzero(seg_level >= level)
    lo, hi = seg_lo[segs], seg_hi[segs]
    pos = ranges_to_indices(lo, hi)
    row = np.repeat(seg_row[segs], hi - lo)
    start = start_ns[pos]
    by_time = _by_row_and_time(row, start)
    pos, row, start = pos[by_time], row[by_time].astype(np.int32), start[by_time]
    event = order[pos]
    small = index_dtype(len(order))
    # distinct events, in runs of ascending ones: timsort merges the runs (0.9 ms for a
    # 250,000-event level of the 10.6M-event trace, where the radix sort took 4-5 ms)
    by_event = np.argsort(event, kind="stable").astype(small)
    in_order = event[by_event]
    # the durations read in ascending event order (a gather at random from the profile's
    # 85 MB of durations cost 5 ms), then put in (row, start) order
    event_dur = dur_ns[in_order]
    dur = np.empty_like(event_dur)
    dur[by_event] = event_dur
    last = start + np.maximum(dur, 1) - 1
    same_row = row[1:] == row[:-1]
    return WideLevel(
        level=level,
        row=row,
        start_ns=start,
        dur_ns=dur,
        last_ns=last,
        row_key=row * ROW_KEY,
        row_first=group_firsts(row),
        tie=pos.astype(small),
        strength=_strength(dur, pos, len(order)),
        by_event=by_event,
        event=in_order.astype(np.int64),
        line=row_line[row[by_event]].astype(np.int32),
        depth=row_depth[row[by_event]].astype(np.int32),
        event_start_ns=start[by_event],
        event_dur_ns=event_dur,
        name=name[in_order].astype(np.int32),
        first_start_ns=int(start.min(initial=0)),
        last_start_ns=int(start.max(initial=0)),
        min_dur_ns=int(dur.min(initial=0)),
        disjoint=bool(np.all(~same_row | (last[:-1] <= start[1:]))),
    )


def _strength(dur: np.ndarray, pos: np.ndarray, n_events: int) -> np.ndarray:
    """Each event's (duration, -position) packed in one int64: a pixel keeps the largest.

    Only narrow events are compared, and `wide_answer` answers only when a narrow duration
    (below the bucket) and a position fit 62 bits together: durations at or above that cap
    are clipped to it (such an event is never narrow), negative ones to 0 (then it does not
    answer). Where a rank by `np.lexsort` cost 22-24 ms for a 250,000-event level, this is
    one pass; the order among the events compared is the same."""
    bits = n_events.bit_length()  # positions are below 2**bits - 1
    cap = (1 << (62 - bits)) - 1
    packed = np.clip(dur, 0, cap).astype(np.int64)
    packed <<= bits
    packed |= (1 << bits) - 1 - pos.astype(np.int64)
    return packed


def _by_row_and_time(row: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The order of (row, start): one sort of both packed in an int64 when they fit, else a
    lexsort. The level's events come as runs sorted by start (its segments, a row's ones
    together), which timsort (NumPy's stable sort of int64) merges: 1.7 ms for a
    250,000-event level of the 10.6M-event trace, where a radix sort of the packed keys
    took 10-13 ms."""
    if len(row) == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(start.min())
    span_bits = (int(start.max()) - low).bit_length()
    if span_bits + int(row.max()).bit_length() <= 62:
        return np.argsort((row.astype(np.int64) << span_bits) | (start - low), kind="stable")
    return np.lexsort((start, row))


@record(frozen=False)
class Edges:
    """The events of the window's two edge pieces (finer levels), in the index's position
    order, already known to overlap the window."""

    row: np.ndarray
    start_ns: np.ndarray
    dur_ns: np.ndarray
    event: np.ndarray  # int64
    name: np.ndarray  # int32


def wide_answer(
    laid: WideLevel,
    edges: Edges,
    t0: int,
    t1: int,
    resolution: int,
    bucket: float,
    wanted: np.ndarray | None,
    n_events: int,
    row_line: np.ndarray,
    row_depth: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(event, line, depth, start, dur, name) of `window.query_window`'s answer, in event
    order, from the laid-out level and the edge pieces; ``wanted``: a mask of the rows asked
    for; rows are read through ``row_line``/``row_depth``. None when a narrow duration and
    its tie do not fit one int64 (then search the index)."""
    top = n_events + len(edges.event)
    if (
        int(bucket).bit_length() + top.bit_length() > 62
        or laid.min_dur_ns < 0
        or int(edges.dur_ns.min(initial=0)) < 0
        or not _float_keys_fit(laid, len(row_line), t0, bucket)
    ):
        return None
    bits = top.bit_length()
    # The edge pieces' narrow events, each (row, pixel)'s best: (duration, -tie) packed in
    # one int64, the edges' ties after the level's (as `window.query_window` concatenates).
    small = np.flatnonzero(edges.dur_ns < bucket)
    e_key = _edge_keys(edges.row[small], edges.start_ns[small], t0, bucket)
    e_packed = (edges.dur_ns[small] << bits) | (top - n_events - np.arange(len(small)))
    order = np.lexsort((-e_packed, e_key))
    first = np.ones(len(small), dtype=bool)
    first[1:] = e_key[order][1:] != e_key[order][:-1]
    best = order[first]
    keep, rival = _thin(laid, t0, t1, bucket, wanted, e_key[best])
    # an edge event beats the level's pick of its key when longer (ties go to the level)
    found = rival >= 0
    rivals = np.maximum(rival, 0)
    level_packed = (laid.dur_ns[rivals] << bits) | (top - laid.tie[rivals].astype(np.int64))
    beaten = found & (e_packed[best] > level_packed)
    keep[rival[beaten]] = False
    extra = edges.dur_ns >= bucket
    extra[small[best[~found | beaten]]] = True
    more = np.flatnonzero(extra)
    more = more[stable_argsort(edges.event[more])]
    return _in_event_order(laid, keep, edges, more, row_line, row_depth)


def _thin(
    laid: WideLevel,
    t0: int,
    t1: int,
    bucket: float,
    wanted: np.ndarray | None,
    edge_keys: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The mask of the level's events the window keeps, and the level's pick (a position, -1
    for none) of each of the ascending ``edge_keys`` (`_level_keys`' form).

    Over the whole level, with no gather of the narrow events (decision 1042): every event
    gets a key (`_level_keys`: non-decreasing, the window's pixel for those it keeps) and a
    value, its strength when it is narrow and kept, else -1; among equal keys the narrow kept
    events are those `window.query_window` compares, in the same runs (the others between
    them have the same key, and lose to any of them), so each run's largest value is the
    same pick."""
    start, dur = laid.start_ns, laid.dur_ns
    keep = laid.last_ns >= t0  # the event ends after t0
    if laid.last_start_ns >= t1:
        keep &= start < t1
    if wanted is not None:
        keep &= wanted[laid.row]
    # dur < bucket: below 2**53 the integer comparison with ceil(bucket) is the same and
    # makes no float copy of the durations
    short = dur < math.ceil(bucket) if bucket < 2**53 else dur < bucket
    narrow = keep & short
    key = _level_keys(laid, t0, bucket)
    won, longest = _longest_of_runs(key, np.where(narrow, laid.strength, -1))
    won &= narrow
    # every narrow one was kept: now its run's winner only (wide ones and the rest as they are)
    np.logical_and(keep, won | ~short, out=keep)
    lo = np.searchsorted(key, edge_keys, "left")
    hi = np.searchsorted(key, edge_keys, "right")
    rival = np.full(len(edge_keys), -1, dtype=np.int64)
    for d in range(longest):  # the run's winner: runs are at most `longest` long
        at = np.minimum(lo + d, max(len(key) - 1, 0))
        found = (lo + d < hi) & won[at] if len(key) else np.zeros(len(edge_keys), dtype=bool)
        rival[found] = at[found]
    return keep, rival


def _level_keys(laid: WideLevel, t0: int, bucket: float) -> np.ndarray:
    """Each laid-out event's (row, pixel) key as float64, ``row * 2**32 + pixel``: for an
    event that ends after t0 its pixel in the window (one starting before t0 in pixel 0),
    for one that ends by t0 a negative pixel (its start's, floored), so the keys do not
    decrease over the level's (row, start) order and the events before the window make
    runs of their own size (not one run of all of them in pixel 0). Exact: pixels are
    whole numbers of at most 2**31 in magnitude (`_float_keys_fit`)."""
    key = np.divide(laid.start_ns - t0, bucket)
    np.floor(key, out=key)
    key += laid.row_key
    # Each row's events before t0 come first (negative pixels); of them only the last can
    # end after t0 (the row's events do not overlap): it crosses t0, pixel 0.
    row_key = laid.row_key[laid.row_first]
    crossing = np.searchsorted(key, row_key) - 1
    crossing = crossing[crossing >= laid.row_first]
    crossing = crossing[laid.last_ns[crossing] >= t0]
    key[crossing] = laid.row_key[crossing]
    return key


def _edge_keys(row: np.ndarray, start: np.ndarray, t0: int, bucket: float) -> np.ndarray:
    """`_level_keys` of events that end after t0 (the edge pieces')."""
    key = np.divide(np.maximum(start, t0) - t0, bucket)
    np.floor(key, out=key)
    key += row.astype(np.float64) * ROW_KEY
    return key


def _float_keys_fit(laid: WideLevel, n_rows: int, t0: int, bucket: float) -> bool:
    """Whether `_level_keys` are exact and ordered for this window: the level's rows hold
    no overlapping events, every pixel (the level's starts and t0, in buckets) is within
    2**31 and every key within 2**53 (a float64's whole numbers)."""
    reach = max(abs(laid.first_start_ns - t0), abs(laid.last_start_ns - t0))
    return laid.disjoint and reach / bucket + 2 < 2**31 and n_rows * ROW_KEY < 2**53


def _in_event_order(
    laid: WideLevel,
    keep: np.ndarray,
    edges: Edges,
    more: np.ndarray,
    row_line: np.ndarray,
    row_depth: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(event, line, depth, start, dur, name) of the level's kept events and the edges'
    ``more`` (ascending events), merged by event: the level's columns are in event order,
    so its kept events are read in order, where a gather through the permutation read them
    at random."""
    taken = np.flatnonzero(keep[laid.by_event])
    columns = (
        laid.event,
        laid.line,
        laid.depth,
        laid.event_start_ns,
        laid.event_dur_ns,
        laid.name,
    )
    edge_rows = edges.row[more]
    edge_columns = (
        edges.event[more],
        row_line[edge_rows],
        row_depth[edge_rows],
        edges.start_ns[more],
        edges.dur_ns[more],
        edges.name[more],
    )
    if len(more) == 0:
        found = [column[taken] for column in columns]
    else:
        # The edges' chosen events go between the level's, by event (no event is in both):
        # the kept level events before each are those before it in the level (ascending
        # events), found without gathering the kept events' ids
        at = np.searchsorted(taken, np.searchsorted(laid.event, edges.event[more]))
        slots = at + np.arange(len(more))
        merged = np.insert(taken, at, 0)
        found = []
        for column, edge in zip(columns, edge_columns, strict=True):
            out = column[merged]
            out[slots] = edge
            found.append(out)
    event, line, depth, start, dur, name = found
    return (
        event,
        line.astype(np.int32, copy=False),
        depth.astype(np.int32, copy=False),
        start,
        dur,
        name,
    )


def _longest_of_runs(key: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, int]:
    """Mask of the largest ``value`` (distinct) of each run of equal ``key``s (non-decreasing),
    and the longest run's length.

    Runs are short (a row's pixel holds at most three bins of its level, and one event
    crossing the window's start), so each candidate is compared with its neighbours at
    distance 1, 2, ... until no two keys that far apart are equal (the keys do not decrease,
    so that distance is the longest run's length): elementwise passes, where a segmented
    reduction or a scatter costs several times more per element."""
    n = len(key)
    won = np.ones(n, dtype=bool)
    for d in range(1, n):
        same = key[d:] == key[:-d]
        if not same.any():
            return won, d
        if d >= RUNS_COMPARED:  # runs longer than RUNS_COMPARED: each run's maximum
            first = group_firsts(key)
            sizes = np.diff(first, append=n)
            best = np.repeat(np.maximum.reduceat(value, first), sizes)
            return value == best, int(sizes.max())
        # i loses to i - d or i + d when that one has its key and a larger value
        won[d:] &= ~(same & (value[:-d] > value[d:]))
        won[:-d] &= ~(same & (value[d:] > value[:-d]))
    return won, n


def group_firsts(key: np.ndarray) -> np.ndarray:
    """Start of each run of equal ``key``s."""
    if len(key) == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.empty(len(key), dtype=bool)
    change[0] = True
    np.not_equal(key[1:], key[:-1], out=change[1:])
    return np.flatnonzero(change)


class WideLevels:
    """The laid-out levels of one index (the last `KEPT` asked for), safe across threads:
    two requests that miss at once both lay the level out, and the second keeps its own."""

    def __init__(self) -> None:
        self._levels: OrderedDict[int, WideLevel] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, level: int, build: Callable[[], WideLevel]) -> WideLevel:
        with self._lock:
            found = self._levels.get(level)
            if found is not None:
                self._levels.move_to_end(level)
                return found
        made = build()
        with self._lock:
            self._levels[level] = made
            self._levels.move_to_end(level)
            while len(self._levels) > KEPT:
                self._levels.popitem(last=False)
        return made

    def __contains__(self, level: int) -> bool:
        with self._lock:
            return level in self._levels

    def __len__(self) -> int:
        with self._lock:
            return len(self._levels)
