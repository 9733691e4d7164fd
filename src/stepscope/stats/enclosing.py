"""Which event of a thread encloses another: the op around a kernel launch or an allocation.

Events of one line nest like a call stack. Finding, for a few query events, the innermost
enclosing "candidate" event (an op) is one pass over the line with a stack; the pass runs on
plain Python lists of the line's candidates and queries only, so lines with millions of
other events cost nothing but a boolean mask.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.event_order import start_order
from stepscope.model import Profile


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
    # Candidates sorted by (start, longest first) so parents come before their children;
    # queries sorted by start. Merge the two streams keeping a stack of open candidates.
    cand_order = start_order(starts[cand], ends[cand])
    cand = cand[cand_order]
    q_order = np.argsort(starts[query_events], kind="stable")
    queries = query_events[q_order]
    c_start = starts[cand].tolist()
    c_end = ends[cand].tolist()
    c_id = cand.tolist()
    q_start = starts[queries].tolist()
    q_end = ends[queries].tolist()
    q_id = queries.tolist()
    q_pos = positions[q_order].tolist()
    stack_end: list[int] = []
    stack_id: list[int] = []
    next_cand = 0
    n_cand = len(c_id)
    for qs, qe, qid, qpos in zip(q_start, q_end, q_id, q_pos, strict=True):
        while next_cand < n_cand and c_start[next_cand] <= qs:
            cs = c_start[next_cand]
            while stack_end and stack_end[-1] <= cs and stack_end[-1] < c_end[next_cand]:
                stack_end.pop()
                stack_id.pop()
            stack_end.append(c_end[next_cand])
            stack_id.append(c_id[next_cand])
            next_cand += 1
        # Candidates that ended before this query starts cannot hold any later query either.
        while stack_end and stack_end[-1] < qs:
            stack_end.pop()
            stack_id.pop()
        # Innermost open candidate that also covers the query's end (queries may overlap one
        # another, so those that do not are kept for later queries); never the query itself.
        depth = len(stack_id) - 1
        while depth >= 0 and (stack_end[depth] < qe or stack_id[depth] == qid):
            depth -= 1
        if depth >= 0:
            out[qpos] = stack_id[depth]
