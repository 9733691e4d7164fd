"""The C helpers (optional) answer as their NumPy fallbacks: segmented search, detail levels."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.trace_index import lod, segments


@pytest.mark.parametrize("side", ["left", "right"])
def test_c_search_equals_numpy_bisection(side: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if segments.native() is None:
        pytest.skip("the C extension is not built")
    rng = np.random.default_rng(7)
    values = np.sort(rng.integers(0, 50, 400)).astype(np.int64)  # many ties
    cuts = np.sort(rng.integers(0, 401, 120))
    lo, hi = cuts[:-1:2], cuts[1::2]  # non-overlapping segments, some empty
    hi = np.concatenate([hi, [lo[-1]]])[: len(lo)]
    keys = rng.integers(-5, 60, len(lo))  # below, inside and above the values
    fast = segments.segmented_search(values, lo, hi, keys, side)
    expected = np.array(
        [
            a + np.searchsorted(values[a:b], k, side=side)
            for a, b, k in zip(lo, hi, keys, strict=True)
        ]
    )
    expected = np.where(hi <= lo, lo, expected)
    monkeypatch.setenv("STEPSCOPE_PURE_PYTHON", "1")
    slow = segments.segmented_search(values, lo, hi, keys, side)
    assert fast.tolist() == slow.tolist() == expected.tolist()


def test_c_search_rejects_a_segment_outside_the_values(monkeypatch: pytest.MonkeyPatch) -> None:
    if segments.native() is None:
        pytest.skip("the C extension is not built")
    monkeypatch.delenv("STEPSCOPE_PURE_PYTHON", raising=False)  # this test is about the C path
    values = np.arange(10, dtype=np.int64)
    with pytest.raises(IndexError, match="outside"):
        segments.segmented_search(values, np.array([0]), np.array([11]), np.array([3]))


def test_c_levels_equal_numpy_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    if segments.native() is None:
        pytest.skip("the C extension is not built")
    monkeypatch.delenv("STEPSCOPE_PURE_PYTHON", raising=False)
    rng = np.random.default_rng(11)
    n = 20_000
    row = np.sort(rng.integers(0, 40, n))  # rows of every length, some of one event
    start = np.sort(rng.integers(0, 1 << 40, n))
    dur = rng.integers(0, 6, n) ** rng.integers(1, 12, n)  # many ties, zeros, a wide range
    fast = lod.detail_levels(row, start, dur)
    slow = lod.detail_levels_numpy(row, start, dur)
    assert fast.dtype == slow.dtype == np.int8
    assert fast.tolist() == slow.tolist()
    assert lod.detail_levels(row[:0], start[:0], dur[:0]).tolist() == []
