"""The flight recorder tests' fake clock and step loop (tests/capture/test_recorder*.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture import annotations

MS = 1_000_000


class FakeClock:
    def __init__(self) -> None:
        self.now = time.perf_counter_ns()

    def __call__(self) -> int:
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns


def use_clock(monkeypatch: pytest.MonkeyPatch, fake: FakeClock) -> FakeClock:
    """``fake`` as the recorder's and the annotations' `perf_counter_ns`."""
    monkeypatch.setattr(annotations, "perf_counter_ns", fake)
    monkeypatch.setattr(time, "perf_counter_ns", fake)
    return fake


def run_steps(clock: FakeClock, first: int, count: int, slow: dict[int, int] | None = None) -> None:
    """Steps ``first``.. of 1.1 ms on the fake clock (``slow``: step -> ms of its compute)."""
    for n in range(first, first + count):
        with stepscope.step(n):
            with stepscope.trace("compute"):
                clock.advance((slow or {}).get(n, 1) * MS)
            clock.advance(MS // 10)


def marker(run_dir: Path) -> dict[str, Any]:
    """A recorder save's marker file."""
    (path,) = run_dir.glob("*.recorder.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data
