"""The watchdog judges an armed trigger's steps in one loop (`SlowStepTrigger.observe_armed`):
the same saves, reasons, missed steps and counts as judging them one at a time. Fake clock,
`tick()` by hand (tests/support/recorder.py): nothing depends on this machine's speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import stepscope.recorder as rec
from stepscope.capture.recorder.recorder import Recorder
from stepscope.capture.recorder.slow import SlowStepTrigger
from tests.support.recorder import FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _run(logdir: Path, clock: FakeClock) -> list[Any]:
    recorder = rec.start(
        str(logdir),
        triggers=rec.Triggers(
            warmup_steps=5, settle_steps=10, slow_step_factor=3.0, slow_floor_s=0.0
        ),
        sampler_hz=0,
        poll_s=10,
    )
    seen: list[Any] = []
    try:
        first = 0
        # warm-up and arming, then stretches with slow steps: one saved, one rate-limited,
        # one escalated past the limit, two in one wake-up
        for count, slow in ((30, {}), (40, {52: 4}), (20, {75: 5}), (20, {95: 30}), (60, {})):
            _run_steps(clock, first, count, slow)
            first += count
            recorder.tick()
            for pending in recorder.requested:  # each save written before the next steps
                pending.result(30)
        _run_steps(clock, first, 30, {first + 3: 60, first + 20: 200})
        recorder.tick()
        for pending in recorder.requested:
            pending.result(30)
        status = recorder.status()
        seen.append((status["armed"], status["steps_judged"], status["missed_slow_steps"]))
        seen.append([(p.trigger, p.reason, p.skipped) for p in recorder.requested])
        runs = [p.result(30) for p in recorder.requested]
        seen.append([_marker(run)["reason"] for run in runs if run is not None])
    finally:
        rec.stop()
    return seen


def test_judging_in_one_loop_saves_what_judging_each_step_saves(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[int] = []
    real = SlowStepTrigger.observe_armed

    def counted(self: SlowStepTrigger, nums: list[int], durs: list[int]) -> Any:
        batches.append(len(durs))
        return real(self, nums, durs)

    monkeypatch.setattr(SlowStepTrigger, "observe_armed", counted)
    batched = _run(tmp_path / "batched", clock)
    assert batches  # the armed wake-ups took the one loop
    # the saver "overlapping" every wake-up's steps: each step judged on its own, as before
    monkeypatch.setattr(Recorder, "_saver_time_in_any", lambda self, steps: 1)
    batches.clear()
    one_by_one = _run(tmp_path / "one", clock)
    assert not batches
    assert batched == one_by_one
    assert len(batched[1]) >= 3  # saves were made: the comparison compared something
