"""A loop whose few steps do much more work than the others (decision 500).

A rank that computes 60 extra matmuls in 5 of its 35 steps (a transient straggler, an
evaluation or a checkpoint inside the step) makes those steps 10-20x the others: they hold
most of the time between the first and the last step, so the step event's periods are
neither steady nor the same work for half of that time (`infer._steady`, `infer._same_work`,
both weighed by time), while an event called only in those steps (their extra work's own
top-level op) is steady. Two facts of the trace tell the loop apart:

1. **The same work, and more.** A slow step still holds every event of the loop's common
   step (the forward, the loss, the backward, the optimizer step) and adds its own: the
   periods holding at least the common period's events (`holds_the_common_work`) are the
   loop's. An op in bursts has nothing but itself between two calls of a burst, so its
   common work is itself alone and it stays no step (`infer._same_work` needs more); a
   period holding the common work twice or more is several iterations (an event called
   now and then, a garbage collection), not one slow step.
2. **A phase is no loop.** A candidate each of whose periods holds repeats of another
   candidate, but whose own span holds fewer than half of that one's repeats
   (`phases_of`), is a phase inside the other's loop (the slow steps' own op), not a
   coarser loop: a step event over per-layer ops spans all of their repeats.
"""

from __future__ import annotations

import numpy as np


def holds_the_common_work(names: np.ndarray, position: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Which periods between consecutive ``position`` (indexes into ``names``, a thread's
    top-level event names in time order) hold at least the events of the most common
    period (``held``: `cycle.common_work`'s mask; each name as often), but not all of them
    twice, a mask that includes ``held``."""
    out = held.copy()
    if not held.any():
        return out
    k = int(np.argmax(held))
    kinds, need = np.unique(names[int(position[k]) : int(position[k + 1])], return_counts=True)
    lo, hi = int(position[0]), int(position[-1])
    span = names[lo:hi]
    at = np.minimum(np.searchsorted(kinds, span), len(kinds) - 1)
    inside = kinds[at] == span
    period = np.searchsorted(position, np.arange(lo, hi)[inside], "right") - 1
    n_periods = len(position) - 1
    flat = at[inside] * n_periods + period
    count = np.bincount(flat, minlength=len(kinds) * n_periods).reshape(len(kinds), n_periods)
    # ...but not all of it twice, the repeat's own name aside (once a period by definition):
    # a period holding two iterations' work is several iterations of an event called now
    # and then (a garbage collection), not one slow step
    others = kinds != names[int(position[0])]
    twice = (count[others] >= 2 * need[others, None]).all(axis=0)
    return out | ((count >= need[:, None]).all(axis=0) & ~twice)


def phases_of(starts: list[np.ndarray]) -> np.ndarray:
    """Which of the candidates (each one's sorted ``starts``, all on one thread) are a phase
    of another (rule 2 of the module docstring): each of its periods holds at least one of
    the other's starts, and its span (first to last start) holds fewer than half of them."""
    out = np.zeros(len(starts), dtype=bool)
    for i, mine in enumerate(starts):
        for j, other in enumerate(starts):
            if i == j or len(other) <= len(mine):
                continue
            at = np.searchsorted(other, mine)
            if (np.diff(at) < 1).any():
                continue  # some period of it holds none of the other's repeats
            within = int(np.searchsorted(other, mine[-1], "right") - at[0])
            if 2 * within < len(other):
                out[i] = True
                break
    return out
