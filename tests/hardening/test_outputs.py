"""Issue #13 item 14: export and import never leave half-written files, fail in one line, and
write URLs through fsspec."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.model import discover_runs
from tests.support.fixtures import FIXTURES, tf_xplane

TINY = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"


def _full_disk(*_args: Any, **_kwargs: Any) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("name", ["trace.json.gz", "trace.json"])
def test_export_on_a_full_disk_leaves_nothing(
    tmp_path: Path,
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from stepscope.export import chrome_trace

    real = chrome_trace.chrome_trace_chunks

    def chunks_then_full(*args: Any, **kwargs: Any) -> Iterator[str]:
        for n, chunk in enumerate(real(*args, **kwargs)):
            if n == 3:
                raise _full_disk()
            yield chunk

    monkeypatch.setattr(chrome_trace, "chrome_trace_chunks", chunks_then_full)
    out = tmp_path / "out"
    out.mkdir()
    code = main(["export", str(tf_xplane("ctl")), "-o", str(out / name), "--no-cache"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "No space left on device" in err[-1] and "Traceback" not in "".join(err)
    assert list(out.iterdir()) == []  # no truncated file, no temporary


def test_export_is_complete_and_readable(tmp_path: Path) -> None:
    import gzip
    import json

    target = tmp_path / "t.json.gz"
    assert main(["export", str(tf_xplane("ctl")), "-o", str(target), "--no-cache"]) == 0
    assert json.loads(gzip.decompress(target.read_bytes()))["traceEvents"]
    assert target.stat().st_mode & 0o044  # readable like any file the user writes
    assert [p.name for p in tmp_path.iterdir()] == ["t.json.gz"]


def test_import_on_a_full_disk_leaves_no_half_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from stepscope.capture.bridges import traces

    real = traces.write_xspace
    tried: list[Path] = []

    def full_after_half(space: Any, path: Path, compress: bool = False) -> Path:
        tried.append(real(space, path))  # the file lands, then the disk is full
        raise _full_disk()

    monkeypatch.setattr(traces, "write_xspace", full_after_half)
    logdir = tmp_path / "logs"
    code = main(["import", str(TINY), "--logdir", str(logdir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "No space left on device" in err[-1] and "nothing was imported" in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert tried and not tried[0].exists()
    assert list((logdir / "plugins" / "profile").iterdir()) == []


def test_import_to_a_url_writes_through_fsspec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("fsspec")
    monkeypatch.chdir(tmp_path)
    url = "memory://bucket-13/logs"
    assert main(["import", str(TINY), "--logdir", url, "--run", "r1"]) == 0
    assert capsys.readouterr().out.strip() == f"{url}/plugins/profile/r1"
    assert list(tmp_path.iterdir()) == []  # was: a local directory named "memory:"
    runs = discover_runs(url)
    assert [(r.name, r.host_names) for r in runs] == [("r1", ["a100_triton_tiny"])]
