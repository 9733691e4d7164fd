"""Opening an uncompressed local XSpace memory-maps it for the C decoder: same profile, the
mapping closed after decoding, the same errors as a plain read."""

from __future__ import annotations

import gzip
import mmap
import shutil
from pathlib import Path

import numpy as np
import pytest

from stepscope import limits
from stepscope.errors import ProfileFormatError
from stepscope.model import load
from stepscope.model.runs import single_file_run
from stepscope.xspace import io
from stepscope.xspace.formats import xplane
from tests.support.fixtures import FIXTURES
from tests.support.native import c_off, c_on

XPLANE = sorted(FIXTURES.rglob("*.xplane.pb"))[0]


def test_uncompressed_local_file_is_mapped_gzip_is_read(tmp_path: Path) -> None:
    mapped = io.map_profile_bytes(XPLANE)
    assert isinstance(mapped, mmap.mmap)
    assert mapped[:] == XPLANE.read_bytes()
    mapped.close()
    packed = tmp_path / "x.xplane.pb.gz"
    packed.write_bytes(gzip.compress(XPLANE.read_bytes()))
    assert io.map_profile_bytes(packed) == XPLANE.read_bytes()


def test_bad_paths_give_the_plain_reads_errors(tmp_path: Path) -> None:
    (tmp_path / "empty.xplane.pb").write_bytes(b"")
    for path, message in (
        (tmp_path / "nope.xplane.pb", "no such file"),
        (tmp_path, "is a directory"),
        (tmp_path / "empty.xplane.pb", "file is empty"),
    ):
        with pytest.raises(ProfileFormatError, match=message):
            io.map_profile_bytes(path)


def test_mapping_respects_the_profile_limit() -> None:
    limits.configure(100)
    try:
        with pytest.raises(limits.ProfileTooLargeError, match="this file"):
            io.map_profile_bytes(XPLANE)
    finally:
        limits.configure(None)


def test_open_host_decodes_the_mapping_and_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c_on(monkeypatch, "_fastwire")  # only the C decoder reads a mapping
    copy = tmp_path / "host.xplane.pb"
    shutil.copy(XPLANE, copy)
    opened: list[mmap.mmap] = []
    real = io.map_profile_bytes

    def spy(path: object) -> object:
        data = real(path)  # type: ignore[arg-type]
        if isinstance(data, mmap.mmap):
            opened.append(data)
        return data

    monkeypatch.setattr(xplane, "map_profile_bytes", spy)
    run = single_file_run(str(copy))
    mapped = load.open_host(run.host(run.host_names[0]), use_cache=False)
    assert len(opened) == 1 and opened[0].closed
    c_off(monkeypatch, "_fastwire")  # the fallback reads bytes
    read = load.open_host(run.host(run.host_names[0]), use_cache=False)
    assert len(opened) == 1
    for column in ("start_ns", "dur_ns", "name", "stat_start"):
        np.testing.assert_array_equal(getattr(mapped, column), getattr(read, column))
    np.testing.assert_array_equal(mapped.stats.value, read.stats.value)
