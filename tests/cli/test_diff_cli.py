"""`stepscope diff` and `stepscope summary`: exit codes, one-line reasons, JSON and Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES

CTL = str(FIXTURES / "tf" / "ctl")
CTL_OPT = str(FIXTURES / "tf" / "ctl_opt")
KINETO = str(FIXTURES / "kineto" / "a100_nccl_rank0.json.gz")


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("baselines")
    paths = {}
    for name, run in (("ctl", CTL), ("ctl_opt", CTL_OPT), ("kineto", KINETO)):
        paths[name] = out / f"{name}.json"
        assert main(["summary", run, "-o", str(paths[name]), "--no-cache"]) == 0
    return paths


def test_summary_is_small_json(baselines: dict[str, Path]) -> None:
    data = json.loads(baselines["ctl"].read_text())
    assert data["format"] == "stepscope-summary" and data["version"] == 1
    assert len(data["steps"]["dur_ns"]) == 4
    assert baselines["ctl"].stat().st_size < 64_000


def test_regression_exits_1_with_one_line_reason(
    baselines: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "diff",
            str(baselines["ctl_opt"]),
            str(baselines["ctl"]),
            "--fail-on",
            "step_time.median>+5%",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    err = captured.err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("stepscope diff: FAIL step_time.median>+5%: step_time.median +")
    assert "(significant)" in err[0]
    assert "Verdict: step time +" in captured.out


def test_improvement_passes_and_names_input(
    baselines: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "diff",
            str(baselines["ctl"]),
            CTL_OPT,
            "--fail-on",
            "step_time.median>+5%",
            "--fail-on",
            "memory.peak>+10%",
            "--no-cache",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Verdict: step time -78.7%" in out and "driven by input" in out
    assert "ok   step_time.median>+5%" in out


def test_kineto_against_itself_passes_every_rule(
    baselines: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "diff",
            KINETO,
            str(baselines["kineto"]),
            "--fail-on",
            "step_time.p90>+0%",
            "--fail-on",
            "tensor_core.share<-0.1pp",
            "--no-cache",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Verdict: no change in step time (the same per-step times" in out


def test_json_and_markdown_files(baselines: dict[str, Path], tmp_path: Path) -> None:
    j, md = tmp_path / "diff.json", tmp_path / "diff.md"
    code = main(
        [
            "diff",
            str(baselines["ctl_opt"]),
            str(baselines["ctl"]),
            "--fail-on",
            "category.input>+10ms",
            "--json",
            str(j),
            "--markdown",
            str(md),
        ]
    )
    assert code == 1
    data = json.loads(j.read_text())
    assert data["exit_code"] == 1 and data["driver"] == "input"
    assert data["rules"][0]["failed"] and data["rules"][0]["metric"] == "category.input"
    names = {m["name"]: m for m in data["metrics"]}
    assert names["step_time.median"]["significant"] and names["category.input"]["significant"]
    text = md.read_text()
    assert text.startswith("### stepscope diff: ❌ regression\n")
    assert "**step time +" in text and "driven by input" in text
    assert "| Step time (median) | 17.38 ms | 70.41 ms | +305.1% |" in text
    assert "| `category.input>+10ms` | ❌ " in text
    assert "`Map  (Iterator::Root::ForeverRepeat[0]::BatchV2::Map)`" in text
    assert "&gt;" not in text.split("<sub>")[0].replace("-&gt;", "")  # no entities in code spans


def test_markdown_to_stdout(baselines: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(baselines["ctl"]), str(baselines["ctl_opt"]), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### stepscope diff\n") and "Verdict" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fail-on", "step_time>5"], "--fail-on 'step_time>5': not METRIC OP CHANGE"),
        (["--fail-on", "speed>5%"], "unknown metric 'speed'"),
        (["--json", "--markdown"], "--json and --markdown cannot both go to stdout"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    baselines: dict[str, Path], capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = main(["diff", str(baselines["ctl"]), str(baselines["ctl_opt"]), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]


def test_bad_inputs_exit_2(
    tmp_path: Path, baselines: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "base.json"
    broken.write_text('{"format": "stepscope-summary", "version": 1, "run": "x"}')
    assert main(["diff", str(broken), str(baselines["ctl"])]) == 2
    assert "damaged stepscope summary" in capsys.readouterr().err
    old = tmp_path / "old.json"
    old.write_text('{"format": "stepscope-summary", "version": 0}')
    assert main(["diff", str(old), str(baselines["ctl"])]) == 2
    assert "summary version 0 is not 1" in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "missing"), str(baselines["ctl"])]) == 2
    assert "missing" in capsys.readouterr().err
    assert main(["diff", str(baselines["ctl"]), CTL, "--host", "nohost", "--no-cache"]) == 0
    assert main(["summary", CTL, "-o", str(tmp_path), "--no-cache"]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_help_shows_the_rule_language(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    out = capsys.readouterr().out
    assert "'step_time.median>+5%'" in out and "%%" not in out
    assert "Exit status: 0 pass, 1 a rule failed, 2" in " ".join(out.split())


@pytest.mark.parametrize("columns", [60, 80, 140])
def test_the_report_fits_the_terminal(
    baselines: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: int,
) -> None:
    """No line wider than the terminal ($COLUMNS): sentences wrap, long op names are cut to
    the room the numbers leave (issue #33). The metrics table is narrower than 60 columns."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["diff", str(baselines["kineto"]), str(baselines["ctl"])]) == 0
    out = capsys.readouterr().out
    widest = max(out.splitlines(), key=len)
    assert len(widest) <= columns, widest
    assert "…" in out  # a long name was cut, not run over
