"""Which event of a thread encloses another: the op around a kernel launch or an allocation.

Events of one line nest like a call stack. For a few query events, the innermost enclosing
"candidate" event (an op) is found with arrays over the line's candidates and queries only
(lines with millions of other events cost nothing but a boolean mask): each query's search
in the candidates' starts, then a climb up the candidates' nesting (`stats.nesting`).
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.event_order import start_order
from stepscope.model import Profile
from stepscope.stats.nesting import nesting_parents

# Levels climbed one at a time before the jumps by powers of two take over (ops nest a few
# levels deep; a crafted trace may nest thousands).
_CLIMBS = 8


def innermost_enclosing(
    profile: Profile, queries: np.ndarray, candidates: np.ndarray
) -> np.ndarray:
    """For each event in ``queries`` (event indices), the innermost event of ``candidates``
    (a boolean mask over all events) on the same line whose span contains the query's span;
    -1 where none does. A query is never its own encloser.
    """
    out = np.full(len(queries), -1, dtype=np.int64)
    if len(queries) == 0:
        return out
    starts = profile.start_ns
    ends = profile.end_ns
    query_lines = profile.line[queries]
    for line_index in distinct(query_lines).tolist():
        line = profile.lines[line_index]
        lo, hi = line.first_event, line.first_event + line.event_count
        cand = np.flatnonzero(candidates[lo:hi]) + lo
        if len(cand) == 0:
            continue
        positions = np.flatnonzero(query_lines == line_index)
        query_events = queries[positions]
        _scan_line(starts, ends, cand, query_events, positions, out)
    return out


def _scan_line(
    starts: np.ndarray,
    ends: np.ndarray,
    cand: np.ndarray,
    query_events: np.ndarray,
    positions: np.ndarray,
    out: np.ndarray,
) -> None:
    # Candidates in (start, longest first) order. A candidate contains a query when it starts
    # at or before the query and ends at or after it; the answer is the last such candidate
    # in that order (never the query itself). The candidates starting at or before a query
    # are a prefix of the order; the last of them reaching the query's end is the prefix's
    # last candidate or one of its nesting ancestors (`nesting_parents`: each candidate's
    # parent is the last earlier one ending at or after it), whose ends only grow upwards.
    cand = cand.take(start_order(starts.take(cand), ends.take(cand)))
    c_start, c_end = starts.take(cand), ends.take(cand)
    parent = nesting_parents(np.zeros(len(cand), dtype=np.int32), c_start, c_end)
    q_end = ends[query_events]
    at = np.searchsorted(c_start, starts[query_events], "right") - 1
    at = _first_reaching(parent, c_end, at, q_end)
    # The query itself (when it is a candidate) ends exactly at its end: its parent is the
    # next candidate that reaches it.
    found = np.flatnonzero(at >= 0)
    mine = found[cand[at[found]] == query_events[found]]
    at[mine] = parent[at[mine]]
    has = at >= 0
    out[positions[has]] = cand[at[has]]


def _first_reaching(
    parent: np.ndarray, c_end: np.ndarray, at: np.ndarray, q_end: np.ndarray
) -> np.ndarray:
    """For positions ``at`` (-1: none), the first of each and its ancestors whose end is at or
    after ``q_end``; -1 where none is."""
    at = at.copy()
    pending = np.flatnonzero(at >= 0)
    pending = pending[c_end[at[pending]] < q_end[pending]]
    # A launch's op is a few levels up at most: climb a level at a time for a while ...
    for _ in range(_CLIMBS):
        if not pending.size:
            return at
        up = parent[at[pending]]
        at[pending] = up
        pending = pending[up >= 0]
        pending = pending[c_end[at[pending]] < q_end[pending]]
    if not pending.size:
        return at
    # ... then, for deep stacks, by powers of two: every ancestor 2**k levels up, then from
    # the highest jump down, jump while the ancestor still ends before the query's end (the
    # ends grow upwards); the answer is the parent of the last ancestor that does.
    jumps = [parent]
    while True:
        last = jumps[-1]
        higher = np.where(last >= 0, last[np.maximum(last, 0)], -1)
        if not (higher >= 0).any():
            break
        jumps.append(higher)
    node, need = at[pending], q_end[pending]
    for jump in reversed(jumps):
        up = jump[node]
        move = up >= 0
        move[move] = c_end[up[move]] < need[move]
        node[move] = up[move]
    at[pending] = parent[node]
    return at
