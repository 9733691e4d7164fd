"""Issue #28 item 8: the slow-step trigger keeps the worst step (escalation past the rate
limit) and arms only once step times have settled. Fake clock, `tick()` by hand, as in
test_recorder.py: no assertion depends on this machine's speed."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

import stepscope.recorder as rec
from tests.support.recorder import MS, FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _hold_saves(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Hold each save's write until ``release`` is set; ``entered``: a write has begun."""
    from stepscope.capture.recorder import snapshot

    real, entered, release = snapshot.write, threading.Event(), threading.Event()

    def held_write(*args: Any) -> Path:
        entered.set()
        assert release.wait(30)
        return real(*args)

    monkeypatch.setattr(snapshot, "write", held_write)
    return entered, release


def _start(logdir: Path, **triggers: float) -> rec.Recorder:
    settings = {
        "warmup_steps": 5,
        "settle_steps": 10,
        "slow_step_factor": 3.0,
        "slow_floor_s": 0.0,
        **triggers,
    }
    return rec.start(str(logdir), triggers=rec.Triggers(**settings), sampler_hz=0, poll_s=10)


def test_a_clearly_worse_step_is_saved_despite_the_rate_limit(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A 3.5x step was saved and a 10x step seconds later dropped by the 300 s limit."""
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 30)  # 1.1 ms steps: warm-up, settled, armed
    recorder.tick()
    assert recorder.slow.armed
    _run_steps(clock, 30, 5, slow={31: 4})  # 3.5x the median: saved
    recorder.tick()
    # the steps below must not run while it is being saved (they would not be judged)
    assert recorder.requested[0].result(30) is not None
    _run_steps(clock, 35, 5, slow={36: 5})  # 4.6x: not twice as bad, rate-limited
    recorder.tick()
    _run_steps(clock, 40, 5, slow={41: 11})  # 10x: 2.8x worse than the saved one
    recorder.tick()
    first, limited, worse = recorder.requested
    assert "rate limit" in limited.skipped
    saved = worse.result(30)
    assert first.result(30) is not None and saved is not None
    marker = _marker(saved)
    assert "step 41 took" in marker["reason"] and "saved despite the rate limit" in marker["reason"]
    assert marker["escalation"] >= 2.0
    _run_steps(clock, 45, 5, slow={46: 20})  # 1.8x worse: limited once more
    recorder.tick()
    assert "rate limit" in recorder.requested[-1].skipped


def test_no_escalation_when_turned_off(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path, escalation_factor=0)
    _run_steps(clock, 0, 30)
    _run_steps(clock, 30, 12, slow={31: 4, 41: 11})
    recorder.tick()
    assert [p.skipped.startswith("rate limit") for p in recorder.requested] == [False, True]


def test_the_trigger_arms_only_once_the_typical_step_settles(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """On a loaded machine the trigger fired in every recorder start: a pipeline filling (or
    another job starting) moves the typical step, and its first steps read as slow."""
    recorder = _start(tmp_path)
    moving = {n: 3 for n in range(15, 25)}  # the median of 10 steps goes 1.1 -> 3.1 ms
    _run_steps(clock, 0, 25, slow=moving)
    _run_steps(clock, 25, 1, slow={25: 40})
    recorder.tick()
    assert not recorder.slow.armed and not recorder.requested
    note = recorder.slow.armed_note
    assert "not armed: the median of the last 10 steps" in note and "(arms within 1.5x)" in note
    with caplog.at_level(logging.INFO, logger="stepscope"):
        _run_steps(clock, 26, 12, slow=dict.fromkeys(range(26, 38), 3))  # settled at 3.1 ms
        recorder.tick()
    assert recorder.slow.armed and "armed after" in caplog.text
    _run_steps(clock, 38, 2, slow={38: 3, 39: 40})
    recorder.tick()
    (pending,) = recorder.requested
    assert (
        pending.result(30) is not None and "step 39 took" in _marker(pending.result(30))["reason"]
    )


def test_warm_up_steps_are_not_the_baseline(tmp_path: Path, clock: FakeClock) -> None:
    """Slow first steps (compilation) neither arm the trigger nor raise the median."""
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 5, slow=dict.fromkeys(range(5), 50))
    _run_steps(clock, 5, 20)
    recorder.tick()
    assert recorder.slow.armed and list(recorder.slow.recent) == [int(1.1 * MS)] * 20


def test_settings_are_checked() -> None:
    with pytest.raises(rec.InvalidRecorderConfigError, match="settle_spread"):
        rec.Triggers(settle_spread=0.5)
    with pytest.raises(rec.InvalidRecorderConfigError, match="escalation_factor"):
        rec.Triggers(escalation_factor=1.0)


def test_a_step_the_saver_slowed_triggers_no_save(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saver's build and write take the GIL from the training thread (the first save's
    imports alone held it 24-59 ms on a loaded machine), and each step it slowed escalated
    past the rate limit into another save, which slowed the next steps in turn."""
    entered, release = _hold_saves(monkeypatch)
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 30)
    _run_steps(clock, 30, 5, slow={31: 4})  # 3.5x: saved
    recorder.tick()
    assert entered.wait(30)  # the saver is at work from here on
    _run_steps(clock, 35, 5, slow={36: 11})  # 10x while it works: no escalation
    recorder.tick()
    assert len(recorder.requested) == 1
    release.set()
    assert recorder.requested[0].result(30) is not None
    _run_steps(clock, 40, 5, slow={41: 11})  # 10x after the save: escalated and saved
    recorder.tick()
    assert len(recorder.requested) == 2
    assert "step 41 took" in _marker(recorder.requested[1].result(30))["reason"]


def test_a_stall_a_short_save_overlapped_is_judged_without_the_saves_time(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 300 ms stall that began while a save ran for 5 more ms was never judged: a user's
    301 ms step was neither saved nor told (decision 517)."""
    import stepscope

    entered, release = _hold_saves(monkeypatch)
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 30)
    _run_steps(clock, 30, 5, slow={31: 4})  # 3.5x: saved
    recorder.tick()
    assert entered.wait(30)
    with stepscope.step(35):
        clock.advance(5 * MS)  # the save's last 5 ms
        release.set()
        assert recorder.requested[0].result(30) is not None
        for _ in range(3000):  # the saver thread records when it ended after `result`
            if not recorder._saver.busy_since:
                break
            threading.Event().wait(0.01)
        clock.advance(300 * MS)
    _run_steps(clock, 36, 2)
    recorder.tick()
    assert len(recorder.requested) == 2
    marker = _marker(recorder.requested[1].result(30) or Path())
    assert marker["step"] == 35 and marker["saver_ns"] == 5 * MS
    assert "step 35 took 305.0 ms" in marker["reason"]
    assert "the recorder's own save ran 5.0 ms of it" in marker["reason"]
    assert max(recorder.slow.recent) < 100 * MS  # not part of the baseline
