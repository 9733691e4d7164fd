"""The watchdog's per-step work done in batches gives what it gave a row at a time."""

from __future__ import annotations

import random

import pytest

from stepscope.capture.recorder import config as cfg
from stepscope.capture.recorder.ring import StepHistory, StepSummary
from stepscope.capture.recorder.saver import Saver
from stepscope.capture.recorder.slow import SlowStepTrigger


def _row(n: int) -> StepSummary:
    return StepSummary(n, 1_000 * n, 10 + n % 13, 100 + n % 3)


def test_extending_in_batches_is_appending_each_row_across_any_wrap() -> None:
    rng = random.Random(5)
    for capacity in (1, 2, 5, 7, 64):
        batched, one_by_one = StepHistory(capacity), StepHistory(capacity)
        n = 0
        for _ in range(40):
            size = rng.choice([0, 1, 2, capacity - 1, capacity, capacity + 1, 3 * capacity])
            rows = [_row(k) for k in range(n, n + max(0, size))]
            n += len(rows)
            batched.extend(iter(rows))  # any iterable, as the ring's scan passes a list
            for row in rows:
                one_by_one.append(row)
            assert batched.total == one_by_one.total == n
            assert list(batched) == list(one_by_one)
            for number in range(max(0, n - capacity - 2), n + 1):
                assert batched.row(number) == one_by_one.row(number)


def test_the_saver_time_in_a_step_with_spans_before_across_and_at_work() -> None:
    saver = Saver(cfg.RecorderConfig("unused"), lambda: "host")
    assert saver.time_in(100, 200) == 0  # never worked
    saver.spans.append((10, 50))
    assert saver.time_in(100, 200) == 0  # its last span ended before the step
    assert saver.time_in(40, 200) == 10  # ... and one that began before it ended
    saver.spans.append((150, 180))
    assert saver.time_in(100, 200) == 30
    saver.busy_since = 190  # at work now: counts until the step's end
    assert saver.time_in(100, 200) == 40
    saver.busy_since = 0
    assert saver.time_in(180, 300) == 0


def _durations(rng: random.Random, n: int) -> list[int]:
    """Steps of a loop whose typical time moves, with a tail and stalls (some 100x)."""
    durs, typical = [], 1_000_000
    for k in range(n):
        if k % 400 == 0:
            typical = rng.choice([300_000, 1_000_000, 1_000_000, 4_000_000])
        dur = int(typical * rng.uniform(0.9, 1.1))
        if rng.random() < 0.03:
            dur *= rng.choice([2, 5, 40, 150])
        durs.append(dur)
    return durs


def _state(trigger: SlowStepTrigger) -> tuple[object, ...]:
    window = trigger._window
    return (
        trigger.seen,
        trigger._median,
        trigger._tail,
        trigger._median_age,
        list(window.values),
        list(window.ordered),
        trigger.threshold_ns(),
    )


def test_judging_armed_steps_in_one_loop_is_observing_each_in_turn() -> None:
    """`observe_armed` over batches of any size finds the same slow steps, with the same
    medians, tails and windows, and leaves the trigger as `observe` one step at a time."""
    for seed in range(12):
        rng = random.Random(seed)
        settings = {"slow_floor_s": rng.choice([0.0, 0.0, 0.001, 0.1])}
        if seed % 3 == 0:
            settings |= {"median_steps": 7, "settle_steps": 3, "warmup_steps": 0}
        triggers = cfg.Triggers(**settings)
        durs = _durations(rng, 3_000)
        one, batched = SlowStepTrigger(triggers), SlowStepTrigger(triggers)
        seen_one = [(k, one.observe(k, d)) for k, d in enumerate(durs)]
        slow_one = [(k, s) for k, s in seen_one if s is not None and not s.unarmed]
        slow_batched, k = [], 0
        while k < len(durs) and not batched.armed:
            found = batched.observe(k, durs[k])
            if found is not None and not found.unarmed:
                slow_batched.append((k, found))
            k += 1
        assert batched.armed, seed
        while k < len(durs):
            size = rng.choice([1, 2, 9, 10, 11, 100, 1000])
            nums = list(range(k, min(k + size, len(durs))))
            for i, found in batched.observe_armed(nums, durs[k : k + len(nums)]):
                slow_batched.append((nums[i], found))
            k += len(nums)
            assert _state(batched) == _state_after(triggers, durs[:k]), (seed, k)
        assert slow_batched == slow_one, seed
        assert slow_one, seed  # the stalls were found: the comparison compared something
        assert _state(batched) == _state(one)


def _state_after(triggers: cfg.Triggers, durs: list[int]) -> tuple[object, ...]:
    trigger = SlowStepTrigger(triggers)
    for k, dur in enumerate(durs):
        trigger.observe(k, dur)
    return _state(trigger)


def test_observe_armed_refuses_an_unarmed_trigger() -> None:
    trigger = SlowStepTrigger(cfg.Triggers())
    with pytest.raises(RuntimeError, match="not armed"):
        trigger.observe_armed([0], [1_000])
