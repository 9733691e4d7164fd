"""A step that opens after a slow one wakes the watchdog at once (decision 516).

The watchdog's own poll is 10 s away in these tests: only the step hook can wake it, so a
save made at all shows the early wake-up. The fake clock makes the slow step; the waits are
for the watchdog thread's work, never a measured time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import stepscope.recorder as rec
from stepscope.capture.recorder.recorder import _NEVER
from tests.support.recorder import FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _until(done: Callable[[], bool]) -> bool:
    # the watchdog thread's turn on a loaded machine; half its 10 s poll, so that what its
    # own poll does is not taken for the step hook's wake-up
    for _ in range(500):
        if done():
            return True
        time.sleep(0.01)
    return False


def _armed(tmp_path: Path, clock: FakeClock) -> rec.Recorder:
    triggers = rec.Triggers(warmup_steps=5, settle_steps=10, slow_step_factor=3.0, slow_floor_s=0)
    recorder = rec.start(str(tmp_path), keep_steps=10, triggers=triggers, sampler_hz=0, poll_s=10)
    _run_steps(clock, 0, 30)
    recorder.tick()
    assert recorder.slow.armed
    recorder._wake.set()  # a regular wake-up: the watchdog arms the early one after it
    assert _until(lambda: recorder._slow_ns < _NEVER)
    return recorder


def test_the_step_after_a_slow_one_wakes_the_watchdog_which_saves_it(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _armed(tmp_path, clock)
    _run_steps(clock, 30, 2, slow={30: 30})  # step 31 opens after the slow step 30
    assert _until(lambda: len(recorder.requested) > 0)
    run_dir = recorder.requested[0].result(30)
    assert run_dir is not None and _marker(run_dir)["step"] == 30
    assert _marker(run_dir)["steps"] == [21, 30]


def test_one_early_wake_up_until_the_next_regular_one(tmp_path: Path, clock: FakeClock) -> None:
    """A run of slow steps must not wake the watchdog (and take the GIL) every step."""
    recorder = _armed(tmp_path, clock)
    ticks: list[int] = []
    tick = recorder.tick

    def counted() -> None:
        ticks.append(threading.get_ident())
        tick()

    recorder.tick = counted  # type: ignore[method-assign]
    _run_steps(clock, 30, 2, slow={30: 30})
    assert _until(lambda: len(recorder.requested) > 0)
    _run_steps(clock, 32, 20, slow={n: 30 for n in range(32, 52)})
    assert not recorder._wake.is_set() and len(ticks) == 1
