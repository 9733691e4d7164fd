"""`stepscope --version`, `runs` and `info` on the fixtures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope import __version__
from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_runs_lists_six_tf_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", str(FIXTURES / "tf")]) == 0
    out = capsys.readouterr().out
    assert "\n6 runs\n" in out and "localhost_6009" in out
    assert main(["runs", str(FIXTURES / "tf"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == 6 and data[0]["hosts"][0]["format"] == "xspace"


@pytest.mark.parametrize("name", ["ctl", "ctl_opt", "keras", "keras_marked", "remote"])
def test_info_on_each_tf_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(FIXTURES / "tf" / name), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    host = data["hosts"][0]
    assert host["events"] > 1000
    assert [p["name"] for p in host["planes"]] == ["/host:CPU", "Task Environment"]
    assert sum(line["events"] for line in host["planes"][0]["lines"]) == host["events"]
    assert host["top_events"][0]["total_ns"] > 0
    assert main(["info", str(FIXTURES / "tf" / name)]) == 0
    assert "plane '/host:CPU'" in capsys.readouterr().out


def test_info_on_gpu_xspace(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["info", str(FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb"), "--json"])
        == 0
    )
    planes = [p["name"] for p in json.loads(capsys.readouterr().out)["hosts"][0]["planes"]]
    assert "/device:GPU:0" in planes and "/host:CPU" in planes


def test_unknown_path_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "/no/such/place"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/no/such/place" in err[0]


@pytest.mark.parametrize(
    "command",
    [["info"], ["report"], ["tool", "{}", "overview_page"], ["summary"], ["runs"], ["query"]],
)
def test_a_mistyped_profile_file_is_not_called_a_directory(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Decision 612: `stepscope report run1.xplane.pb` with a typo read "no such directory"."""
    missing = str(tmp_path / "run1.xplane.pb")
    args = [missing if a == "{}" else a for a in command]
    assert main(args if "{}" in command else [*command, missing]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith(f"stepscope: error: {missing}: no such file or directory (give a log ")
    assert "a profile file: *.xplane.pb[.gz]" in err


@pytest.mark.integration  # a process of its own
def test_python_dash_m_stepscope_is_the_console_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "tf" / "ctl", run)
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-m", "stepscope", "summary", str(run)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert main(["summary", str(run)]) == 0
    assert done.stdout == capsys.readouterr().out != ""
