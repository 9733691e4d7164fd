"""The recorder's step history: a columnar ring of step summaries (32 bytes a step)."""

from __future__ import annotations

import sys

import pytest

from stepscope.capture.recorder.ring import StepHistory, StepSummary


def _row(n: int) -> StepSummary:
    return StepSummary(n, 1_000 * n, 10 + n, 7)


def test_the_ring_keeps_the_newest_rows_in_order_across_wrap_around() -> None:
    history = StepHistory(5)
    history.extend(_row(n) for n in range(3))
    assert len(history) == 3 and list(history) == [_row(0), _row(1), _row(2)]
    history.extend(_row(n) for n in range(3, 12))
    assert len(history) == 5
    assert list(history) == [_row(n) for n in range(7, 12)]
    assert history[0] == _row(7) and history[-1] == _row(11) and history[-5] == _row(7)
    assert history.column("start_ns", 3) == [9_000, 10_000, 11_000]
    assert history.column("step_num") == [7, 8, 9, 10, 11]
    twin = history.copy()
    history.append(_row(12))  # the copy is a snapshot: later rows do not reach it
    assert list(twin) == [_row(n) for n in range(7, 12)] and twin[-1] == _row(11)
    with pytest.raises(IndexError, match="out of range"):
        history[5]


def test_a_step_takes_32_bytes() -> None:
    history = StepHistory(100_000)
    history.extend(_row(n) for n in range(100_000))
    size = sum(sys.getsizeof(col) for col in history._cols)
    assert size < 100_000 * 36  # four int64 columns (plus the arrays' spare capacity)
