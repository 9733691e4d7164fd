"""The slow-step trigger keeps its windows sorted as steps arrive (decision 720) and decides
exactly as when it sorted them afresh: the same series replayed through both gives the same
slow steps (their medians and tails to the bit), the same arming and the same thresholds."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import numpy as np
import pytest

from stepscope.capture.recorder import slow
from stepscope.capture.recorder.config import Triggers
from stepscope.capture.recorder.slow import SlowStepTrigger, SortedWindow

MS = 1_000_000
N = 810  # steps a series: past arming on a full baseline (120) and a few saves


class _Resorted(SortedWindow):
    """The trigger's windows as they were: sorted afresh each time they are read."""

    @property  # type: ignore[override]
    def ordered(self) -> list[int]:
        return sorted(self.values)

    @ordered.setter
    def ordered(self, _: list[int]) -> None:
        pass

    def push(self, value: int) -> int | None:
        gone = self.values[0] if len(self.values) == self.values.maxlen else None
        self.values.append(value)
        return gone

    def clear(self) -> None:
        self.values.clear()


def _replay(triggers: Triggers, durations_ns: list[int], resort: bool) -> Iterator[str]:
    trigger = SlowStepTrigger(triggers)
    if resort:
        trigger._window = _Resorted(triggers.median_steps)
        trigger.recent = trigger._window.values
        trigger._last = _Resorted(triggers.settle_steps)
        trigger._before = _Resorted(triggers.settle_steps)
    for n, dur_ns in enumerate(durations_ns):
        found = trigger.observe(n, dur_ns)
        yield f"{n} {found!r} {trigger.armed_note} {trigger.threshold_ns()!r}"


def _series() -> dict[str, list[int]]:
    rng = np.random.default_rng(720)
    steady = rng.integers(990_000, 1_010_000, N)
    # a loaded machine's fast loop: one step in eight waits 2-17 ms for a core
    tailed = rng.integers(700_000, 800_000, N)
    waits = rng.random(N) < 0.125
    tailed[waits] += rng.integers(2 * MS, 17 * MS, int(waits.sum()))
    # the typical step moving by 4x every 30 steps: the trigger waits, sorting each step
    moving = np.repeat(rng.choice([MS, 4 * MS], N // 30), 30) + rng.integers(0, 1000, N)
    out = {"steady": steady, "tailed": tailed, "moving": moving}
    for name in list(out):
        stalled = out[name].copy()
        stalled[[300, 301, 560, 790]] = [300 * MS, 40 * MS, 900 * MS, 5 * MS]
        out[f"{name}, stalled"] = stalled
    out["repeated values"] = np.tile([MS, MS, 2 * MS, MS, 3 * MS], N // 5)
    return {k: v.tolist() for k, v in out.items()}


@pytest.mark.parametrize(
    "triggers",
    [Triggers(), Triggers(median_steps=7, settle_steps=5, warmup_steps=0, slow_floor_s=0)],
    ids=["defaults", "odd windows"],
)
def test_the_trigger_decides_as_when_it_sorted_each_time(
    triggers: Triggers, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, durations_ns in _series().items():
        kept = list(_replay(triggers, durations_ns, resort=False))
        with monkeypatch.context() as m:
            m.setattr(slow, "median_of", statistics.median)
            resorted = list(_replay(triggers, durations_ns, resort=True))
        assert kept == resorted, name
        if "stalled" in name:  # the stalls are judged, armed or not
            assert sum("SlowStep(step_num=" in line for line in kept) >= 2, name


def test_a_window_stays_sorted_as_steps_come_and_go() -> None:
    rng = np.random.default_rng(0)
    window = SortedWindow(50)
    gone = []
    for value in rng.integers(0, 40, 500).tolist():  # many equal values
        gone.append(window.push(value))
        assert window.ordered == sorted(window.values)
    assert gone[:50] == [None] * 50 and None not in gone[50:]
