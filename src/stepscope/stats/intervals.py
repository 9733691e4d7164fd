"""Interval arithmetic on columns of [start, end) nanosecond intervals.

Busy time, device utilization, step breakdowns and diagnostics all need the union of many
possibly overlapping intervals; it is computed here, once, with vectorized NumPy: after a
sort by start, an interval opens a new merged run when it starts after the running maximum
of the ends before it.
"""

from __future__ import annotations

import numpy as np


def merge_sorted(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For intervals already sorted by start: (heads, lo, hi) of their union, where ``heads``
    indexes the first interval of each merged run and [lo, hi) are the merged intervals."""
    if len(starts) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty.copy()
    reach = np.maximum.accumulate(ends)
    new = np.ones(len(starts), dtype=bool)
    np.greater(starts[1:], reach[:-1], out=new[1:])
    heads = np.flatnonzero(new)
    # each run's last interval: the one before the next run's head (no np.r_: 44 calls of
    # the overview), then the last; the gathers are new arrays, so astype copies nothing
    tails = np.empty_like(heads)
    np.subtract(heads[1:], 1, out=tails[:-1])
    tails[-1] = len(starts) - 1
    lo, hi = starts.take(heads), reach.take(tails)
    return heads, lo.astype(np.int64, copy=False), hi.astype(np.int64, copy=False)


def union_in_order(
    lo: np.ndarray, hi: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The union of the non-empty intervals [lo, hi), ``order`` sorting them by ``lo``, as
    sorted disjoint (lo, hi) runs: `merge_sorted` of the sorted non-empty intervals."""
    s_lo, s_hi = lo[order], hi[order]
    keep = s_hi > s_lo
    _, u_lo, u_hi = merge_sorted(s_lo[keep], s_hi[keep])
    return u_lo, u_hi


def union_of(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`union_in_order` of intervals in any order."""
    return union_in_order(lo, hi, np.argsort(lo, kind="stable"))


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint (lo, hi) arrays."""
    order = np.argsort(starts, kind="stable")
    _, lo, hi = merge_sorted(starts.take(order), ends.take(order))
    return lo, hi


def union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of intervals."""
    lo, hi = merge(starts, ends)
    return int((hi - lo).sum())


def overlap_with(
    starts: np.ndarray, ends: np.ndarray, m_lo: np.ndarray, m_hi: np.ndarray
) -> np.ndarray:
    """Per interval, its overlap with a set of disjoint sorted intervals (m_lo, m_hi)."""
    if len(m_lo) == 0 or len(starts) == 0:
        return np.zeros(len(starts), dtype=np.int64)
    cum = np.r_[0, np.cumsum(m_hi - m_lo)]

    def covered_before(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(m_lo, t, "right")  # intervals starting at or before t
        full = cum[k]
        last = np.maximum(k - 1, 0)
        excess = np.where(k > 0, np.maximum(m_hi[last] - t, 0), 0)
        return full - excess

    return (covered_before(ends) - covered_before(starts)).astype(np.int64)


def intersect_sets(
    a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of two sets of sorted, disjoint intervals, sorted and disjoint."""
    if not len(a_lo) or not len(b_lo):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    # each a-interval against the b-intervals it can touch (searchsorted bounds)
    first = np.searchsorted(b_hi, a_lo, "right")
    last = np.searchsorted(b_lo, a_hi, "left")
    counts = np.maximum(last - first, 0)
    a = np.repeat(np.arange(len(a_lo)), counts)
    b = np.repeat(first - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(int(counts.sum()))
    lo = np.maximum(a_lo[a], b_lo[b]).astype(np.int64)
    hi = np.minimum(a_hi[a], b_hi[b]).astype(np.int64)
    keep = hi > lo
    return lo[keep], hi[keep]


def subtract_sets(
    a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the sorted, disjoint intervals ``a`` outside the sorted, disjoint ``b``."""
    if not len(a_lo) or not len(b_lo):
        return np.asarray(a_lo, np.int64).copy(), np.asarray(a_hi, np.int64).copy()
    # the complement of b, bounded by a's extent, intersected with a
    lo_bound = min(int(a_lo[0]), int(b_lo[0]))
    hi_bound = max(int(a_hi[-1]), int(b_hi[-1]))
    c_lo = np.r_[lo_bound, b_hi].astype(np.int64)
    c_hi = np.r_[b_lo, hi_bound].astype(np.int64)
    keep = c_hi > c_lo
    return intersect_sets(a_lo, a_hi, c_lo[keep], c_hi[keep])
