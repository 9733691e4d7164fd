"""A flight recorder save begins mid-run, and says so (decisions 530-531).

Its ring holds the last steps of a running loop: a slow first kept step is a slow step (the
one just after a checkpoint, or a save), not the program's warm-up. Before, the analysis read
it as warm-up ("Warm-up: step 651 took 10.69 ms") and left it out of the averages and the
advice. A ring that holds the program's first steps keeps its first step (the save cut the
ring at its start, so it is whole) and its warm-up is still found. Fake clock and `tick()` by
hand, as in test_recorder.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import stepscope
import stepscope.recorder as rec
from stepscope.cli.main import main
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.vocab.profiler import FIRST_STEP_WHOLE_STAT, STEPS_BEFORE_STAT
from tests.support.capture import load_run, named
from tests.support.recorder import MS, FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _start(logdir: Path, keep_steps: int) -> rec.Recorder:
    # no automatic save: the tests save by hand, as a user's `recorder.save()` or a trigger
    triggers = rec.Triggers(slow_step_factor=0, hang_s=0, on_sigusr1=False)
    return rec.start(str(logdir), keep_steps=keep_steps, triggers=triggers, sampler_hz=0, poll_s=10)


def _save(recorder: rec.Recorder, **kw: Any) -> Path:
    pending = recorder.save("user", "the test saves", **kw)
    run_dir = pending.result(30)
    assert run_dir is not None
    return run_dir


def _overview(run_dir: Path) -> dict[str, Any]:
    ctx = ToolContext(open_run(str(run_dir)), ALL_HOSTS, ProfileStore(use_cache=False), {})
    page: dict[str, Any] = output.to_json(get_tool("overview_page").build(ctx))
    return page


def _report(run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> str:
    monkeypatch.setenv("COLUMNS", "2000")  # one line per paragraph
    capsys.readouterr()
    assert main(["report", str(run_dir), "--no-cache"]) == 0
    out: str = capsys.readouterr().out
    return out


def _host_stats(run_dir: Path) -> dict[str, Any]:
    (plane,) = [p for p in load_run(run_dir).planes if p.name == "/host:CPU"]
    return dict(plane.stats)


def test_a_ring_saved_mid_run_has_no_warm_up_its_slow_first_steps_are_slow_steps(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    recorder = _start(tmp_path, keep_steps=10)
    _run_steps(clock, 0, 30)
    # steps 30 and 31 slow (a checkpoint, then the step its writing slowed): the ring's first
    _run_steps(clock, 30, 10, slow={30: 12, 31: 8})
    run_dir = _save(recorder)
    marker = _marker(run_dir)
    assert marker["steps"] == [30, 39] and marker["steps_before"] == 30
    assert _host_stats(run_dir)[STEPS_BEFORE_STAT] == 30
    overview = _overview(run_dir)
    # the first kept step is whole (the save cut the ring at its start): XProf's rule keeps it
    assert [s["step"] for s in overview["steps"]] == list(range(30, 40))
    assert overview["steady_state"] is None  # was "Warm-up: steps 30-31" (31 without 531)
    text = _report(run_dir, monkeypatch, capsys)
    assert "Warm-up" not in text and "Once warm" not in text
    assert (
        "It holds the loop's steps 30 to 39, recorded mid-run (the recorder saw 30 steps "
        "before them): its first steps are no warm-up." in text
    )
    # the slow steps are told as such, in the average and the slow-steps advice
    assert "Step time: avg 2.90 ms" in text  # (12.1 + 8.1 + 8 x 1.1) / 10
    assert "2 of 10 steps take up to 11.0x the median step" in text
    assert "first step of a profile is seldom the steady state" not in text
    # nor does `stepscope summary` (what `stepscope diff` compares) leave them out as warm-up
    summary = tmp_path / "summary.json"
    assert main(["summary", str(run_dir), "-o", str(summary), "--no-cache"]) == 0
    assert json.loads(summary.read_text())["steps"]["warmup_steps"] == 0


def test_a_slow_first_step_of_a_ring_mid_run_is_not_called_the_profiles_first_step(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A first step 2.5x the others (no warm-up by size, a slow step by the findings' 1.5x):
    the slow-steps finding said "The profile's first step takes ... Profile after warm-up"."""
    recorder = _start(tmp_path, keep_steps=10)
    _run_steps(clock, 0, 30)
    with stepscope.step(30):
        clock.advance(MS * 5 // 2)  # untraced: 2.5 ms
    _run_steps(clock, 31, 9)
    text = _report(_save(recorder), monkeypatch, capsys)
    assert "1 of 10 steps take up to" in text
    assert "The profile's first step" not in text and "Profile after warm-up" not in text


def test_a_ring_holding_the_programs_start_keeps_its_first_step_and_its_warm_up(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    recorder = _start(tmp_path, keep_steps=50)
    _run_steps(clock, 0, 20, slow={0: 40})  # step 0 compiles
    run_dir = _save(recorder)
    marker = _marker(run_dir)
    assert marker["steps"] == [0, 19] and marker["steps_before"] == 0
    stats = _host_stats(run_dir)
    assert stats[STEPS_BEFORE_STAT] == 0 and stats[FIRST_STEP_WHOLE_STAT] == 1
    overview = _overview(run_dir)
    assert [s["step"] for s in overview["steps"]] == list(range(20))  # step 0 not dropped
    assert overview["steady_state"]["warmup_steps"] == [0]
    text = _report(run_dir, monkeypatch, capsys)
    assert "Warm-up: step 0 took 40.10 ms" in text and "recorded mid-run" not in text


def test_a_ring_cut_inside_a_step_drops_that_step_as_xprof_does(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A save of the last milliseconds (another rank's window) cuts the ring inside a step:
    that step lost its work, and XProf's rule drops it."""
    recorder = _start(tmp_path, keep_steps=50)
    _run_steps(clock, 0, 20)
    # steps of 1.1 ms, the save at 22 ms: from 14.25 ms, after step 12's compute (13.2-14.2)
    run_dir = _save(recorder, window_ns=MS * 775 // 100)
    stats = _host_stats(run_dir)
    assert FIRST_STEP_WHOLE_STAT not in stats and stats[STEPS_BEFORE_STAT] == 12
    kept = [m["stats"]["step_num"] for m in named(load_run(run_dir), "train")]
    assert kept == list(range(12, 20))  # step 12's marker straddles the cut
    assert [s["step"] for s in _overview(run_dir)["steps"]] == list(range(13, 20))


def test_a_hang_is_said_to_be_after_the_last_kept_step(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The hung step is open when the ring is saved: the run's last step is the one before."""
    recorder = _start(tmp_path, keep_steps=10)
    _run_steps(clock, 0, 40)
    run_dir = _save(recorder)
    (path,) = run_dir.glob("*.recorder.json")
    path.write_text(path.read_text().replace('"trigger": "user"', '"trigger": "hang"'))
    text = _report(run_dir, monkeypatch, capsys)
    assert "Saved by the flight recorder (hang after step 39)" in text


def test_a_hang_in_the_first_step_says_no_step_had_ended(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A program stuck in its first step: the ring has no finished step, and the report
    read only "Steps: 0 (none: no step markers ...)", as if the loop marked none."""
    triggers = rec.Triggers(slow_step_factor=0, hang_s=1, on_sigusr1=False)
    recorder = rec.start(str(tmp_path), triggers=triggers, sampler_hz=0, poll_s=10)
    with stepscope.step(0):
        clock.advance(1_500 * MS)
        recorder.tick()
    (pending,) = recorder.requested
    run_dir = pending.result(30)
    assert run_dir is not None and pending.trigger == "hang"
    assert _marker(run_dir)["steps"] is None and _marker(run_dir)["steps_before"] == 0
    text = _report(run_dir, monkeypatch, capsys)
    assert "No step had ended since the recorder started: the step that hangs is its first" in (
        text
    )


def test_a_step_the_byte_bound_cut_is_not_whole_and_steps_past_the_history_count(
    tmp_path: Path, clock: FakeClock
) -> None:
    """One step too big for the ring's bytes keeps only its newest events: it is not whole.
    The steps before the save are counted past the step history's own bound."""
    recorder = rec.start(
        str(tmp_path),
        keep_steps=10,
        triggers=rec.Triggers(slow_step_factor=0, hang_s=0, on_sigusr1=False),
        sampler_hz=0,
        poll_s=10,
        max_bytes=1 << 16,  # 262 events
        history_steps=20,
    )
    _run_steps(clock, 0, 100)
    recorder.tick()
    with stepscope.step(100):
        for _ in range(400):
            with stepscope.trace("op"):
                clock.advance(MS // 100)
    recorder.tick()  # the byte bound keeps the step's newest 262 events
    run_dir = _save(recorder)
    marker = _marker(run_dir)
    assert marker["steps"] == [100, 100] and marker["steps_before"] == 100
    stats = _host_stats(run_dir)
    assert FIRST_STEP_WHOLE_STAT not in stats and stats[STEPS_BEFORE_STAT] == 100
