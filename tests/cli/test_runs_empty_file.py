"""`stepscope runs` lists no empty profile file as a run: a capture that failed leaves one,
and every command reading it stops at "file is empty"; the list says it is left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES


def _logdir(tmp_path: Path) -> Path:
    logdir = tmp_path / "logs"
    shutil.copytree(FIXTURES / "tf" / "ctl", logdir)
    (logdir / "plugins" / "profile" / "failed").mkdir()
    (logdir / "plugins" / "profile" / "failed" / "vm.xplane.pb").write_bytes(b"")
    return logdir


def test_an_empty_file_is_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = _logdir(tmp_path)
    assert main(["runs", str(logdir)]) == 0
    out, err = capsys.readouterr()
    assert "failed" not in out and out.rstrip().endswith("\n1 run"), out
    empty = logdir / "plugins" / "profile" / "failed" / "vm.xplane.pb"
    assert err == f"left out: {empty}: file is empty (the capture may have failed; capture again)\n"
    assert main(["runs", str(logdir), "--json"]) == 0
    out, err = capsys.readouterr()
    assert [r["run"] for r in json.loads(out)] != [] and "failed" not in out
    assert err.startswith("left out: ")


def test_an_empty_file_named_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = _logdir(tmp_path) / "plugins" / "profile" / "failed" / "vm.xplane.pb"
    assert main(["runs", str(empty)]) == 2
    assert capsys.readouterr().err == (
        f"stepscope: error: {empty}: file is empty (the capture may have failed; capture again)\n"
    )
