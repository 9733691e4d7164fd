"""`stepscope report`: fits the terminal, never repeats advice, verdicts match their numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS
from tests.support.fixtures import FIXTURES

NCCL = FIXTURES / "kineto" / "a100_nccl_rank0.json.gz"  # diagnostics findings + category lines


def report(
    path: str,
    columns: str | None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # and stdout is captured: not a terminal
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert main(["report", path]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(("columns", "width"), [(None, 80), ("60", 60), ("132", 132)])
def test_lines_fit_the_terminal_width(
    columns: str | None,
    width: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = report(str(FIXTURES / "tf" / "big_ctl"), columns, monkeypatch, capsys)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    if width < 132:
        assert any(line.endswith("…") for line in lines)  # long op names cut with an ellipsis
    # Wrapped, not cut: XProf's verdict's last words are all there.
    assert "reducing the input time." in " ".join(line.strip() for line in lines)
    # what bounds the steps comes first, XProf's sentence on its own line after it
    text = " ".join(line.strip() for line in lines)
    assert text.index("Bound by ") < text.index("XProf's input verdict: Your program is HIGHLY")


def _potentially_input_bound(folder: Path) -> Path:
    """Steps of 10 ms, 9 ms of them traced host work and no input: 10% "All Others", which
    XProf (and stepscope below 15%) calls "POTENTIALLY input-bound"."""
    builder = XSpaceBuilder("loop")
    main_line = builder.plane("/host:CPU").line(1, "python")
    for k in range(4):
        t0 = 1_000 * MS + k * 10 * MS
        main_line.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main_line.event("forward", t0, 9 * MS // 2)
        main_line.event("backward", t0 + 5 * MS, 9 * MS // 2)
    path = folder / "loop.xplane.pb"
    path.write_bytes(builder.build().SerializeToString())
    return path


def test_potential_verdict_names_the_number_it_rests_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = report(str(_potentially_input_bound(tmp_path)), None, monkeypatch, capsys)
    verdict = " ".join(
        line.strip()
        for line in out.split("\nXProf's input verdict: ")[1].split("\n\n")[0].splitlines()
    )
    # XProf's sentence, unchanged, with the number it rests on
    assert verdict == (
        "Your program is POTENTIALLY input-bound because 10.0% of the total step time sampled "
        "is spent on 'All Others' time (which could be due to I/O or Python execution or both)."
    )
    # the headline says what the 10% is: untraced host time, and that the model computes 90%
    assert out.splitlines()[2].startswith("Bound by compute: 90.0% of the step time")
    rec = out.split("Recommendation\n")[1]
    assert rec.count("Python / host") == 1  # said once as a detail


def test_no_recommendation_is_given_twice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = report(str(NCCL), "200", monkeypatch, capsys).split("Recommendation\n")[1]
    items = [line for line in rec.splitlines() if line.startswith("  - ")]
    assert len(items) == len(set(items))
    # The diagnostics findings on TensorCores and collectives replace the generic lines.
    assert "Low TensorCore use" in rec and "mixed precision (bf16/fp16) could" not in rec
    assert "Collective communication time" in rec
    assert "spent in collective communication: overlap" not in rec


@pytest.mark.parametrize("part", ["before", "after"])
def test_a_run_the_flight_recorder_saved_says_so_and_what_its_ring_lacks(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    part: str,
) -> None:
    """A recorder save's report names its trigger and, for the ring it saved (bridges off),
    that the framework's ops are not in it: the model's work reads as python / host time,
    and the advice below must not be read as if that were the user's own Python."""
    run = tmp_path / "logs" / "plugins" / "profile" / "2026_11_30_06_54_46"
    run.mkdir(parents=True)
    _potentially_input_bound(tmp_path).rename(run / "vm.xplane.pb")
    marker = {"trigger": "slow_step", "reason": "step 3 took 30.1 ms, 3.0x the median", "step": 3}
    if part == "after":
        marker |= {"part": "after", "reason": "the 5 steps after: step 3 took 30.1 ms"}
    (run / "vm.recorder.json").write_text(json.dumps(marker))
    out = report(str(tmp_path / "logs"), None, monkeypatch, capsys)
    text = " ".join(line.strip() for line in out.split("\n\n")[0].splitlines())
    # the steps after a trigger do not hold the trigger's step: the reason names it (533)
    at = " at step 3" if part == "before" else ""
    assert f"Saved by the flight recorder (slow_step{at}): {marker['reason']}" in text
    lacks = "not the framework's ops (PyTorch, JAX, TensorFlow) nor the device's"
    assert (lacks in text) == (part == "before")
    # a run it did not save says nothing of it
    (run / "vm.recorder.json").unlink()
    assert "flight recorder" not in report(str(tmp_path / "logs"), None, monkeypatch, capsys)
