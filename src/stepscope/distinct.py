"""``np.unique(values)`` for integer columns, for every layer, without NumPy's hash table.

NumPy 2.3+ answers a plain ``np.unique`` with a hash table whose first call imports
``numpy.ma`` (7-8 ms of CPU, a fiftieth of a 0.2M-event Kineto import + overview), and which
takes about 0.7 s per million distinct int64 values (14x a sort). Here values within a short
range (string ids, line ids, thread codes) are counted per value, the rest sorted.
"""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-D integer array, as ``np.unique(values)`` gives them
    (same dtype)."""
    values = np.asarray(values)
    if not len(values):
        return values[:0].copy()
    countable = values.dtype.kind == "i" or (values.dtype.kind == "u" and values.itemsize < 8)
    if countable:
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * len(values) + 1024:  # a count per value costs less than a sort
            if low >= 0 and high <= 4 * len(values) + 1024:
                return np.flatnonzero(np.bincount(values)).astype(values.dtype, copy=False)
            present = np.flatnonzero(np.bincount(values.astype(np.int64) - low))
            return (present + low).astype(values.dtype, copy=False)
    ordered = np.sort(values)
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]
