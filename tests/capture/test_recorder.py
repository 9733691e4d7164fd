"""The flight recorder: ring bounds, triggers, rate limits, background saves as runs.

Times come from a fake clock (the annotations' and the recorder's `perf_counter_ns`), and
the tests drive the watchdog with `tick()` themselves (its own poll is 10 s away), so no
assertion depends on how fast this machine runs. The watchdog still wakes every WAKE_STEPS
opened steps, so its tick may run beside a test's: the recorder must bear two at once.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import stepscope
import stepscope.recorder as rec
from stepscope.capture.recorder.ring import EVENT_BYTES
from stepscope.errors import StepscopeError
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.capture import load_run, named
from tests.support.recorder import MS, FakeClock
from tests.support.recorder import marker as _marker
from tests.support.recorder import run_steps as _run_steps


def _start(logdir: Path, **kw: Any) -> rec.Recorder:
    triggers = kw.pop(
        "triggers",
        rec.Triggers(warmup_steps=2, settle_steps=3, slow_step_factor=5.0, slow_floor_s=0),
    )
    kw.setdefault("sampler_hz", 0)
    return rec.start(str(logdir), triggers=triggers, poll_s=10, **kw)


def _saved(recorder: rec.Recorder) -> list[rec.PendingSave]:
    return [p for p in recorder.requested if p.result(30) is not None]


def test_slow_step_saves_it_with_the_steps_before_and_the_overview_shows_it(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _start(tmp_path, keep_steps=10)
    _run_steps(clock, 0, 33, slow={30: 10})
    recorder.tick()
    (pending,) = recorder.requested
    run_dir = pending.result(30)
    assert run_dir is not None and pending.trigger == "slow_step"
    marker = _marker(run_dir)
    assert (
        marker["trigger"] == "slow_step"
        and "step 30 took 10.1 ms, 9.2x the median 1.1 ms" in marker["reason"]
    )
    # the 10 steps up to the slow one: the two that ended before the tick judged it are not
    assert marker["steps"] == [21, 30]
    profile = load_run(run_dir)
    assert [m["stats"]["step_num"] for m in named(profile, "train")] == list(range(21, 31))
    assert any("trigger 'slow_step'" in w for w in profile.warnings)
    ctx = ToolContext(open_run(str(run_dir)), ALL_HOSTS, ProfileStore(use_cache=False), {})
    steps = output.to_json(get_tool("overview_page").build(ctx))["steps"]
    slowest = max(steps, key=lambda s: s["duration_ns"])
    assert str(slowest["step"]) == "30" or slowest["name"] == "30"
    history = json.loads(next(run_dir.glob("*.recorder_steps.json")).read_text())
    assert [row[0] for row in history["steps"]] == list(range(31))  # summaries outlive events


def test_exception_in_a_step_saves_it_with_its_traceback(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 3)

    def failing_loss() -> None:
        raise ValueError("loss is NaN")

    with pytest.raises(ValueError), stepscope.step(3):
        failing_loss()
    (pending,) = recorder.requested
    run_dir = pending.result(30)
    assert run_dir is not None
    marker = _marker(run_dir)
    assert marker["trigger"] == "exception"
    assert marker["reason"] == "ValueError in step 3: loss is NaN"
    assert marker["steps"] == [0, 3]  # from the saved events: no watchdog wake-up came yet
    assert (
        "failing_loss" in marker["traceback"] and "ValueError: loss is NaN" in marker["traceback"]
    )
    profile = load_run(run_dir)
    assert [m["stats"]["step_num"] for m in named(profile, "train")] == [0, 1, 2, 3]


def test_uncaught_exception_hook_saves_once_per_exception(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path, triggers=rec.Triggers(min_interval_s=0, slow_floor_s=0))
    _run_steps(clock, 0, 2)
    error = RuntimeError("worker died")
    seen: list[BaseException] = []
    import stepscope.capture.recorder as package

    package._previous_hooks["threading"] = lambda args: seen.append(args.exc_value)
    thread = threading.Thread(target=lambda: (_ for _ in ()).throw(error), name="loader")
    thread.start()
    thread.join()
    assert seen == [error]  # the program's own hook still runs
    assert recorder.on_exception(error, "again") is None  # the same exception saves once
    (pending,) = recorder.requested
    marker = _marker(pending.result(30) or Path())
    assert marker["reason"].startswith("RuntimeError in thread 'loader' (uncaught)")


def test_hang_saves_the_stack_of_every_thread(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path, triggers=rec.Triggers(hang_s=30))
    _run_steps(clock, 0, 3)
    opened, release = threading.Event(), threading.Event()

    def stuck_in_allreduce() -> None:
        with stepscope.step(3):
            opened.set()
            release.wait(30)

    worker = threading.Thread(target=stuck_in_allreduce, name="trainer")
    worker.start()
    try:
        opened.wait(30)
        clock.advance(29 * 10**9)
        recorder.tick()
        assert not recorder.requested  # 29 s: not yet
        clock.advance(2 * 10**9)
        recorder.tick()
        recorder.tick()  # one save per hung step
    finally:
        release.set()
        worker.join()
    (pending,) = recorder.requested
    marker = _marker(pending.result(30) or Path())
    assert marker["trigger"] == "hang"
    assert "'trainer' has been open for 31.0 s" in marker["reason"]
    stacks = marker["stacks"]
    trainer = [text for label, text in stacks.items() if label.startswith("trainer ")]
    assert len(trainer) == 1 and "stuck_in_allreduce" in trainer[0]
    assert any(label.startswith("MainThread ") for label in stacks)
    assert any(label.startswith("stepscope-recorder ") for label in stacks)


def test_sigusr1_saves(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 4)
    os.kill(os.getpid(), signal.SIGUSR1)
    recorder.tick()
    (pending,) = recorder.requested
    marker = _marker(pending.result(30) or Path())
    assert marker["trigger"] == "signal" and marker["reason"] == "SIGUSR1 received"
    rec.stop()
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL  # handed back


def test_rate_limit_holds_per_trigger_and_user_saves_are_not_limited(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _start(tmp_path)
    _run_steps(clock, 0, 10)
    _run_steps(clock, 10, 3, slow={10: 20})
    recorder.tick()
    # saved before the next steps run: a step the save overlaps is not judged (decision 196)
    assert recorder.requested[0].result(30) is not None
    _run_steps(clock, 13, 3, slow={13: 20})
    recorder.tick()
    first, second = recorder.requested
    assert first.result(30) is not None
    assert second.result(30) is None and "rate limit" in second.skipped
    assert rec.save("one").result(30) is not None
    assert rec.save("two").result(30) is not None
    assert len(recorder.saved) == 3


def test_after_steps_saves_the_steps_after_the_trigger_too(
    tmp_path: Path, clock: FakeClock
) -> None:
    triggers = rec.Triggers(
        warmup_steps=2, settle_steps=3, slow_step_factor=5.0, after_steps=3, slow_floor_s=0
    )
    recorder = _start(tmp_path, triggers=triggers)
    _run_steps(clock, 0, 11, slow={10: 20})
    recorder.tick()
    (pending,) = recorder.requested
    assert not pending.done()
    _run_steps(clock, 11, 3)
    recorder.tick()
    profile = load_run(pending.result(30))
    assert named(profile, "train")[-1]["stats"]["step_num"] == 13


def test_ring_stays_within_its_step_and_byte_bounds(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path, keep_steps=20, max_bytes=1 << 16, history_steps=500)
    for block in range(30):
        for n in range(block * 100, block * 100 + 100):
            with stepscope.step(n):
                for _ in range(4):
                    with stepscope.trace("op"):
                        clock.advance(MS)
        recorder.tick()
        assert recorder.ring.estimated_bytes() <= 1 << 16
    assert len(recorder.ring.history) == 500 and recorder.ring.history[-1].step_num == 2999
    recorder.ring.max_events = 10**9  # now only keep_steps bounds it
    _run_steps(clock, 3000, 50)
    recorder.tick()
    events = recorder.session.host.buffer().events
    steps = [e for e in events if e[4] and "_r" in e[4]]
    assert [e[4]["step_num"] for e in steps] == list(range(3030, 3050))
    assert recorder.ring.estimated_bytes() <= 20 * 2 * EVENT_BYTES


def test_the_ring_is_trimmed_under_the_recorders_lock(tmp_path: Path, clock: FakeClock) -> None:
    """The watchdog's wake-up and a direct tick may run at once; two trims at once bisected a
    buffer the other was cutting (an IndexError seen in CI) and moved the scan's cursor while a
    scan read it. Checked here as the rule that prevents it: trim only with the lock held."""
    recorder = _start(tmp_path, keep_steps=5)
    trim = recorder.ring.trim
    held: list[bool] = []

    def checked_trim() -> None:
        held.append(recorder._lock._is_owned())  # type: ignore[attr-defined]
        trim()

    recorder.ring.trim = checked_trim  # type: ignore[method-assign]
    _run_steps(clock, 0, 12)
    recorder.tick()
    assert held and all(held)


def test_a_request_popped_by_another_tick_is_not_an_error(tmp_path: Path) -> None:
    """Two ticks at once (the watchdog's and a direct one): the queue can empty between a
    check that it has requests and the pop."""

    class EmptiedMeanwhile(collections.deque):  # type: ignore[type-arg]
        def __bool__(self) -> bool:
            return True  # as seen just before the other thread took the last request

    recorder = _start(tmp_path)
    recorder._requests = EmptiedMeanwhile()
    recorder.tick()


def test_disk_cap_removes_the_oldest_saves_and_never_a_user_run(
    tmp_path: Path, clock: FakeClock
) -> None:
    stepscope.start(tmp_path)  # a profile of the user's own, next to the recorder's saves
    _run_steps(clock, 0, 3)
    own = stepscope.stop()
    assert own is not None
    recorder = _start(tmp_path, max_disk_bytes=1 << 16, history_steps=2000)
    _run_steps(clock, 0, 1000)
    recorder.tick()
    for k in range(8):
        rec.save(f"save {k}").result(30)
    kept = sorted(tmp_path.glob("plugins/profile/*/*.recorder.json"))
    sizes = sum(f.stat().st_size for f in tmp_path.glob("plugins/profile/*/*") if f.parent != own)
    assert sizes <= 1 << 16 and 1 <= len(kept) < 8
    assert _marker(recorder.saved[-1])["reason"] == "save 7"
    assert not recorder.saved[0].exists()
    assert (own / next(own.glob("*.xplane.pb")).name).exists()


def test_recorder_and_capture_share_the_one_recording_slot(tmp_path: Path) -> None:
    _start(tmp_path)
    with pytest.raises(stepscope.ProfilerAlreadyRunningError):
        stepscope.start(tmp_path)
    rec.stop()
    stepscope.start(tmp_path)
    stepscope.stop()


def test_bad_settings_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(rec.InvalidRecorderConfigError, match="keep_steps must be an int >= 1"):
        rec.start(str(tmp_path), keep_steps=0)
    with pytest.raises(rec.InvalidRecorderConfigError, match="unknown setting"):
        rec.start(str(tmp_path), keep_step=3)
    with pytest.raises(rec.InvalidRecorderConfigError, match="slow_step_factor"):
        rec.Triggers(slow_step_factor=0.5)
    with pytest.raises(rec.InvalidRecorderConfigError, match="peers"):
        rec.start(str(tmp_path), peers=["nohost"])
    with pytest.raises(StepscopeError, match="not running"):
        rec.save("x")
    config = rec.RecorderConfig(str(tmp_path), keep_steps=4, sampler_hz=0)
    with pytest.raises(rec.InvalidRecorderConfigError, match="RecorderConfig or settings"):
        rec.start(config, keep_steps=5)
    assert rec.start(config).config is config  # every setting in one object


def test_a_save_before_the_watchdog_wakes_keeps_exactly_keep_steps(
    tmp_path: Path, clock: FakeClock
) -> None:
    recorder = _start(tmp_path, keep_steps=3)
    _run_steps(clock, 0, 9, slow={8: 50})  # no tick yet: the watchdog has seen no step
    marker = _marker(rec.save("now").result(30) or Path())
    assert marker["steps"] == [6, 8]
    recorder.tick()  # the steps the save scanned are still checked by the watchdog
    assert len(recorder.ring.history) == 9
    assert [p.trigger for p in recorder.requested] == ["user", "slow_step"]


def test_many_short_steps_wake_the_watchdog_before_its_poll(tmp_path: Path) -> None:
    from stepscope.capture.recorder.recorder import WAKE_STEPS

    recorder = _start(tmp_path, keep_steps=5)  # the watchdog's own poll is 10 s away
    for n in range(WAKE_STEPS + 1):
        with stepscope.step(n):
            pass
    woke = threading.Event()
    for _ in range(500):  # until the watchdog has cut the ring (it takes it a wake-up)
        if len(recorder.ring.history) > 0 and recorder.ring.trimmed_events > 0:
            woke.set()
            break
        time.sleep(0.01)
    assert woke.is_set()
    assert sum(len(b.events) for b in recorder.session.host.buffers()) < 50
