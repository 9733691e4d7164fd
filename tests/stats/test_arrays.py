"""The small NumPy helpers give NumPy's own answers, empty input included."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.arrays import unique_many


@pytest.mark.parametrize("n", [0, 1, 2, 1000])
def test_unique_many_is_np_unique(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (rng.integers(-50, 50, n), rng.permutation(n), np.repeat(np.arange(n), 3)):
        got = unique_many(values.astype(np.int64))
        assert got.dtype == np.int64
        assert np.array_equal(got, np.unique(values))


def test_distinct_ids_equal_unique() -> None:
    from stepscope.stats.arrays import distinct_ids

    ids = np.random.default_rng(2).integers(0, 300, 5000).astype(np.int32)
    assert np.array_equal(distinct_ids(ids, 400), np.unique(ids))
    assert distinct_ids(ids[:0], 10).tolist() == []
