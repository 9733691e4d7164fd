"""The per-type time of steps: every instant of a step to the highest type active then.

The sweep behind the step breakdown (`breakdown`) and the "bound by" limits (`limits`): for
each present type t, from the highest down, the union length of the intervals of types >= t
is measured per step; the type's time is the growth of that union.
"""

from __future__ import annotations

import numpy as np

from stepscope import accelerators
from stepscope.distinct import distinct
from stepscope.stats.events import EventType
from stepscope.stats.intervals import merge_sorted

N_TYPES = max(int(t) for t in EventType) // 10 + 1  # column of type t is t // 10


def type_time(
    step: np.ndarray, lo: np.ndarray, hi: np.ndarray, types: np.ndarray, n_steps: int
) -> np.ndarray:
    """(n_steps, N_TYPES) time per type: each instant to the highest type active then.

    ``lo``/``hi`` are already clipped to the step spans; uncovered time is not filled in.
    """
    out = np.zeros((n_steps, N_TYPES), dtype=np.int64)
    keep = hi > lo
    kept = np.flatnonzero(keep)  # one pass over the mask for the four gathers
    step, lo, hi, types = (
        step.take(kept).astype(np.int64),
        lo.take(kept),
        hi.take(kept),
        types.take(kept),
    )
    if not step.size:
        return out
    base = int(lo.min())
    width = int(hi.max()) - base + 1
    if n_steps * width >= 1 << 62:  # too wide for one key: step by step
        for s in distinct(step).tolist():
            m = step == s
            out[s] = type_time(np.zeros(int(m.sum()), np.int64), lo[m], hi[m], types[m], 1)[0]
        return out
    key_lo = step * width + (lo - base)
    key_hi = step * width + (hi - base)
    order = np.argsort(key_lo, kind="stable")
    key_lo, key_hi = key_lo.take(order), key_hi.take(order)
    step, types = step.take(order), types.take(order)
    thresholds = np.array(sorted(distinct(types).tolist(), reverse=True), dtype=np.int64)
    unions = _unions_by_threshold(key_lo, key_hi, step, types, thresholds, n_steps)
    covered = np.zeros(n_steps, dtype=np.int64)
    for t, union in zip(thresholds.tolist(), unions, strict=True):
        out[:, t // 10] = union - covered
        covered = union
    return out


def _unions_by_threshold(
    key_lo: np.ndarray,
    key_hi: np.ndarray,
    step: np.ndarray,
    types: np.ndarray,
    thresholds: np.ndarray,
    n_steps: int,
) -> np.ndarray:
    """(len(thresholds), n_steps): per threshold, the union length per step of the intervals
    (sorted by ``key_lo``) of that type or higher."""
    native = accelerators.get("_nesting")
    if native is not None and len(thresholds):
        # one pass for every threshold (decision 443), the sums as the bincounts below make them
        sums = np.zeros((len(thresholds), n_steps), dtype=np.float64)
        columns = [np.ascontiguousarray(a, np.int64) for a in (key_lo, key_hi, step, types)]
        if native.type_unions(*columns, np.ascontiguousarray(thresholds, np.int64), sums):
            return sums.round().astype(np.int64)
    out = np.zeros((len(thresholds), n_steps), dtype=np.int64)
    for j, t in enumerate(thresholds.tolist()):
        m = types >= t
        if np.count_nonzero(m) == len(m):  # every interval (the lowest thresholds): no copies
            heads, u_lo, u_hi = merge_sorted(key_lo, key_hi)
            first = heads
        else:  # sorted by key_lo already; the steps of the runs' first intervals only
            index = np.flatnonzero(m)
            heads, u_lo, u_hi = merge_sorted(key_lo.take(index), key_hi.take(index))
            first = index.take(heads)
        out[j] = np.bincount(step.take(first), weights=u_hi - u_lo, minlength=n_steps).round()
    return out
