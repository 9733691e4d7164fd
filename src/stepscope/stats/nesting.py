"""Nesting of events on a line, vectorized: parent, depth and self time.

An event's parent is the innermost event of the same line that contains it
(``parent.start <= start`` and ``end <= parent.end``), as XProf's event forest and op stack
define it. Events are sorted by (line, start, longest first); the parent of event k is then
found among k-1 and its ancestors by pointer jumping: every round, each unresolved event
either finds its candidate contains it or jumps to the candidate's own candidate. Skipped
candidates end before the event starts, so no parent is missed, and the jumps double, so a
line of any length resolves in O(log n) rounds of NumPy work. Properly nested lines (the
usual case) take a faster path: depth from sorted start/end counts, parent = the last
earlier event one level up.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from stepscope import accelerators
from stepscope.distinct import distinct, member
from stepscope.records import record


def nesting_parents(line: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """For parallel arrays of events: index of each one's parent (same arrays), -1 for none."""
    n = len(start_ns)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    native = _native_nesting(line, start_ns, end_ns)
    if native is not None:
        return native[0]
    order = _sorted_order(line, start_ns, end_ns)
    if order is None:  # already in order (the usual case): no copies
        return _parents_numpy(line, start_ns, end_ns)
    lines, starts, ends = line[order], start_ns[order], end_ns[order]
    parent = _parents_numpy(lines, starts, ends)
    out = np.full(n, -1, dtype=np.int64)
    has = parent >= 0
    out[order[has]] = order[parent[has]]
    return out


