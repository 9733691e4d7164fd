"""Metadata id -> row/name mapping: the dense table and the binary search agree."""

from __future__ import annotations

import numpy as np

from stepscope.model import id_map
from stepscope.model.id_map import dense_table, lookup, map_ids

ODD = np.array([5, 0, 1, 40, 41, -1, -(2**63), 2**62, 8, 4, 3], dtype=np.int64)


def _by_dict(values: np.ndarray, ids: np.ndarray, targets: np.ndarray, missing: int) -> list[int]:
    known = dict(zip(ids.tolist(), targets.tolist(), strict=True))
    return [known.get(v, missing) for v in values.tolist()]


def test_dense_table_and_search_match_a_dict_on_odd_values() -> None:
    dense = np.array([1, 2, 3, 5, 8, 40], dtype=np.int64)
    sparse = np.array([1, 3, 8, 2**62], dtype=np.int64)
    assert dense_table(dense, dense, -1) is not None  # both paths are under test
    assert dense_table(sparse, sparse, -1) is None
    for ids in (dense, sparse):
        names = np.arange(len(ids), dtype=np.int32)[::-1] * 7
        for chunk in (3, 1 << 20):
            got = lookup(ODD, ids, names, 99, chunk=chunk)
            assert got.tolist() == _by_dict(ODD, ids, names, 99)
        rows = map_ids(ODD, ids, 100, None)
        assert rows.tolist() == _by_dict(ODD, ids, np.arange(100, 100 + len(ids)), -1)


def test_no_ids_map_everything_to_missing() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert lookup(ODD[:3], empty, empty, 4).tolist() == [4, 4, 4]


def test_missing_ids_get_new_rows_once_each_in_id_order() -> None:
    ids = np.arange(1, 6, dtype=np.int64)
    values = np.array([9, 2, 9, 7, -4], dtype=np.int64)
    added: list[int] = []

    def on_missing(missing_id: int) -> int:
        added.append(missing_id)
        return 50 + len(added)

    rows = map_ids(values, ids, 0, on_missing)
    assert added == [-4, 7, 9]
    assert rows.tolist() == [53, 1, 53, 52, 51]


def test_table_is_bounded_by_the_metadata_size() -> None:
    ids = np.array([0, id_map.DENSE_IDS_SLACK + 8], dtype=np.int64)
    assert dense_table(ids, ids, -1) is None
