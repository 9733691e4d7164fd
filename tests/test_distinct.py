"""`distinct` and `distinct_inverse` give ``np.unique``'s answers (values, positions, dtypes)
on integer columns of every kind, marked or sorted, and never load ``numpy.ma`` (the first
hash-table ``np.unique`` does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stepscope.distinct import distinct, distinct_inverse, member

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_distinct_is_np_unique(dtype: type) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(info.bits)
    ranges = [
        (info.min, info.max, 1000),  # wide: sorted
        (0, 10, 1000),  # short, from 0: counted
        (max(-5, info.min), 5, 50),  # short, below 0: counted from the lowest
        (info.max - 3, info.max, 100),  # near the top of the type
        (info.min, info.min + 3, 100),  # near the bottom
        (0, min(1 << 20, info.max), 30),  # sparse: sorted
    ]
    for low, high, n in ranges:
        values = rng.integers(low, high, size=n, dtype=dtype, endpoint=True)
        got = distinct(values)
        assert got.dtype == values.dtype
        assert np.array_equal(got, np.unique(values)), (low, high)
        found, inverse = distinct_inverse(values)
        want, want_inverse = np.unique(values, return_inverse=True)
        assert found.dtype == want.dtype and inverse.dtype == want_inverse.dtype
        assert np.array_equal(found, want) and np.array_equal(inverse, want_inverse)
    assert distinct(np.zeros(0, dtype)).dtype == dtype
    assert distinct(np.zeros(0, dtype)).tolist() == []


@pytest.mark.integration  # a fresh interpreter
def test_distinct_does_not_load_numpy_ma() -> None:
    script = (
        "import sys, numpy as np\n"
        "from stepscope.distinct import distinct\n"
        "distinct(np.array([3, 1, 3, 7])); distinct(np.array([1 << 40, 5, 1 << 40]))\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("dtype", (np.int8, np.int32, np.int64, np.uint16))
def test_member_is_np_isin(dtype: type) -> None:
    rng = np.random.default_rng(7)
    for size, pool_size, high in ((0, 5, 9), (40, 0, 9), (300, 20, 50), (300, 30, 120)):
        values = rng.integers(0, high, size).astype(dtype)
        pool = rng.integers(0, high, pool_size).astype(dtype)
        assert np.array_equal(member(values, pool), np.isin(values, pool))
