"""Small NumPy helpers that must hold on empty input too (a trace with nothing of a kind)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stepscope.distinct import distinct

if TYPE_CHECKING:
    from stepscope.model import Profile


def run_starts(values: np.ndarray) -> np.ndarray:
    """True where a run of equal consecutive values starts; as long as ``values`` (empty in,
    empty out: ``np.r_[True, v[1:] != v[:-1]]`` gives one element for an empty ``v``)."""
    mask = np.ones(len(values), dtype=bool)
    if len(values) > 1:
        mask[1:] = values[1:] != values[:-1]
    return mask


def unique_many(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for integer arrays with many distinct values (event indices,
    positions, times): `stepscope.distinct.distinct`, which sorts them (NumPy 2.3+'s hash
    table takes about 0.7 s per million distinct int64 values, 14x a sort)."""
    return distinct(values)


def distinct_ids(ids: np.ndarray, size: int) -> np.ndarray:
    """``np.unique(ids)`` for ids in ``[0, size)`` (string ids: event names), by a mark per
    id: one pass and a ``size``-long mask instead of NumPy's hash table (0.43 -> 0.07 s for
    20M names)."""
    seen = np.zeros(size, dtype=bool)
    seen[ids] = True
    return np.flatnonzero(seen)


def used_names(profile: Profile) -> np.ndarray:
    """The string ids of the names the profile's events have, ascending: `distinct_ids` of
    the name column, made once per profile (the dispatch, wait and profiler-work rules each
    ask), read-only."""

    def made() -> np.ndarray:
        ids = distinct_ids(profile.name, len(profile.strings))
        ids.flags.writeable = False
        return ids

    return profile.derived("names.used", made)
