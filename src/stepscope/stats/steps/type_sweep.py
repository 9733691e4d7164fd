"""The per-type time of steps: every instant of a step to the highest type active then.

The sweep behind the step breakdown (`breakdown`) and the "bound by" limits (`limits`): for
each present type t, from the highest down, the union length of the intervals of types >= t
is measured per step; the type's time is the growth of that union. In C (`_sweeps`) over the
columns in (step, start) order; the NumPy merge is the fallback and the test oracle.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.stats import native
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
    if native.sweeps is not None and len(step):
        # No filtered or sorted copies of the columns: C takes them in key order (peak
        # memory of the whole analysis is here at 5M events).
        fast = _fast_type_time(step, lo, hi, types, n_steps, out)
        if fast is not None:
            return fast
    keep = hi > lo
    step, lo, hi, types = step[keep].astype(np.int64), lo[keep], hi[keep], types[keep]
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
    key_lo, key_hi, step, types = key_lo[order], key_hi[order], step[order], types[order]
    thresholds = np.array(sorted(distinct(types).tolist(), reverse=True), dtype=np.int64)
    unions = _unions_by_threshold(key_lo, key_hi, step, types, thresholds, n_steps)
    covered = np.zeros(n_steps, dtype=np.int64)
    for t, union in zip(thresholds.tolist(), unions, strict=True):
        out[:, t // 10] = union - covered
        covered = union
    return out


def _fast_type_time(
    step: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    types: np.ndarray,
    n_steps: int,
    out: np.ndarray,
) -> np.ndarray | None:
    """`type_time` with the C sweep over the columns in (step, lo) order (their stretches
    merged as read, else sorted); None when a sort's keys would not fit in int64 (the caller
    goes step by step)."""
    assert native.sweeps is not None
    # The types present, by counting (a hash of every pair cost 0.14 s at 5M events). Types
    # seen only on empty intervals add a threshold whose column comes out 0, as without it.
    present = distinct(types)
    thresholds = present[::-1].astype(np.int64)  # highest first, a contiguous copy
    # the types in their own int16 where the build takes them (no 8 B/pair copy)
    narrow = getattr(native.sweeps, "TYPES_INT16", 0) and types.dtype == np.int16
    int32_steps = getattr(native.sweeps, "STEPS_INT32", 0) and step.dtype == np.int32
    columns = [np.ascontiguousarray(step, np.int32 if int32_steps else np.int64)]
    columns += [np.ascontiguousarray(c, np.int64) for c in (lo, hi)]
    columns.append(np.ascontiguousarray(types, np.int16 if narrow else np.int64))
    unions = np.zeros((len(thresholds), n_steps), dtype=np.int64)
    # The pairs come in a few stretches of (step, start) order, one per thread: merged as
    # read, with no sort key or order beside the columns (the peak of a cold analysis: 20 B
    # per pair); only pairs in many stretches are sorted.
    if not native.sweeps.step_type_unions_in_runs(*columns, thresholds, unions):
        order = _step_start_order(step, lo, hi, n_steps)
        if order is None:
            return None
        native.sweeps.step_type_unions(*columns, order, thresholds, unions)
    covered = np.zeros(n_steps, dtype=np.int64)
    for t, union in zip(thresholds.tolist(), unions, strict=True):
        out[:, t // 10] = union - covered
        covered = union
    return out


def _step_start_order(
    step: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_steps: int
) -> np.ndarray | None:
    """The pairs' (step, lo) order, one stable sort of a key; None when the key would not fit
    in int64."""
    keep = hi > lo
    if not keep.any():  # the sweep skips empty intervals: any order
        return np.arange(len(step))
    big = np.iinfo(np.int64).max
    base = int(np.min(lo, where=keep, initial=big))
    width = int(np.max(hi, where=keep, initial=-big)) - base + 1
    if n_steps * width >= 1 << 62:
        return None
    del keep
    key = step.astype(np.int64)  # then in place: one 8 B/pair array
    key *= width
    key += lo
    key -= base
    return np.argsort(key, kind="stable")  # timsort: the pairs come in runs of time order


def _unions_by_threshold(
    key_lo: np.ndarray,
    key_hi: np.ndarray,
    step: np.ndarray,
    types: np.ndarray,
    thresholds: np.ndarray,
    n_steps: int,
) -> np.ndarray:
    """(len(thresholds), n_steps): per threshold, the union length per step of the intervals
    (sorted by ``key_lo``) of that type or higher; the NumPy version of `_fast_type_time`."""
    out = np.zeros((len(thresholds), n_steps), dtype=np.int64)
    for j, t in enumerate(thresholds.tolist()):
        m = types >= t
        heads, u_lo, u_hi = merge_sorted(key_lo[m], key_hi[m])  # sorted by key_lo already
        out[j] = np.bincount(step[m][heads], weights=u_hi - u_lo, minlength=n_steps).round()
    return out
