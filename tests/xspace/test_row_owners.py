"""wire.row_owners: the event owning each stat row, from the stat offsets alone (the C
module's galloping search and NumPy's binary searches give the same)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.xspace import wire
from tests.support.native import c_off, c_on


def _offsets(counts: np.ndarray, base: int) -> np.ndarray:
    start = np.full(len(counts) + 1, base, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    start[1:] += base
    return start


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_owners_of_any_rows(pure: bool, dtype: type, monkeypatch: pytest.MonkeyPatch) -> None:
    (c_off if pure else c_on)(monkeypatch, "_fastwire")
    rng = np.random.default_rng(7)
    counts = rng.choice([0, 0, 1, 2, 5, 40], size=5000)  # empty events and long gaps
    start = _offsets(counts, base=123)  # offsets of a later slice of the table
    owner = np.repeat(np.arange(len(counts)), counts)
    n_rows = len(owner)
    for rows in (
        np.arange(n_rows),  # every row
        np.sort(rng.choice(n_rows, 37, replace=False)),  # a sparse key
        np.array([n_rows - 1, 0, n_rows // 2, 3, 3]),  # out of order, repeated
        np.zeros(0, np.int64),
    ):
        got = wire.row_owners(start, rows.astype(dtype))
        np.testing.assert_array_equal(got, owner[rows])
        assert got.dtype == dtype


def test_a_row_past_the_table_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_fastwire")  # the C search checks its rows (NumPy's reads none past)
    start = _offsets(np.array([2, 0, 1]), base=0)
    with pytest.raises(ValueError, match="out of range"):
        wire.row_owners(start, np.array([0, 3], np.int32))
    with pytest.raises(ValueError, match="out of range"):
        wire.row_owners(start, np.array([-1], np.int64))
