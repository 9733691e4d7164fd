"""The flight recorder's hang trigger around `stepscope.steps` loops (decision 825): a pass
that ended (its loader exhausted, a `break`, an exception out of the body, the loader's own
error) leaves no step open, and a step really open for `hang_s` still saves.

A fake clock (the annotations' and the recorder's `perf_counter_ns`) and `tick()` called by
the test: nothing here reads this machine's timing. The clock moves on 1 µs at each reading,
as a real one does between two: a step that begins at the previous one's end, read before
the recorder's stamp, then begins before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import stepscope
import stepscope.recorder as rec
from stepscope.model.hung_stack import hung_thread_stack
from tests.support.recorder import MS, FakeClock, use_clock
from tests.support.recorder import marker as _marker

S = 1_000_000_000


class _TickingClock(FakeClock):
    def __call__(self) -> int:
        self.now += 1000
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    return use_clock(monkeypatch, _TickingClock())


def _start(logdir: Path) -> rec.Recorder:
    triggers = rec.Triggers(hang_s=1, slow_step_factor=0, on_sigusr1=False)
    return rec.start(str(logdir), sampler_hz=0, poll_s=10, triggers=triggers)


def _hangs(recorder: rec.Recorder) -> list[str]:
    return [p.reason for p in recorder.requested if p.trigger == "hang"]


def _after(recorder: rec.Recorder, clock: FakeClock) -> list[str]:
    """The hang saves asked for 5 s after the loop, with no step since."""
    clock.advance(5 * S)
    recorder.tick()
    return _hangs(recorder)


def test_a_finished_steps_loop_leaves_no_step_open(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path)
    for _step, _x in stepscope.steps(range(3)):
        clock.advance(MS)
    assert _after(recorder, clock) == []
    for _step, _x in stepscope.steps([]):  # an empty loader: its only fetch opened no step
        clock.advance(MS)
    assert _after(recorder, clock) == []


def test_a_break_out_of_the_loop_leaves_no_step_open(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path)
    for step, _x in stepscope.steps(range(10)):
        clock.advance(MS)
        if step == 3:
            break
    assert _after(recorder, clock) == []
    held = stepscope.steps(range(10))  # closed from outside, as a generator is
    next(held)
    clock.advance(MS)
    held.close()
    assert _after(recorder, clock) == []


def test_an_exception_out_of_the_body_leaves_no_step_open(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path)
    with pytest.raises(ValueError):
        for step, _x in stepscope.steps(range(10)):
            clock.advance(MS)
            if step == 2:
                raise ValueError("bad batch")
    assert _after(recorder, clock) == []

    def failing() -> Iterator[int]:
        yield 0
        raise OSError("the file went away")

    with pytest.raises(OSError):
        for _step, _x in stepscope.steps(failing()):
            clock.advance(MS)
    assert _after(recorder, clock) == []


def test_a_step_open_for_hang_s_still_saves(tmp_path: Path, clock: FakeClock) -> None:
    recorder = _start(tmp_path)
    for _step, _x in stepscope.steps(range(3)):  # a pass that ended first: no hang after it
        clock.advance(MS)
    clock.advance(MS)
    for step, _x in stepscope.steps(range(3)):
        clock.advance(MS)
        if step == 1:  # stuck in step 1 of the second pass
            assert _after(recorder, clock) == [
                "a step on thread 'MainThread' has been open for 5.0 s"
            ]
    (pending,) = recorder.requested
    marker = _marker(pending.result(30) or Path())
    assert marker["trigger"] == "hang"
    assert any(label.startswith("MainThread ") for label in marker["stacks"])
    # which stack is the hung step's, and where the report says it was: the test's own
    # frame that ticked the recorder (stepscope's frames under it left out), in the body
    assert marker["hung_thread"] in marker["stacks"]
    hung = hung_thread_stack(marker)
    assert hung is not None and hung["thread"] == "MainThread" and not hung["in_fetch"]
    assert [f["function"] for f in hung["frames"][-2:]] == [
        "test_a_step_open_for_hang_s_still_saves",
        "_after",
    ]
    assert _after(recorder, clock) == [marker["reason"]]  # that pass ended: no other save
