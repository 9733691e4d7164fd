"""XProf's op stack, one event at a time: the reference the nesting code is checked against."""

from __future__ import annotations

import numpy as np


def stack_parents(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each event's parent: the innermost earlier event of its line (by start, longest first)
    still open at its end; -1 for none."""
    out = np.full(len(start), -1)
    order = sorted(range(len(start)), key=lambda i: (line[i], start[i], -end[i], i))
    stack: list[int] = []
    current = None
    for i in order:
        if line[i] != current:
            stack, current = [], line[i]
        while stack and end[stack[-1]] < end[i]:
            stack.pop()
        out[i] = stack[-1] if stack else -1
        stack.append(i)
    return out


def stack_enclosers(
    starts: np.ndarray, ends: np.ndarray, cand: np.ndarray, queries: np.ndarray
) -> list[int]:
    """For each query (an event index), the innermost candidate event containing it, found by
    walking the line once with a stack of the open candidates (stats.enclosing's pass before
    it worked on arrays); -1 for none, never the query itself."""
    order = sorted(cand.tolist(), key=lambda i: (starts[i], -ends[i]))
    out = [-1] * len(queries)
    stack: list[int] = []
    next_cand = 0
    for qpos in sorted(range(len(queries)), key=lambda k: starts[queries[k]]):
        q = int(queries[qpos])
        qs, qe = starts[q], ends[q]
        while next_cand < len(order) and starts[order[next_cand]] <= qs:
            c = order[next_cand]
            while stack and ends[stack[-1]] <= starts[c] and ends[stack[-1]] < ends[c]:
                stack.pop()
            stack.append(c)
            next_cand += 1
        while stack and ends[stack[-1]] < qs:
            stack.pop()
        for c in reversed(stack):
            if ends[c] >= qe and c != q:
                out[qpos] = c
                break
    return out
