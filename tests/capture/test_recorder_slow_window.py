"""A slow step's save holds the slow step (decision 515).

The watchdog judges the steps that ended since it last woke (every ``poll_s``, or after
`WAKE_STEPS` steps): with 1 ms steps a slow step is found up to hundreds of steps after it
ended, and a save cut at the detection held the last ``keep_steps`` steps then, without the
slow step (a 301 ms step saved as a run of 1 ms steps). Fake clock and `tick()` by hand, as
in test_recorder.py: the tests set how many steps end between the slow step and its tick.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import stepscope
import stepscope.recorder as rec
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.capture import load_run, named
from tests.support.recorder import MS, FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _start(logdir: Path, keep_steps: int = 10, **triggers: Any) -> rec.Recorder:
    settings = {
        "warmup_steps": 5,
        "settle_steps": 10,
        "slow_step_factor": 3.0,
        "slow_floor_s": 0.0,
        **triggers,
    }
    return rec.start(
        str(logdir),
        keep_steps=keep_steps,
        triggers=rec.Triggers(**settings),
        sampler_hz=0,
        poll_s=10,
    )


def _armed(recorder: rec.Recorder, clock: FakeClock) -> None:
    _run_steps(clock, 0, 30)
    recorder.tick()
    assert recorder.slow.armed and not recorder.requested


def _steps_in(run_dir: Path) -> list[int]:
    return [int(m["stats"]["step_num"]) for m in named(load_run(run_dir), "train")]


def _history(run_dir: Path) -> list[int]:
    doc = json.loads(next(run_dir.glob("*.recorder_steps.json")).read_text())
    return [row[0] for row in doc["steps"]]


def test_a_slow_step_judged_200_steps_after_it_ended_is_the_runs_last_step(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _start(tmp_path)
    _armed(recorder, clock)
    with stepscope.trace("epoch"):  # around the slow step and past its end: kept whole
        _run_steps(clock, 30, 6, slow={30: 30})
    _run_steps(clock, 36, 200)  # then no wake-up for 200 steps
    recorder.tick()
    (pending,) = recorder.requested
    run_dir = pending.result(30)
    assert run_dir is not None
    marker = _marker(run_dir)
    assert marker["step"] == 30 and "step 30 took 30.1 ms" in marker["reason"]
    assert marker["steps"] == [21, 30]  # keep_steps up to the slow step, as the marker says
    assert _steps_in(run_dir) == list(range(21, 31))
    assert _history(run_dir) == list(range(31))  # the step history ends where the run does
    profile = load_run(run_dir)
    (epoch,) = named(profile, "epoch")
    assert epoch["dur_ns"] == 6 * 11 * MS // 10 + 29 * MS
    # the steps after the slow one left no event behind
    assert len(named(profile, "compute")) == 10
    ctx = ToolContext(open_run(str(run_dir)), ALL_HOSTS, ProfileStore(use_cache=False), {})
    steps = output.to_json(get_tool("overview_page").build(ctx))["steps"]
    slowest = max(steps, key=lambda s: s["duration_ns"])
    assert "30" in (str(slowest.get("step")), slowest.get("name"))


def test_with_after_steps_the_k_steps_after_the_slow_step_are_kept(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _start(tmp_path, after_steps=3)
    _armed(recorder, clock)
    _run_steps(clock, 30, 2, slow={30: 30})
    recorder.tick()  # found one step after it: the save waits for two more
    (pending,) = recorder.requested
    assert not pending.done()
    _run_steps(clock, 32, 40)  # the next wake-up is 40 steps later; the ring was trimmed
    recorder.tick()
    run_dir = pending.result(30)
    assert run_dir is not None
    assert _marker(run_dir)["steps"] == [21, 33]
    assert _steps_in(run_dir) == list(range(21, 34))
    assert _history(run_dir)[-1] == 33


def test_after_steps_counted_from_the_slow_step_when_found_late(
    tmp_path: Path, clock: FakeClock
) -> None:
    """Found 60 steps after it ended: its K steps after have all ended, it saves at once."""
    recorder = _start(tmp_path, after_steps=3)
    _armed(recorder, clock)
    _run_steps(clock, 30, 61, slow={30: 30})
    recorder.tick()
    run_dir = recorder.requested[0].result(30)
    assert run_dir is not None and _marker(run_dir)["steps"] == [21, 33]


def test_a_recorder_stopped_before_the_steps_after_keeps_the_slow_step(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _start(tmp_path, after_steps=5)
    _armed(recorder, clock)
    _run_steps(clock, 30, 3, slow={30: 30})
    recorder.tick()
    (pending,) = recorder.requested
    rec.stop()
    run_dir = pending.result(30)
    assert run_dir is not None and _marker(run_dir)["steps"] == [21, 32]


def test_other_triggers_still_save_the_last_steps(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path, after_steps=2)
    _armed(recorder, clock)
    _run_steps(clock, 30, 20)
    user = rec.save("now").result(30)
    assert user is not None and _marker(user)["steps"] == [40, 49]
    assert _history(user)[-1] == 49
    signal = recorder.save("signal", "SIGUSR1")
    _run_steps(clock, 50, 1)
    recorder.tick()
    assert not signal.done()
    _run_steps(clock, 51, 1)
    recorder.tick()
    saved = signal.result(30)  # 2 steps after the signal, counted from it
    assert saved is not None and _marker(saved)["steps"] == [40, 51]
