"""A recorder that sees no step says that its step triggers need the steps marked (decision
731): a plain ``for x, y in loader:`` loop with the recorder on saved nothing for a 445 ms
checkpoint step among 4.5 ms ones, and said nothing. Fake clock, `tick()` by hand."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import stepscope.recorder as rec
from stepscope.capture.recorder.unmarked import NO_STEPS_WARN_S
from tests.support.recorder import FakeClock
from tests.support.recorder import run_steps as _run_steps

S = 1_000_000_000


def _told(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "no step seen" in r.getMessage()]


def test_no_step_a_minute_after_the_start_is_told_once(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = rec.start(str(tmp_path), sampler_hz=0, poll_s=10)
    try:
        with caplog.at_level(logging.WARNING, logger="stepscope"):
            clock.advance(int(NO_STEPS_WARN_S * S) - S)
            recorder.tick()
            assert _told(caplog) == []  # not yet a minute
            clock.advance(2 * S)
            recorder.tick()
            recorder.tick()
    finally:
        with caplog.at_level(logging.WARNING, logger="stepscope"):
            rec.stop()
    (told,) = _told(caplog)  # once, not again at each tick nor at the stop
    assert told.startswith("stepscope flight recorder: no step seen in the 61 s since it started")
    assert "stepscope.steps(loader)" in told


def test_a_short_program_without_steps_is_told_at_the_stop(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    rec.start(str(tmp_path), sampler_hz=0, poll_s=10)
    clock.advance(4 * S)
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        rec.stop()
    (told,) = _told(caplog)
    assert "no step seen in the 4 s since it started" in told


def test_marked_steps_are_not_told(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = rec.start(str(tmp_path), sampler_hz=0, poll_s=10)
    try:
        _run_steps(clock, 0, 3)
        clock.advance(int(NO_STEPS_WARN_S * S) * 2)
        with caplog.at_level(logging.WARNING, logger="stepscope"):
            recorder.tick()
    finally:
        with caplog.at_level(logging.WARNING, logger="stepscope"):
            rec.stop()
    assert _told(caplog) == []
