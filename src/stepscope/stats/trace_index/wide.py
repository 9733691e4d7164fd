"""Wide windows from a laid-out level: the events of one level of detail, ready to thin.

A window over a good part of the trace (the full view at another width, a zoom out, a pan
at a wide range) reads much of its level: at 10M events and 8000 px, 250,000 candidates
spread over every segment of that level. `window.query_window` finds them by binary
searches, gathers each one's duration from the profile, keeps the longest narrow event per
(row, pixel) with a scatter and sorts the answer back into event order: about 60 ns per
candidate. Here a level's events (``level >= m``) are laid out once, on first use, sorted by
(row, start), with what a window needs of each (start, duration, name, event, position in
the index) and the permutation into event order. A window is then elementwise passes: the
(row, pixel) keys are non-decreasing, so each pixel's narrow events are a short run of
neighbours (at most three bins of the level and one event crossing the window's start), and
the answer is read through the permutation, with no sort. The answer is the same set in the
same order (`window` states the rule): narrow events tie-break by the index's position
order, as `window.longest_per_key` does over `window._positions`' candidates, with the edge
pieces' events after the level's (`tests/stats/test_trace_wide.py` compares both ways).

Bounded: a level is laid out only when it holds at most 1 / `MAX_SHARE` of the events, and
only the last `KEPT` levels asked for are kept (36 bytes per laid-out event: 9 MB for the
8000 px full view's level of a 10.6M-event trace, whose index holds 446 MB of arrays).
"""

from __future__ import annotations

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


@record(frozen=False)
class WideLevel:
    """The events with level >= ``level``, sorted by (row, start) (starts are distinct within a
    row: its events do not overlap), and ``by_event``, the permutation into event order."""

    level: int
    row: np.ndarray  # int32
    start_ns: np.ndarray  # int64 absolute
    dur_ns: np.ndarray  # the profile's durations
    tie: np.ndarray  # int32/int64: position in the index (the order of ties)
    event: np.ndarray  # int32/int64
    name: np.ndarray  # int32 string id
    by_event: np.ndarray  # int32/int64: event order of the above
    last_start_ns: int
    min_dur_ns: int

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
) -> WideLevel:
    """The events of ``level`` or coarser; ``order``/``start_ns`` are the index's (by
    position), ``dur_ns``/``name`` the profile's (by event)."""
    segs = np.flatnonzero(seg_level >= level)
    lo, hi = seg_lo[segs], seg_hi[segs]
    pos = ranges_to_indices(lo, hi)
    row = np.repeat(seg_row[segs], hi - lo)
    start = start_ns[pos]
    by_time = _by_row_and_time(row, start)
    pos, row = pos[by_time], row[by_time]
    event = order[pos]
    small = index_dtype(len(order))
    return WideLevel(
        level=level,
        row=row.astype(np.int32),
        start_ns=start[by_time],
        dur_ns=dur_ns[event],
        tie=pos.astype(small),
        event=event,
        name=name[event].astype(np.int32),
        by_event=stable_argsort(event.astype(np.int64)).astype(small),
        last_start_ns=int(start.max(initial=0)),
        min_dur_ns=int(dur_ns[event].min(initial=0)),
    )


