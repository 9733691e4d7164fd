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


def test_temporaries_are_named_without_tempfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 298: the store's first write in a command imports no `tempfile` (and its
    `random`); its names are ours (prefix, host, pid), a name taken is passed over, and the
    file gets the permissions a plain open gives."""
    import os
    import stat
    import sys

    monkeypatch.setitem(sys.modules, "tempfile", None)  # `import tempfile` now fails
    draws = iter([b"\x01" * 8, b"\x01" * 8, b"\x02" * 8])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    handle, first = tmpfiles.mkstemp(tmp_path)
    os.close(handle)
    handle, second = tmpfiles.mkstemp(tmp_path)  # the first name is taken: the next draw
    os.close(handle)
    assert Path(first).name == f"{tmpfiles.tmp_prefix()}{'01' * 8}"
    assert Path(second).name == f"{tmpfiles.tmp_prefix()}{'02' * 8}"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o666 & ~umask
    monkeypatch.setattr(os, "urandom", lambda n: b"\x03" * n)
    with tmpfiles.directory(tmp_path / "entry") as tmp:
        assert tmp.name == f"{tmpfiles.tmp_prefix()}{'03' * 8}"
        assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o700
    tmpfiles.write_bytes(tmp_path / "file.bin", b"data")
    assert (tmp_path / "file.bin").read_bytes() == b"data"
    monkeypatch.setattr(os, "urandom", lambda n: b"\x01" * n)  # every name taken
    with pytest.raises(FileExistsError):
        tmpfiles.mkstemp(tmp_path)