def _native_nesting(
    line: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Parents and depths from the C pass (`stats/_nesting.c`: one stack walk, the same
    parents as the NumPy path below), or None where it is not built, switched off, or the
    columns are not of its types (int32 lines, int64 times)."""
    native = accelerators.get("_nesting")
    if native is None or line.dtype != np.int32:
        return None
    if start_ns.dtype != np.int64 or end_ns.dtype != np.int64:
        return None
    line, start_ns, end_ns = (np.ascontiguousarray(a) for a in (line, start_ns, end_ns))
    n = len(start_ns)
    parent = np.empty(n, dtype=np.int64)
    depth = np.empty(n, dtype=np.int64)
    if native.parents(line, start_ns, end_ns, parent, depth):
        return parent, depth
    # not in (line, start, longest first) order: the C pass over a sorted copy
    order = np.lexsort((np.arange(n), -end_ns, start_ns, line))
    native.parents(line[order], start_ns[order], end_ns[order], parent, depth)
    out_parent = np.full(n, -1, dtype=np.int64)
    has = parent >= 0
    out_parent[order[has]] = order[parent[has]]
    out_depth = np.empty(n, dtype=np.int64)
    out_depth[order] = depth
    return out_parent, out_depth


def _parents_numpy(lines: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`nesting_parents` of sorted events, in sorted positions, with NumPy only."""
    n = len(starts)
    parent = np.full(n, -1, dtype=np.int64)
    if not _any_nesting(lines, starts, ends):  # flat lines (GPU streams, op sequences)
        return parent
    done = np.zeros(n, dtype=bool)
    # Zero-length events never contain a longer one, so the others nest without them.
    positive = np.flatnonzero(ends > starts)
    if positive.size:
        # Lines where an event ends inside the next one cannot nest properly: straight to
        # the jumping (a Kineto CPU thread with overlapping async ops is most of a trace).
        crossed = _crossed_lines(lines[positive], starts[positive], ends[positive])
        fits = positive
        if crossed.size:
            fits = positive[~member(lines[positive], crossed)]
        bad_lines = crossed
        if fits.size:
            found, good = _parents_by_depth(lines[fits], starts[fits], ends[fits])
            has = found >= 0
            parent[fits[has]] = fits[found[has]]
            done[fits[good]] = True
            bad_lines = np.concatenate((crossed, distinct(lines[fits[~good]])))
        if bad_lines.size:  # lines with partly overlapping events: all their events by jumping
            subset = np.flatnonzero(member(lines, bad_lines))
            sub_parent = _parents_by_jumping(lines[subset], ends[subset])
            has = sub_parent >= 0
            parent[subset] = -1
            parent[subset[has]] = subset[sub_parent[has]]
            done[subset] = True
    _resolve_by_jumping(lines, ends, parent, done)
    return parent


def _crossed_lines(lines: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The distinct lines where a sorted event starts inside the one before it and ends after
    it (a partial overlap: such a line does not nest properly)."""
    if len(starts) < 2:
        return lines[:0].copy()
    crossing = (lines[1:] == lines[:-1]) & (starts[1:] < ends[:-1]) & (ends[1:] > ends[:-1])
    return distinct(lines[1:][crossing])


def _sorted_order(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """Order by (line, start, longest first, index); None when the events are in it already
    (traces usually come in it)."""
    n = len(start)
    if n > 1:
        same_line = line[1:] == line[:-1]
        later = (start[1:] > start[:-1]) | ((start[1:] == start[:-1]) & (end[1:] <= end[:-1]))
        if np.all((line[1:] > line[:-1]) | (same_line & later)):
            return None
    elif n == 1:
        return None
    return np.lexsort((np.arange(n), -end, start, line))


def _any_nesting(lines: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether any sorted event starts inside an earlier event of its line."""
    if len(starts) < 2:
        return False
    first = np.ones(len(lines), dtype=bool)
    first[1:] = lines[1:] != lines[:-1]
    # an event starting inside the one before it: the common answer, found without the
    # running reach below
    if bool((~first[1:] & (starts[1:] < ends[:-1])).any()):
        return True
    rank = np.cumsum(first) - 1
    base = int(starts.min())
    span = int(ends.max()) - base + 1
    if int(rank[-1]) * span >= 1 << 62:
        return True  # cannot tell cheaply: take the general path
    offset = rank * span - base
    reach = np.maximum.accumulate(ends + offset)[:-1]  # per line: keys of lines never mix
    key = starts[1:] + offset[1:]
    zero = ends[1:] == starts[1:]
    inside = (key < reach) | (zero & (key == reach))
    return bool((inside & ~first[1:]).any())


def _parents_by_depth(
    lines: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Parents of sorted positive-length events, and per event whether its line nests properly.

    Depth = events earlier on the line minus those already closed; the parent is the last
    earlier event one level up. Lines with partly overlapping events fail the containment
    check; their events come back with ``good`` False.
    """
    n = len(starts)
    idx = np.arange(n, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = lines[1:] != lines[:-1]
    line_lo = np.maximum.accumulate(np.where(first, idx, 0))
    line_key = np.cumsum(first) - 1
    base = int(starts.min())
    span = int(ends.max()) - base + 1
    parent = np.full(n, -1, dtype=np.int64)
    if int(line_key[-1]) * span >= 1 << 62:  # clock range too wide for one key: line by line
        return parent, np.zeros(n, dtype=bool)
    line_base = line_key * span
    end_keys = np.sort(line_base + (ends - base), kind="stable")  # nearly sorted already
    # ends at or before the start, less those of earlier lines (as many as their events)
    closed = np.searchsorted(end_keys, line_base + (starts - base), "right") - line_lo
    depth = (idx - line_lo) - closed
    # The parent is the last earlier event one level up: depth rises by at most one per
    # event, so that event is on the same line (checked below all the same). Events ordered
    # by depth alone (a radix sort of small integers, stable: positions stay in order).
    small = depth.astype(np.int16) if int(depth.max()) < 1 << 15 else depth
    by_depth = np.argsort(small, kind="stable")
    nested = np.flatnonzero(depth > 0)
    query = (depth[nested] - 1) * n + nested
    found = np.searchsorted(depth[by_depth] * n + by_depth, query, "right") - 1
    cand = by_depth[np.maximum(found, 0)]
    ok = (found >= 0) & (depth[cand] == depth[nested] - 1) & (ends[cand] >= ends[nested])
    ok &= line_key[cand] == line_key[nested]
    parent[nested[ok]] = cand[ok]
    good = np.ones(n, dtype=bool)
    broken = distinct(line_key[nested[~ok]])
    if broken.size:
        good = ~np.isin(line_key, broken)
        parent[~good] = -1
    return parent, good


def _resolve_by_jumping(
    lines: np.ndarray, ends: np.ndarray, parent: np.ndarray, done: np.ndarray
) -> None:
    """Resolves the events not ``done`` in place: the innermost of the previous event and its
    ancestors that still contains them (XProf's op-stack rule)."""
    n = len(ends)
    cand = np.arange(-1, n - 1, dtype=np.int64)
    if n > 1:
        cand[1:][lines[1:] != lines[:-1]] = -1
    done |= cand < 0
    active = np.flatnonzero(~done)
    while active.size:
        c = cand[active]
        contains = ends[c] >= ends[active]
        hit = active[contains]
        parent[hit] = c[contains]
        done[hit] = True
        miss = active[~contains]
        cm = c[~contains]
        nxt = np.where(done[cm], parent[cm], cand[cm])
        cand[miss] = nxt
        is_root = nxt < 0
        done[miss[is_root]] = True
        active = miss[~is_root]


def _parents_by_jumping(lines: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Parents of sorted events by pointer jumping (any overlap pattern)."""
    parent = np.full(len(ends), -1, dtype=np.int64)
    _resolve_by_jumping(lines, ends, parent, np.zeros(len(ends), dtype=bool))
    return parent


def depths(parent: np.ndarray) -> np.ndarray:
    """Nesting depth of each event (0 for top level), by pointer doubling."""
    depth = (parent >= 0).astype(np.int64)
    anc = parent.copy()
    live = np.flatnonzero(anc >= 0)
    while live.size:
        up = anc[live]
        has_up = anc[up] >= 0
        live = live[has_up]
        up = up[has_up]
        depth[live] += depth[up]
        anc[live] = anc[up]
    return depth


def events_self_time(
    events: np.ndarray, line: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray
) -> np.ndarray:
    """Self time of ``events`` (indices into the event columns), nested among themselves:
    `self_time` over `nesting_parents` of the gathered columns."""
    start, end = start_ns[events], end_ns[events]
    return self_time(end - start, nesting_parents(line[events], start, end))


def self_time(dur_ns: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Duration minus the durations of direct children (XProf's self time)."""
    has = parent >= 0
    children = np.bincount(parent[has], weights=dur_ns[has], minlength=len(dur_ns))
    return dur_ns - children.astype(np.int64)


@record
class Forest:
    """Nesting of a set of events: each one's parent and depth."""

    parent: np.ndarray  # int64, -1 for top-level events
    depth: np.ndarray  # int64

    @classmethod
    def build(cls, line: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray) -> Forest:
        native = _native_nesting(line, start_ns, end_ns) if len(start_ns) else None
        if native is not None:
            return cls(*native)
        parent = nesting_parents(line, start_ns, end_ns)
        return cls(parent, depths(parent))

    @cached_property
    def levels(self) -> tuple[np.ndarray, ...]:
        """levels[d] = positions of depth d (d >= 1), each ascending."""
        depth = self.depth
        if len(depth) == 0:
            return ()
        deepest = int(depth.max())
        # a stable radix sort for small depths (the usual case), a merge sort otherwise
        order = np.argsort(depth.astype(np.int16) if deepest < 1 << 15 else depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(1, deepest + 2))
        return tuple(order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1))

    def push_down_min(self, values: np.ndarray) -> None:
        """In place: each value becomes the minimum over itself and its ancestors."""
        parent = self.parent
        for level in self.levels:
            if level.size:
                values[level] = np.minimum(values[level], values[parent[level]])

    def push_down_min_at(self, index: np.ndarray, values: np.ndarray) -> None:
        """`push_down_min` of ``values[index]`` (int64, ``index`` distinct), in place in
        ``values``: one C pass when every parent comes before its children (events given in
        their nesting order, as a profile's lines hold them), else level by level."""
        native = accelerators.get("_nesting")
        if (
            native is not None
            and values.dtype == np.int64
            and values.flags.c_contiguous
            and native.push_down_min(
                np.ascontiguousarray(index, dtype=np.int64), self.parent, values
            )
        ):
            return
        sub = values[index]
        self.push_down_min(sub)
        values[index] = sub