def _by_row_and_time(row: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The order of (row, start): one radix sort of both packed when they fit 48 bits (10M
    events: 80 -> 15 ms for a 250,000-event level), else a lexsort."""
    if len(row) == 0:
        return np.zeros(0, dtype=np.int64)
    low = int(start.min())
    span_bits = (int(start.max()) - low).bit_length()
    if span_bits + int(row.max()).bit_length() <= 47:
        return stable_argsort((row.astype(np.int64) << span_bits) | (start - low))
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
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(event, row, start, dur, name) of `window.query_window`'s answer, in event order, from
    the laid-out level and the edge pieces; ``wanted``: a mask of the rows asked for. None
    when a narrow duration and its tie do not fit one int64 (then search the index)."""
    top = n_events + len(edges.event)
    if (
        int(bucket).bit_length() + top.bit_length() > 62
        or laid.min_dur_ns < 0
        or int(edges.dur_ns.min(initial=0)) < 0
    ):
        return None
    start, dur = laid.start_ns, laid.dur_ns
    keep = start + np.maximum(dur, 1) > t0
    if laid.last_start_ns >= t1:
        keep &= start < t1
    if wanted is not None:
        keep &= wanted[laid.row]
    narrow = np.flatnonzero(keep & (dur < bucket))
    small = np.flatnonzero(edges.dur_ns < bucket)
    # One narrow event per (row, pixel): the longest, the first in the index's position
    # order on ties (the edges after the level's, as `window.query_window` concatenates).
    # (duration, -tie) packed in one int64 (durations under the bucket: checked above)
    bits = top.bit_length()
    packed = dur[narrow]
    packed <<= bits
    packed |= top - laid.tie[narrow].astype(np.int64)
    key = _keys(laid.row[narrow], start[narrow], t0, resolution, bucket)
    won, longest = _longest_of_runs(key, packed)
    keep[narrow[~won]] = False
    extra = edges.dur_ns >= bucket
    if len(small):
        e_key = _keys(edges.row[small], edges.start_ns[small], t0, resolution, bucket)
        e_packed = (edges.dur_ns[small] << bits) | (top - n_events - np.arange(len(small)))
        # each edge key's best, then against the level's winner of that key, if any
        order = np.lexsort((-e_packed, e_key))
        first = np.ones(len(small), dtype=bool)
        first[1:] = e_key[order][1:] != e_key[order][:-1]
        best = order[first]
        lo = np.searchsorted(key, e_key[best], "left")
        hi = np.searchsorted(key, e_key[best], "right")
        rival = np.full(len(best), -1, dtype=np.int64)
        for d in range(longest):  # the run's winner: runs are at most `longest` long
            at = np.minimum(lo + d, max(len(key) - 1, 0))
            found = (lo + d < hi) & won[at] if len(key) else np.zeros(len(best), dtype=bool)
            rival[found] = at[found]
        beaten = (rival >= 0) & (e_packed[best] > packed[np.maximum(rival, 0)])
        keep[narrow[rival[beaten]]] = False
        extra[small[best[(rival < 0) | beaten]]] = True
    taken = laid.by_event[np.flatnonzero(keep[laid.by_event])]
    event = laid.event[taken]
    more = np.flatnonzero(extra)
    if len(more) == 0:
        return event.astype(np.int64), laid.row[taken], start[taken], dur[taken], laid.name[taken]
    # The edges' chosen events go between the level's, by event (no event is in both).
    more = more[stable_argsort(edges.event[more])]
    at = np.searchsorted(event, edges.event[more])
    slots = at + np.arange(len(more))
    merged = np.insert(taken, at, 0)

    def both(main: np.ndarray, edge: np.ndarray) -> np.ndarray:
        out = main[merged]
        out[slots] = edge[more]
        return out

    return (
        both(laid.event, edges.event).astype(np.int64),
        both(laid.row, edges.row.astype(np.int32)),
        both(start, edges.start_ns),
        both(dur, edges.dur_ns),
        both(laid.name, edges.name),
    )


def _keys(
    row: np.ndarray, start: np.ndarray, t0: int, resolution: int, bucket: float
) -> np.ndarray:
    """(row, pixel) keys of the events (``start``: a copy this may change), pixels as
    `window.query_window` counts them; non-decreasing over the level's (row, start) order.
    In place where it can: fresh arrays of this size cost page faults (a third of a wide
    window's CPU time)."""
    key = np.maximum(start, t0, out=start)
    key -= t0
    scratch = np.divide(key, bucket)
    key[:] = scratch  # truncated, as astype(int64)
    np.minimum(key, resolution, out=key)
    wide_row = scratch.view(np.int64)
    np.multiply(row, resolution + 2, out=wide_row, dtype=np.int64)
    key += wide_row
    return key


def _longest_of_runs(key: np.ndarray, packed: np.ndarray) -> tuple[np.ndarray, int]:
    """Mask of the largest ``packed`` (distinct) of each run of equal ``key``s, and the
    longest run's length.

    Runs are short (a row's pixel holds at most three bins of its level, and one event
    crossing the window's start), so each candidate is compared with its neighbours up to
    the longest run's length away: elementwise passes, where a segmented reduction or a
    scatter costs several times more per element."""
    n = len(key)
    first = group_firsts(key)
    sizes = np.diff(first, append=n)
    longest = int(sizes.max(initial=0))
    if longest > RUNS_COMPARED:
        return packed == np.repeat(np.maximum.reduceat(packed, first), sizes), longest
    won = np.ones(n, dtype=bool)
    for d in range(1, longest):
        # i loses to i - d or i + d when that one has its key and a larger value
        same = key[d:] == key[:-d]
        won[d:] &= ~(same & (packed[:-d] > packed[d:]))
        won[:-d] &= ~(same & (packed[d:] > packed[:-d]))
    return won, longest


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
