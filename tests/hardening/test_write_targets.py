"""Issue #28 item 1: no write replaces a FIFO, a device or a symlink (decision 100).

Outputs the user names (export, summary, diff) stream into a FIFO and follow a symlink;
files stepscope names (capture, recorder, import, cache) refuse both. The tests use FIFOs
and symlinks only, never device nodes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope import tmpfiles
from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES, tf_xplane

TINY = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"


class FifoReader:
    """A FIFO at ``path`` and a thread reading everything written into it."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fifo:  # blocks until a writer opens it
            self.data = fifo.read()

    def finish(self) -> bytes:
        self.thread.join(2)
        if self.thread.is_alive():  # a reader nobody wrote to: open and close to end it
            # non-blocking: if the reader left meanwhile, a plain open would wait forever
            with contextlib.suppress(OSError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        self.thread.join(10)
        return self.data


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[FifoReader]:
    reader = FifoReader(tmp_path / "fifo")
    yield reader
    reader.finish()


def _is_fifo(path: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.lstat(path).st_mode)


def _symlink(tmp_path: Path, content: bytes = b"kept") -> tuple[Path, Path]:
    real = tmp_path / "real.txt"
    real.write_bytes(content)
    link = tmp_path / "link"
    link.symlink_to(real)
    return link, real


# --- outputs the user names: stream into a FIFO, follow a symlink -------------------------


def _user_outputs(target: Path) -> list[list[str]]:
    ctl = str(tf_xplane("ctl"))
    return [
        ["export", str(TINY), "-o", str(target)],
        ["summary", ctl, "-o", str(target)],
        ["diff", ctl, ctl, "--markdown", str(target)],
        ["diff", ctl, ctl, "--json", str(target)],
    ]


@pytest.mark.parametrize("which", range(4), ids=["export", "summary", "diff-md", "diff-json"])
def test_user_outputs_stream_into_a_fifo(
    which: int, fifo: FifoReader, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _user_outputs(fifo.path)[which]
    assert main([*argv, "--no-cache"]) == 0, capsys.readouterr().err
    assert _is_fifo(fifo.path)  # not replaced by a regular file
    data = fifo.finish()
    assert len(data) > 100 and data.lstrip()[:1] in (b"{", b"#", b"*", b"|", b"S")
    assert [p.name for p in fifo.path.parent.iterdir()] == ["fifo"]  # no temporary left


@pytest.mark.parametrize("which", range(4), ids=["export", "summary", "diff-md", "diff-json"])
def test_user_outputs_follow_a_symlink(
    which: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link, real = _symlink(tmp_path)
    argv = _user_outputs(link)[which]
    assert main([*argv, "--no-cache"]) == 0, capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link stays
    assert len(real.read_bytes()) > 100  # the file it names was written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real.txt"]


def test_export_into_a_symlinked_gzip_stays_a_link(tmp_path: Path) -> None:
    import gzip
    import json

    real = tmp_path / "real.json.gz"
    real.write_bytes(b"")
    link = tmp_path / "t.json.gz"
    link.symlink_to(real)
    assert main(["export", str(TINY), "-o", str(link), "--no-cache"]) == 0
    assert link.is_symlink()
    assert json.loads(gzip.decompress(real.read_bytes()))["traceEvents"]


def test_export_to_a_closed_descriptor_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fd = os.open(tmp_path / "x", os.O_WRONLY | os.O_CREAT)
    os.close(fd)  # its number is free now: /dev/fd/<fd> names nothing open
    code = main(["export", str(TINY), "-o", f"/dev/fd/{fd}", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "is not an open descriptor" in err and "Traceback" not in err


def test_export_to_a_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["export", str(TINY), "-o", str(tmp_path), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "is a directory" in err and "Traceback" not in err


# --- files stepscope names: refuse a FIFO or a symlink, keep the data -----------------------


@pytest.mark.parametrize("kind", ["fifo", "symlink", "dangling"])
def test_managed_writes_refuse_non_regular_targets(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "h.xplane.pb"
    real = tmp_path / "elsewhere"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        if kind == "symlink":
            real.write_bytes(b"someone's file")
        target.symlink_to(real)
    with pytest.raises(tmpfiles.RefusedTarget) as raised:
        tmpfiles.write_bytes(target, b"profile")
    assert raised.value.filename == str(target)
    assert "not a regular file" in str(raised.value)
    assert target.is_symlink() or _is_fifo(target)  # still there, not replaced
    assert not real.exists() or real.read_bytes() == b"someone's file"
    assert not any(p.name.startswith(tmpfiles.PREFIX) for p in tmp_path.iterdir())


def test_cache_directory_entry_refuses_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    target = tmp_path / "entry"
    target.symlink_to(elsewhere)
    with pytest.raises(tmpfiles.RefusedTarget), tmpfiles.directory(target) as tmp:
        (tmp / "a").write_text("1")
    assert target.is_symlink() and (elsewhere / "keep").read_text() == "x"


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_capture_keeps_the_profile_when_the_host_file_is_not_regular(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The host file's name is taken by a FIFO or a dangling symlink: the capture is not
    written through it (a taken name is never replaced, issue #26), and the profile is saved
    under the next run name."""
    import stepscope
    from stepscope.logdir import host_file_name

    logdir = tmp_path / "logs"
    run = logdir / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    target = run / host_file_name("h")
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(tmp_path / "victim")
    stepscope.start(str(logdir), hostname="h", run_name="run1")
    with stepscope.trace("work"):
        pass
    saved = stepscope.stop()
    assert saved is not None and saved.name == "run1_2"
    assert (saved / host_file_name("h")).is_file()
    assert os.path.lexists(target) and not (tmp_path / "victim").exists()
    assert "already holds" in capsys.readouterr().err


def test_recorder_json_refuses_a_symlink(tmp_path: Path) -> None:
    from stepscope.capture.recorder.snapshot import _write_json

    victim = tmp_path / "victim"
    victim.write_text("mine")
    marker = tmp_path / "h.recorder.json"
    marker.symlink_to(victim)
    with pytest.raises(tmpfiles.RefusedTarget):
        _write_json(marker, {"trigger": "user"})
    assert victim.read_text() == "mine" and marker.is_symlink()


def test_cache_value_on_a_fifo_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from stepscope.store.values import write_value

    target = tmp_path / "value.npz"
    os.mkfifo(target)
    with caplog.at_level(logging.WARNING):
        assert write_value(target, {"a": 1}) is False
    assert _is_fifo(target) and "not a regular file" in caplog.text
