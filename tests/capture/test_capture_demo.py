"""`stepscope demo` end to end (fast mode), through the CLI's command registration."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from stepscope.cli.commands import demo
from tests.support.capture import load_run, named


def test_demo_profiles_and_summarizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    demo.register(parser.add_subparsers())
    args = parser.parse_args(["demo", "--fast", "--logdir", str(tmp_path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    (run_dir,) = (tmp_path / "plugins" / "profile").iterdir()
    profile = load_run(run_dir)
    assert len(named(profile, "train")) == 6
    assert named(profile, "IteratorGetNextOp::DoCompute")
    assert named(profile, "Iterator::Batch::Decode") and named(profile, "Iterator::Batch::Source")
    threads = {line.name for line in profile.lines}
    assert {"MainThread", "demo-producer-0", "demo-producer-1"} <= threads
    assert "waiting for input" in out and str(run_dir) in out
    assert f"stepscope serve {tmp_path}" in out
    # The first page counts steps as every tool does (one step database): 6 markers, the first
    # and last kept (stepscope's own markers are whole, decision 622), and it says so.
    from stepscope.stats.steps.breakdown import build_step_db

    db = build_step_db(profile)
    summary = demo.summarize_run(run_dir)
    assert [s["step"] for s in summary["steps"]] == db.step_num.tolist()
    assert len(summary["steps"]) == 6 and "the first and the last kept" in out
    # and says what bounds the steps in the first page's own words, nothing of its own
    # (decision 577: "-> the input pipeline is the bottleneck" above "Bound by compute")
    from stepscope.tools.analysis import Analysis

    headline = Analysis(run_dir).tool("overview_page").bound_by.headline
    # (on a loaded machine the steps' thread waits for a core, said first: decision 700)
    assert headline.startswith(("Bound by ", "Waiting for a CPU core: ")), headline
    assert "Bound by " in headline and f"\n{headline}\n" in out
    assert "the input pipeline is the bottleneck" not in out


def test_demo_rejects_zero_steps(tmp_path: Path) -> None:
    from stepscope.errors import StepscopeError

    parser = argparse.ArgumentParser()
    demo.register(parser.add_subparsers())
    args = parser.parse_args(["demo", "--steps", "0", "--logdir", str(tmp_path)])
    with pytest.raises(StepscopeError, match="--steps"):
        args.func(args)
