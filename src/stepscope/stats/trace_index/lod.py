"""Build-time algorithms of the trace index: nesting depth and level of detail, vectorized.

Depth. Within a line, events sorted by (start, longer first) stack like calls: the *parent*
of event i is the nearest earlier event still running when i starts (end > start_i), and
depth(i) = depth(parent) + 1. For properly nested events this is the call stack; for events
that overlap without nesting (async work, a step annotation cutting across functions) it
still never puts two overlapping events on one row: anything that starts while i runs gets a
greater depth than i. Parents are found by pointer jumping (an event that ended before i
starts lets i jump to that event's own parent: nothing in between can still be running),
depths by list ranking; both take O(log n) vectorized rounds. Zero-duration events count as
1 ns long, so instants at one time stack instead of overlapping.

Level of detail. A *row* is one (line, depth). Cut time into bins of 2**m ns; in each bin of a
row the *representative* is its longest event (the earliest one on ties). Representatives of
level m are representatives of every finer level too, so each event has one number, its
``level``: the coarsest m at which it still represents its bin. A window query at bucket width
w (ns per pixel) uses m = floor(log2(w)) and returns the events with level >= m: at most one per
bin of 2**m > w/2 ns, i.e. about two per pixel per row, whatever the trace's size. An event at
least w long is always among them: rows never overlap, so no other event of its bin can be as
long (it would overlap it); as a safeguard the level is also raised to floor(log2(duration)).

C. Both are one walk with a stack in `_lod.c` (`accelerators`: depths by the stack of running
events, levels by a monotonic stack each way), 14-21x less CPU than the NumPy code here at 10M
events (decision 1068); the NumPy code is their twin, run where the extension is not built or
``STEPSCOPE_PURE_PYTHON`` switches it off, and gives the same arrays byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from stepscope import accelerators
from stepscope.stats.arrays import unique_many
from stepscope.stats.trace_index.segments import bit_length, group_starts, stable_argsort

MAX_LEVEL = 62


def line_order(line: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """Event indexes sorted by (line, start, end descending).

    Profiles keep each line's events contiguous and sorted by start, so this is usually the
    identity and costs one pass; only profiles with ties in the wrong order get sorted.
    """
    n = len(line)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    same_line = line[1:] == line[:-1]
    ordered = (line[1:] >= line[:-1]) & (
        ~same_line
        | (start_ns[1:] > start_ns[:-1])
        | ((start_ns[1:] == start_ns[:-1]) & (end_ns[1:] <= end_ns[:-1]))
    )
    if ordered.all():
        return np.arange(n, dtype=np.int64)
    return np.lexsort((-end_ns, start_ns, line)).astype(np.int64)


def _parents(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nearest earlier event with end > start (see module docstring); -1 for none."""
    parent = np.arange(len(start), dtype=np.int64) - 1
    active = np.flatnonzero(parent >= 0)
    active = active[end[parent[active]] <= start[active]]
    while len(active):
        parent[active] = parent[parent[active]]
        active = active[parent[active] >= 0]
        active = active[end[parent[active]] <= start[active]]
    return parent


