"""Store entries written with their CRCs computed in memory: the files are np.save's, and the
manifest is what reading them back gives."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from stepscope.store import entries

ARRAYS = {
    "i64": np.arange(-5, 100_000, dtype=np.int64),
    "i8": np.array([1, -2, 3], dtype=np.int8),
    "flags": np.array([True, False]),
    "f": np.linspace(0, 1, 7),
    "grid": np.arange(12, dtype=np.int32).reshape(3, 4),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)),
    "empty": np.zeros(0, dtype=np.uint64),
    "scalar": np.array(7, dtype=np.int64),
    "text": np.array(["ab", "c"]),
}


def test_files_are_np_saves_and_the_manifest_matches_them(tmp_path: Path) -> None:
    target = tmp_path / "entry"
    entries.write_arrays(target, ARRAYS, {"n": 1, "name": "é"})
    for name, values in ARRAYS.items():
        expected = io.BytesIO()
        np.save(expected, values, allow_pickle=False)
        assert (target / f"{name}.npy").read_bytes() == expected.getvalue(), name
        np.testing.assert_array_equal(entries.array(target, name), values)
    listed = json.loads((target / entries.MANIFEST).read_text())
    assert set(listed) == {f"{n}.npy" for n in ARRAYS} | {entries.HEADER}
    for name, (size, crc) in listed.items():
        assert [size, crc] == [(target / name).stat().st_size, entries._crc32(target / name)]
    assert entries.verify(target)
    assert entries.read_header(target) == {"n": 1, "name": "é"}
