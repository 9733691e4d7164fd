"""A store entry's bytes are checked once; later reads check only files whose status changed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from stepscope.store import entries


@pytest.fixture
def entry(tmp_path: Path) -> Path:
    target = tmp_path / "entry"
    entries.write_arrays(target, {"a": np.arange(1000), "b": np.ones(10)}, {"n": 1})
    return target


@pytest.fixture
def crcs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names whose bytes `verify` reads (its CRC calls)."""
    read: list[str] = []
    real = entries._crc32

    def counting(path: Path) -> int:
        read.append(path.name)
        return real(path)

    monkeypatch.setattr(entries, "_crc32", counting)
    return read


def _later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check as if the files were written long ago (their times settled)."""
    now = time.time_ns() + 10 * entries._SETTLED_NS
    monkeypatch.setattr(entries.time, "time_ns", lambda: now)


@pytest.fixture
def recorded(entry: Path, crcs: list[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The entry checked once long after it was written (its record kept), no reads counted."""
    _later(monkeypatch)
    assert entries.verify(entry)
    crcs.clear()
    return entry


def test_fresh_files_are_checked_in_full_every_time(entry: Path, crcs: list[str]) -> None:
    assert entries.verify(entry) and entries.verify(entry)
    assert sorted(crcs) == sorted(["a.npy", "b.npy", "header.json"] * 2)
    assert not (entry / entries.VERIFIED).exists()  # written this tick: not recorded


def test_settled_files_are_not_read_again(
    entry: Path, crcs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _later(monkeypatch)
    assert entries.verify(entry)
    assert len(crcs) == 3 and (entry / entries.VERIFIED).exists()
    crcs.clear()
    assert entries.verify(entry)
    assert crcs == []


def test_a_replaced_file_is_read_again_and_caught(recorded: Path, crcs: list[str]) -> None:
    entry = recorded
    np.save(entry / "b.tmp.npy", np.zeros(10))  # same size, other bytes, a new inode
    os.replace(entry / "b.tmp.npy", entry / "b.npy")
    assert not entries.verify(entry)
    assert crcs == ["b.npy"]


def test_a_file_changed_in_place_is_read_again(recorded: Path, crcs: list[str]) -> None:
    entry = recorded
    path = entry / "a.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    with path.open("r+b") as handle:  # same inode and size
        handle.write(bytes(data))
    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1))  # a tick later
    assert not entries.verify(entry)
    assert crcs == ["a.npy"]


def test_an_unreadable_record_means_a_full_check(
    entry: Path, crcs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _later(monkeypatch)
    (entry / entries.VERIFIED).write_text("[1, 2")
    assert entries.verify(entry)
    assert len(crcs) == 3
