"""A slow step the recorder saw and did not save is told (decision 320): a user loop with
the recorder left on saved nothing for a 25x stall 0.3 s before `stop` and said nothing at
the default log level. Fake clock, `tick()` by hand (test_recorder_slow.py): no assertion
depends on this machine's speed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import stepscope.recorder as rec
from tests.support.recorder import FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _start(logdir: Path, **triggers: float) -> rec.Recorder:
    settings = {
        "warmup_steps": 5,
        "settle_steps": 10,
        "slow_step_factor": 3.0,
        "slow_floor_s": 0.0,
        **triggers,
    }
    return rec.start(str(logdir), triggers=rec.Triggers(**settings), sampler_hz=0, poll_s=10)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_slow_step_just_before_stop_is_saved(tmp_path: Path, clock: FakeClock) -> None:
    """The watchdog ended at `stop` without judging the steps since its last wake-up (up to
    poll_s of them): a stall in the last 0.5 s of a run was lost, silently."""
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 30)
    recorder.tick()
    assert recorder.slow.armed
    _run_steps(clock, 30, 3, slow={31: 25})  # no tick before stop
    rec.stop()
    (pending,) = recorder.requested
    run_dir = pending.result(0)
    assert run_dir is not None and "step 31 took" in _marker(run_dir)["reason"]
    assert recorder.status()["saved"] == [str(run_dir)]


def test_a_slow_step_waiting_for_its_steps_after_is_saved_at_stop(
    tmp_path: Path, clock: FakeClock
) -> None:
    """With ``after_steps``, a slow step 2 steps before `stop` was dropped ("stopped before
    the steps after"): the steps before it, the ones that matter, are saved instead."""
    recorder = _start(tmp_path, after_steps=5)
    _run_steps(clock, 0, 30)
    _run_steps(clock, 30, 3, slow={31: 25})
    recorder.tick()
    (pending,) = recorder.requested
    assert not pending.done()
    rec.stop()
    run_dir = pending.result(0)
    assert run_dir is not None and "step 31 took" in _marker(run_dir)["reason"]


def test_a_slow_step_on_a_noisy_machine_is_told_and_counted(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Told once, then again only for a step twice as bad as the last one told."""
    recorder = _start(tmp_path)
    # the typical step doubles every 10 steps (another job's load): never arms
    moving = {n: 2 ** ((n - 5) // 10) for n in range(5, 45)}
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        _run_steps(clock, 0, 40, slow=moving)
        _run_steps(clock, 40, 4, slow={**moving, 40: 30, 41: 45, 43: 90})
        recorder.tick()
    assert not recorder.slow.armed and not recorder.requested
    first, worse = _warnings(caplog)
    assert "step 40 took 30.1 ms" in first and "NOT saved (machine too noisy)" in first
    assert "arms within 1.5x" in first and "step 43 took 90.1 ms" in worse
    missed = recorder.status()["missed_slow_steps"]["machine too noisy"]
    assert (missed["count"], missed["first_step"], missed["worst_step"]) == (3, 40, 43)


def test_a_slow_step_before_the_baseline_is_ready_is_told(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = _start(tmp_path)
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        _run_steps(clock, 0, 9, slow={1: 50})  # the warm-up's slow steps: not told
        _run_steps(clock, 9, 1, slow={9: 25})  # the 5th step after the warm-up
        recorder.tick()
    (told,) = _warnings(caplog)
    assert "step 9 took" in told and "NOT saved (baseline not ready)" in told
    assert "5 of the 20 steps after the warm-up seen" in told
    assert recorder.status()["missed_slow_steps"]["baseline not ready"]["count"] == 1


def test_a_rate_limited_slow_step_is_told(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 30)
    _run_steps(clock, 30, 5, slow={31: 4})  # 3.5x: saved
    recorder.tick()
    assert recorder.requested[0].result(30) is not None
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        _run_steps(clock, 35, 5, slow={36: 5})  # 4.6x: rate-limited
        recorder.tick()
    (told,) = [t for t in _warnings(caplog) if "NOT saved" in t]
    assert "step 36 took" in told and "(rate-limited): rate limit" in told
    assert recorder.status()["missed_slow_steps"]["rate-limited"]["worst_step"] == 36
