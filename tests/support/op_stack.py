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
