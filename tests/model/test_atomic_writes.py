"""The one atomic writer (stepscope.tmpfiles): readers see the old or the new content, and a
failed save leaves the old one and no temporary behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope import tmpfiles


def test_write_bytes_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b.bin"
    tmpfiles.write_bytes(target, b"old")
    tmpfiles.write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in target.parent.iterdir()] == ["b.bin"]


def test_failed_directory_keeps_the_old_entry(tmp_path: Path) -> None:
    target = tmp_path / "entry"
    with tmpfiles.directory(target) as tmp:
        (tmp / "x").write_text("1")
    with pytest.raises(RuntimeError), tmpfiles.directory(target) as tmp:
        (tmp / "x").write_text("2")
        raise RuntimeError("interrupted")
    assert (target / "x").read_text() == "1"
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]