def _hops_to_root(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors of each node of a forest (Wyllie's list ranking)."""
    depth = (parent >= 0).astype(np.int32)
    nxt = parent.copy()
    live = np.flatnonzero(nxt >= 0)
    while len(live):
        hop = nxt[live]
        new_depth = depth[live] + depth[hop]
        new_next = nxt[hop]
        depth[live] = new_depth
        nxt[live] = new_next
        live = live[new_next >= 0]
    return depth


def _laminar(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(parent, depth) of a line's events in `line_order`'s order when every two of them are
    nested or disjoint (calls: the usual case), without pointer jumping; None otherwise.

    Then the events running when i starts are its ancestors, and they are the earlier events
    whose end is after that start: depth(i) = i - #{ends <= start_i} (a later event cannot
    end by then). Its parent is the last earlier event one level up. The check that makes
    this exact: in the first event a family is not laminar at, the event found as parent
    (the innermost one running) ends before it does; so if every parent found ends no
    earlier than its child, the family is laminar and these are `_parents`' answers.
    """
    k = len(start)
    depth = np.arange(k, dtype=np.int64) - np.searchsorted(np.sort(end), start, side="right")
    parent = np.full(k, -1, dtype=np.int64)
    by_depth = stable_argsort(depth)  # each depth's events, ascending
    bounds = np.append(group_starts(depth[by_depth]), k).tolist()
    for d in range(1, len(bounds) - 1):
        ups, kids = by_depth[bounds[d - 1] : bounds[d]], by_depth[bounds[d] : bounds[d + 1]]
        if depth[kids[0]] != d or depth[ups[0]] != d - 1:
            return None
        at = np.searchsorted(ups, kids) - 1
        if at[0] < 0:
            return None
        found = ups[at]
        if not np.all(end[found] >= end[kids]):
            return None
        parent[kids] = found
    return parent, depth.astype(np.int32)


def _nested_lines(
    order: np.ndarray, line: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Per line of ``order`` (`line_order`'s), its events, their parent within the line
    (local indices, -1 for none) and, when the line's events nest properly, their depths
    (else None: found from the parents); lines whose events run back to back (nothing
    nested) are skipped: all their events are at depth 0 with no parent."""
    if len(order) == 0:
        return
    bounds = np.append(group_starts(line[order]), len(order))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        events = order[a:b]
        start = start_ns[events]
        end = start + np.maximum(dur_ns[events], 1)
        if b - a < 2 or np.all(start[1:] >= end[:-1]):
            continue
        nested = _laminar(start, end)
        if nested is None:
            yield events, _parents(start, end), None
        else:
            yield events, *nested


def nesting_depth(
    order: np.ndarray, line: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray
) -> np.ndarray:
    """Depth of each event (indexed like the profile), from `line_order`'s ``order``."""
    native = _native_depths(order, line, start_ns, dur_ns, False)
    if native is not None:
        return native[0]
    depth = np.zeros(len(order), dtype=np.int32)  # the twin: NumPy sorts and pointer jumping
    for events, local, found in _nested_lines(order, line, start_ns, dur_ns):
        depth[events] = _hops_to_root(local) if found is None else found
    return depth


def nesting_parents(
    order: np.ndarray, line: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray
) -> np.ndarray:
    """Parent of each event (profile index; -1 for none), as `nesting_depth` defines it."""
    native = _native_depths(order, line, start_ns, dur_ns, True)
    if native is not None:
        return native[1]
    parent = np.full(len(order), -1, dtype=np.int64)  # the twin
    for events, local, _ in _nested_lines(order, line, start_ns, dur_ns):
        parent[events[local >= 0]] = events[local[local >= 0]]
    return parent


def _native_depths(
    order: np.ndarray, line: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray, parents: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """(depth, parent or an empty array) from the C pass (`_lod.c`: one stack walk), or None
    where it is not built, switched off, the columns are not of its types (int64 order and
    times, int32 lines), or it stops (events out of `line_order`'s order, an end past int64):
    the NumPy twin answers then."""
    native = accelerators.get("_lod")
    if native is None or order.dtype != np.int64 or line.dtype != np.int32:
        return None
    if start_ns.dtype != np.int64 or dur_ns.dtype != np.int64 or len(order) != len(line):
        return None
    n = len(order)
    depth = np.empty(n, dtype=np.int32)
    parent = np.empty(n if parents else 0, dtype=np.int64)
    arrays = (np.ascontiguousarray(a) for a in (order, line, start_ns, dur_ns))
    if not native.depths(*arrays, depth, parent if parents else None):
        return None
    return depth, parent


def _nearest_beating(row: np.ndarray, dur: np.ndarray, step: int) -> np.ndarray:
    """For each event, the nearest event of its row before it (``step`` -1) that is at least
    as long, or after it (``step`` +1) that is strictly longer; -1 where there is none.

    Pointer jumping: an event that does not beat i cannot hide one that does between itself
    and its own answer, so i may jump there. All events jump at once; chains halve each round.
    """
    n = len(dur)
    nearest = np.arange(n, dtype=np.int64) + step
    if n == 0:
        return nearest
    edge = np.zeros(n, dtype=bool)
    if step < 0:
        edge[0] = True
        edge[1:] = row[1:] != row[:-1]
    else:
        edge[-1] = True
        edge[:-1] = row[1:] != row[:-1]
    nearest[edge] = -1

    def losing(events: np.ndarray) -> np.ndarray:
        other = dur[nearest[events]]
        return events[other < dur[events]] if step < 0 else events[other <= dur[events]]

    active = losing(np.flatnonzero(~edge))
    while len(active):
        nearest[active] = nearest[nearest[active]]
        active = losing(active[nearest[active] >= 0])
    return nearest


def detail_levels(row: np.ndarray, start_rel_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Level of each event (int8), for events sorted by (row, start); see the module docstring
    (`detail_levels_numpy`): by the C pass (`_lod.c`: a monotonic stack each way, no
    full-size temporary) where it is built and the columns are int64."""
    native = accelerators.get("_lod")
    arrays = (row, start_rel_ns, dur_ns)
    if native is None or any(a.dtype != np.int64 for a in arrays):
        return detail_levels_numpy(row, start_rel_ns, dur_ns)
    level = np.empty(len(row), dtype=np.int8)
    native.levels(*(np.ascontiguousarray(a) for a in arrays), level)
    return level


def detail_levels_numpy(
    row: np.ndarray, start_rel_ns: np.ndarray, dur_ns: np.ndarray
) -> np.ndarray:
    """`detail_levels` by pointer jumping in NumPy.

    Event e represents its bin of 2**m ns unless a beating event (longer, or as long and
    earlier) shares the bin. Bins are contiguous runs, so only the nearest beating events
    before (p) and after (q) matter, and they share e's bin at level m exactly when
    m >= bit_length(start_e XOR start_p). Hence level(e) = min over p, q of that, minus one.
    """
    n = len(row)
    limit = np.full(n, MAX_LEVEL + 1, dtype=np.int8)
    for step in (-1, 1):
        other = _nearest_beating(row, dur_ns, step)
        # Over every event (one without a beating event reads its own start: XOR 0, then
        # set aside), with no masked copies: they cost more than the arithmetic.
        shared = bit_length(np.bitwise_xor(start_rel_ns, start_rel_ns[np.maximum(other, 0)]))
        np.minimum(limit, np.where(other >= 0, shared, MAX_LEVEL + 1), out=limit, casting="unsafe")
    level = np.clip(limit, 1, MAX_LEVEL + 1) - 1
    # An event w long is always shown when w >= the bin width (see docstring).
    by_duration = np.minimum(bit_length(dur_ns) - 1, MAX_LEVEL)
    return np.maximum(level, by_duration).astype(np.int8)


def segment_running_max(values: np.ndarray, seg_starts: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarted at each segment start."""
    out = values.copy()
    if len(values) < 2:
        return out
    drops = np.flatnonzero(values[1:] < values[:-1]) + 1
    if len(drops) == 0:
        return out
    seg_of_drop = unique_many(np.searchsorted(seg_starts, drops, side="right") - 1)
    bounds = np.append(seg_starts, len(values))
    for seg in seg_of_drop.tolist():
        a, b = int(bounds[seg]), int(bounds[seg + 1])
        np.maximum.accumulate(values[a:b], out=out[a:b])
    return out
