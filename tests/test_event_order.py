"""`start_order` is ``np.lexsort((-length, start))`` on every input: sorted, nearly sorted,
shuffled, with and without shared starts, empty."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.event_order import start_order


@pytest.mark.parametrize("seed", range(6))
def test_start_order_is_lexsort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    start = np.sort(rng.integers(0, max(n // 3, 1), n))  # shared starts
    swaps = rng.integers(0, max(n, 1), 5) if n else np.zeros(0, np.int64)
    start[swaps] = rng.integers(0, max(n // 3, 1), len(swaps))  # a few out of order
    length = rng.integers(0, 4, n)  # equal lengths among shared starts
    cases = [(start, length), (rng.permutation(start), length), (np.unique(start), None)]
    for s, d in cases:
        d = rng.integers(0, 4, len(s)) if d is None else d
        expected = np.lexsort((-d, s))
        assert np.array_equal(start_order(s, d), expected)
        assert np.array_equal(start_order(s, s + d), expected)  # end times order the same
