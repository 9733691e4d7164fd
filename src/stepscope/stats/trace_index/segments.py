"""Vectorized helpers for arrays cut into sorted segments (CSR layouts).

The trace index keeps millions of events as one array cut into thousands of segments, each
sorted by time. Answering a window means one binary search per segment; a Python loop over
segments would cost more than the searches themselves, so the searches run side by side as
NumPy vector operations (one bisection step for all segments at once).
"""

from __future__ import annotations

import numpy as np

# Shared with the columnar protobuf writer (xspace), which the capture layer uses too.
from stepscope.xspace.pb_columns import ranges_to_indices as ranges_to_indices


def segmented_search(
    values: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    keys: np.ndarray,
    side: str = "left",
    through: np.ndarray | None = None,
) -> np.ndarray:
    """For each segment ``values[lo[k]:hi[k]]`` (sorted), the insertion point of ``keys[k]``.

    Like ``np.searchsorted`` per segment, with absolute positions. With ``through``, the
    segments are of ``values[through]`` (searched without building that array).
    """
    left = np.asarray(lo, dtype=np.int64).copy()
    right = np.asarray(hi, dtype=np.int64).copy()
    keys = np.asarray(keys)
    active = np.flatnonzero(left < right)
    while len(active):
        a, b = left[active], right[active]
        mid = (a + b) >> 1
        probe = values[mid] if through is None else values[through[mid]]
        k = keys[active]
        go_right = probe < k if side == "left" else probe <= k
        left[active] = np.where(go_right, mid + 1, a)
        right[active] = np.where(go_right, b, mid)
        active = active[left[active] < right[active]]
    return left


def group_starts(*keys: np.ndarray) -> np.ndarray:
    """Start positions of the runs of equal consecutive key tuples (keys already grouped)."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(change)


def first_max_per_group(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Position of the first maximum of ``values`` within each group (groups given by starts)."""
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    group_max = np.maximum.reduceat(values, starts)
    sizes = np.diff(np.append(starts, len(values)))
    hits = np.flatnonzero(values == np.repeat(group_max, sizes))
    group_of_hit = np.searchsorted(starts, hits, side="right") - 1
    first = np.ones(len(hits), dtype=bool)
    first[1:] = group_of_hit[1:] != group_of_hit[:-1]
    return hits[first]


def bit_length(values: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of non-negative int64 values, vectorized (exact below 2**53)."""
    values = np.asarray(values, dtype=np.int64)
    exponent = np.frexp(values.astype(np.float64))[1]  # of |x|; 0 for 0
    return np.where(values > 0, exponent, 0).astype(np.int64)


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``, several times faster for non-negative integer keys.

    NumPy radix-sorts 16-bit keys in linear time but merge-sorts wider ones; keys below 2**48
    are sorted as up to three 16-bit digits, least significant first (each pass is stable).
    """
    keys = np.asarray(keys)
    if len(keys) == 0 or keys.dtype.kind not in "iu" or int(keys.min()) < 0:
        return np.argsort(keys, kind="stable")
    top = int(keys.max())
    if top >= 1 << 48:
        return np.argsort(keys, kind="stable")
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while top >> shift:
        digit = ((keys[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order
