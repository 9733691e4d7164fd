"""Metadata id -> row mapping: the dense row table and the binary search give the same rows."""

from __future__ import annotations

import numpy as np

from stepscope.model import from_xspace
from stepscope.model.from_xspace import _dense_rows, _map_ids


def _by_search(values: np.ndarray, sorted_ids: np.ndarray, base: int) -> list[int]:
    known = {int(i): r + base for r, i in enumerate(sorted_ids.tolist())}
    return [known.get(int(v), -1) for v in values.tolist()]


def test_dense_table_matches_search_with_odd_values() -> None:
    ids = np.array([1, 2, 3, 5, 8, 40], dtype=np.int64)
    assert _dense_rows(ids, 0) is not None  # the table path is the one under test
    values = np.array([5, 0, 1, 40, 41, -1, -(2**63), 2**62, 8, 4, 3], dtype=np.int64)
    for chunk in (3, 1 << 20):
        rows = _map_ids(values, ids, 100, None, chunk=chunk)
        assert rows.tolist() == _by_search(values, ids, 100)


def test_sparse_ids_take_the_search() -> None:
    ids = np.array([1, 10**12], dtype=np.int64)
    assert _dense_rows(ids, 0) is None
    values = np.array([10**12, 1, 7, -3], dtype=np.int64)
    assert _map_ids(values, ids, 0, None).tolist() == [1, 0, -1, -1]


def test_dense_table_gives_missing_ids_new_rows() -> None:
    ids = np.arange(1, 6, dtype=np.int64)
    values = np.array([9, 2, 9, 7, -4], dtype=np.int64)
    added: list[int] = []

    def on_missing(missing_id: int) -> int:
        added.append(missing_id)
        return 50 + len(added)

    rows = _map_ids(values, ids, 0, on_missing)
    assert added == [-4, 7, 9]
    assert rows.tolist() == [53, 1, 53, 52, 51]


def test_table_is_bounded_by_the_metadata_size() -> None:
    ids = np.array([0, from_xspace.DENSE_IDS_SLACK + 8], dtype=np.int64)
    assert _dense_rows(ids, 0) is None
