"""The one interval union against a brute-force timeline, on random overlapping intervals."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.intervals import merge, merge_sorted, overlap_with, union_ns


def _covered(starts: np.ndarray, ends: np.ndarray, horizon: int) -> np.ndarray:
    mask = np.zeros(horizon, dtype=bool)
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        mask[s:e] = True
    return mask


@pytest.mark.parametrize("seed", range(5))
def test_union_matches_timeline(seed: int) -> None:
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 500, 60).astype(np.int64)
    ends = starts + rng.integers(0, 40, 60)
    mask = _covered(starts, ends, 600)
    assert union_ns(starts, ends) == int(mask.sum())
    lo, hi = merge(starts, ends)
    assert (lo[1:] > hi[:-1]).all()  # disjoint, sorted, not touching
    assert np.array_equal(_covered(lo, hi, 600), mask)
    other_s = rng.integers(0, 500, 20).astype(np.int64)
    other_e = other_s + rng.integers(0, 60, 20)
    want = [int(mask[s:e].sum()) for s, e in zip(other_s.tolist(), other_e.tolist(), strict=True)]
    assert overlap_with(other_s, other_e, lo, hi).tolist() == want


def test_merge_sorted_heads_and_empty() -> None:
    heads, lo, hi = merge_sorted(np.array([0, 2, 10, 11]), np.array([5, 3, 12, 20]))
    assert heads.tolist() == [0, 2] and lo.tolist() == [0, 10] and hi.tolist() == [5, 20]
    assert union_ns(np.zeros(0, np.int64), np.zeros(0, np.int64)) == 0
    assert merge(np.zeros(0, np.int64), np.zeros(0, np.int64))[0].size == 0
