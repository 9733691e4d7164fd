"""Plane-local metadata ids -> profile-wide rows or names, for millions of events and stats.

Writers number metadata densely (1..number of entries), so a table indexed by id answers
with one gather, about 10x faster than a binary search per value; ids too sparse (or
negative) for a table about the size of the metadata take the binary search.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

DENSE_IDS_SLACK = 1 << 16  # a table may be this much larger than 4x the metadata
CHUNK = 1 << 20  # values per step: keeps the temporaries small on multi-million-row files


def lookup(
    values: np.ndarray,
    sorted_ids: np.ndarray,
    targets: np.ndarray,
    missing: int,
    chunk: int = CHUNK,
) -> np.ndarray:
    """``targets[i]`` (int32) for each value equal to ``sorted_ids[i]``, ``missing`` for the
    others. ``sorted_ids`` is sorted and distinct."""
    out = np.empty(len(values), dtype=np.int32)
    if len(sorted_ids) == 0:
        out[:] = missing
        return out
    table = dense_table(sorted_ids, targets, missing)
    for lo in range(0, len(values), chunk):
        part = values[lo : lo + chunk]
        if table is not None:
            # Unsigned view: negative ids land past the table, on its sentinel (last slot).
            index = np.minimum(part.view(np.uint64), np.uint64(len(table) - 1))
            out[lo : lo + chunk] = table.take(index.view(np.int64))
            continue
        pos = np.minimum(np.searchsorted(sorted_ids, part), len(sorted_ids) - 1)
        out[lo : lo + chunk] = np.where(sorted_ids[pos] == part, targets[pos], missing)
    return out


def dense_table(sorted_ids: np.ndarray, targets: np.ndarray, missing: int) -> np.ndarray | None:
    """``targets`` by id, ``missing`` where no id and in a sentinel slot last; None when the
    ids are too sparse (or negative) for a table."""
    if len(sorted_ids) == 0 or sorted_ids[0] < 0:
        return None
    top = int(sorted_ids[-1])
    if top >= 4 * len(sorted_ids) + DENSE_IDS_SLACK:
        return None
    table = np.full(top + 2, missing, dtype=np.int32)
    table[sorted_ids] = targets
    return table


def map_ids(
    values: np.ndarray,
    sorted_ids: np.ndarray,
    base: int,
    on_missing: Callable[[int], int] | None,
    chunk: int = CHUNK,
) -> np.ndarray:
    """Row of each value in ``sorted_ids`` (+ base); -1 where it is missing, or the row
    ``on_missing(id)`` returns (called once per distinct missing id, in id order)."""
    rows = lookup(
        values, sorted_ids, np.arange(base, base + len(sorted_ids), dtype=np.int32), -1, chunk
    )
    if on_missing is not None:
        absent = np.flatnonzero(rows == -1)
        if len(absent):
            # One new row per distinct missing id, assigned in one vectorized step (a loop
            # over the ids with a mask each was quadratic on 100,000s of missing ids).
            missing, inverse = np.unique(values[absent], return_inverse=True)
            new_rows = np.array([on_missing(m) for m in missing.tolist()], dtype=np.int32)
            rows[absent] = new_rows[inverse]
    return rows
