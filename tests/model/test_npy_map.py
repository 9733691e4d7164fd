"""The store's arrays mapped without `np.load` (`stepscope.store.npy_map`, decision 806): the
same values, dtype, shape and read-only flag as `np.load`'s map, for every dtype and shape the
store writes; any other file is left to `np.load`, with its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.store import entries, npy_map

CASES = {
    "int64": np.arange(-5, 100_000, dtype=np.int64) * 1_000_003,
    "int32": np.array([3, -1, 2**31 - 1], dtype=np.int32),
    "int16": np.array([-7, 9], dtype=np.int16),
    "uint8": np.frombuffer(b"stepscope\x00\xff", dtype=np.uint8),
    "bool": np.array([True, False, True]),
    "float64": np.array([0.5, np.nan, -np.inf, 1e300]),
    "float32": np.array([1.5, -0.25], dtype=np.float32),
    "big_endian": np.array([1, 256, 65536], dtype=">i4"),
    "unicode": np.array(["a", "stepscope", "ü"]),
    "empty": np.zeros(0, dtype=np.int64),
    "empty_2d": np.zeros((0, 7), dtype=np.int64),
    "one": np.array([42], dtype=np.uint64),
    "scalar": np.array(7, dtype=np.int64),
    "table": np.arange(60, dtype=np.int64).reshape(12, 5),
    "cube": np.arange(24, dtype=np.int16).reshape(2, 3, 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_mapped_equals_np_loads_map(tmp_path: Path, name: str) -> None:
    values = CASES[name]
    np.save(tmp_path / f"{name}.npy", values, allow_pickle=False)
    mapped = npy_map.mapped(tmp_path / f"{name}.npy")
    got = entries.array(tmp_path, name)
    loaded = np.asarray(np.load(tmp_path / f"{name}.npy", mmap_mode="r"))
    assert mapped is not None and mapped.shape == values.shape
    np.testing.assert_array_equal(mapped, values)
    assert got.dtype == loaded.dtype == values.dtype
    assert got.shape == loaded.shape == values.shape
    assert got.tobytes() == values.tobytes()
    # read-only, a view of the file: what the cache's readers and tests tell a cached value by
    assert not got.flags.writeable and isinstance(got.base, np.memmap)


def test_other_files_are_left_to_np_load(tmp_path: Path) -> None:
    fortran = np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3))
    np.save(tmp_path / "fortran.npy", fortran)
    records = np.array([(1, 2.0)], dtype=[("a", "<i8"), ("b", "<f8")])
    np.save(tmp_path / "records.npy", records)
    np.save(tmp_path / "objects.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    for name in ("fortran", "records", "objects"):
        assert npy_map.mapped(tmp_path / f"{name}.npy") is None, name
    np.testing.assert_array_equal(entries.array(tmp_path, "fortran"), fortran)
    np.testing.assert_array_equal(entries.array(tmp_path, "records"), records)


def test_a_cut_or_foreign_file_takes_np_loads_errors(tmp_path: Path) -> None:
    np.save(tmp_path / "whole.npy", np.arange(1000, dtype=np.int64))
    data = (tmp_path / "whole.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[: len(data) - 8])
    (tmp_path / "header_only.npy").write_bytes(data[:100])
    (tmp_path / "foreign.npy").write_bytes(b"not an array at all")
    (tmp_path / "nothing.npy").write_bytes(b"")
    for name in ("cut", "header_only", "foreign", "nothing"):
        assert npy_map.mapped(tmp_path / f"{name}.npy") is None, name
        with pytest.raises(Exception) as np_loads:
            np.load(tmp_path / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        with pytest.raises(np_loads.type):
            entries.array(tmp_path, name)
