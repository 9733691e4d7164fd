"""The order of a line's events that every layer uses: by start, the longer first at equal
starts, then as given (parents before their children)."""

from __future__ import annotations

import numpy as np


def start_order(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``np.lexsort((-length, start))`` (``length``: durations, or end times), computed for
    columns that are nearly in that order already, as a trace's lines are (a profile's line
    exactly; a Kineto thread's events off by a few): NumPy's stable sort merges the runs of
    the starts (0.2 ms for 70k events where lexsort's two sorts take 3 ms), and only the
    events sharing a start with a neighbour are sorted again by length."""
    order = np.argsort(start, kind="stable")
    ordered = start.take(order)
    tie = ordered[1:] == ordered[:-1]
    if not tie.any():
        return order
    shared = np.zeros(len(order), dtype=bool)  # events whose start another event has
    shared[1:] |= tie
    shared[:-1] |= tie
    at = np.flatnonzero(shared)
    events = order[at]
    # Ties are contiguous in ``ordered``: sorting them by (start, -length) keeps each group
    # in place, longest first, and equal lengths as the stable sort left them (as given).
    order[at] = events[np.lexsort((-length[events], ordered[at]))]
    return order
