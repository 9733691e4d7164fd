"""The watchdog's per-step work done in batches gives what it gave a row at a time."""

from __future__ import annotations

import random

from stepscope.capture.recorder import config as cfg
from stepscope.capture.recorder.ring import StepHistory, StepSummary
from stepscope.capture.recorder.saver import Saver


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
