"""The step and interval sweeps against brute-force oracles: the union of intervals in start
order, per-type step time with narrow columns, every (event, step) overlap, and the chunked
helpers of the breakdown."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import open_file
from stepscope.stats.intervals import merge, union_in_order
from stepscope.stats.steps.breakdown import type_time
from tests.support.fixtures import FIXTURES, tf_xplane

TRACES = [
    tf_xplane("ctl"),
    tf_xplane("remote"),
    next((FIXTURES / "jax" / "cnn_cpu").rglob("*.xplane.pb")),
    FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb",
    FIXTURES / "kineto" / "a100_triton_tiny.json.gz",
]


def _crafted(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    line = np.sort(rng.integers(0, 4, n))
    start = rng.integers(0, 2000, n)
    dur = rng.choice([0, 0, 1, 5, 50, 400, 1500], n)  # zero-length, nested and overlapping
    return line, start, start + dur


@pytest.mark.parametrize("seed", range(6))
def test_union_in_order_equals_the_sorted_merge(seed: int) -> None:
    """Empty, touching, nested and overlapping intervals, equal starts: the runs are the
    union of the non-empty intervals."""
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 100_000, 4000)
    hi = lo + rng.choice([0, 0, 1, 10, 300], 4000)
    order = np.argsort(lo, kind="stable")
    got = union_in_order(lo, hi, order)
    keep = hi > lo
    expected = merge(lo[keep], hi[keep])
    assert len(got[0]) > 10
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


@pytest.mark.parametrize("seed", range(8))
def test_type_time_on_crafted_steps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, n_steps = 4000, 7
    step = rng.integers(0, n_steps, n)
    lo = rng.integers(0, 10_000, n)
    hi = lo + rng.choice([0, 3, 40, 900, 5000], n)
    types = rng.choice([10, 20, 30, 50, 80, 120], n)
    assert type_time(step, lo, hi, types, n_steps).sum() > 0
    # the event types' own int16 and int32 steps, cast before the keys multiply the steps
    # (times scaled so that step x width passes 2**31: int32 keys would wrap)
    wide_lo, wide_hi = lo * 1_000_000, hi * 1_000_000
    narrow = type_time(step.astype(np.int32), wide_lo, wide_hi, types.astype(np.int16), n_steps)
    assert np.array_equal(narrow, type_time(step, wide_lo, wide_hi, types, n_steps))


class _Events:
    """The columns `breakdown._window_pairs` reads from a profile."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start_ns, self.dur_ns = start, end - start

    def end_at(self, events: np.ndarray) -> np.ndarray:
        return self.start_ns[events] + self.dur_ns[events]


@pytest.mark.parametrize("long_events", [False, True])
def test_window_pairs_equal_every_overlap(long_events: bool) -> None:
    """The head's pairs, then every (event, step) that overlaps, window k being step k."""
    from stepscope.stats.steps import breakdown

    rng = np.random.default_rng(3)
    win_start = np.arange(0, 10_000, 1000, dtype=np.int64)
    win_end = win_start + 900
    start = rng.integers(0, 10_000, 5000)
    end = start + (rng.integers(0, 3000, 5000) if long_events else rng.integers(0, 90, 5000))
    free = rng.random(5000) < 0.7
    head = np.array([4, 2], np.int64), np.array([7, 1], np.int32)
    profile = _Events(start, end)
    args = (profile, free, win_start, win_end, head)
    got = breakdown._window_pairs(*args)  # type: ignore[arg-type]
    # every (event, window) that overlaps, by brute force
    overlap = (start[:, None] < win_end[None, :]) & (end[:, None] > win_start[None, :])
    ev, window = np.nonzero(overlap & free[:, None])
    assert len(ev) > 1000 and (len(ev) > free.sum()) == long_events
    assert got[0].tolist() == [4, 2, *ev.tolist()]
    assert got[1].tolist() == [7, 1, *window.tolist()]
    assert got[0].dtype == np.int64 and got[1].dtype == np.int32


def test_zero_length_by_chunks_equals_the_durations() -> None:
    from stepscope.stats.steps.breakdown import _zero_length

    p = open_file(str(TRACES[0]))
    ev = np.random.default_rng(4).integers(0, p.n_events, 5000)
    expected = p.dur_ns[ev] == 0
    assert expected.any()
    assert np.array_equal(_zero_length(p, ev, chunk=7), expected)


def test_clipped_by_chunks_equals_the_gathers() -> None:
    from stepscope.stats.steps.breakdown import _clipped

    rng = np.random.default_rng(5)
    times, bound = rng.integers(0, 1000, 50), rng.integers(0, 1000, 6)
    ev, st = rng.integers(0, 50, 300), rng.integers(0, 6, 300)
    for clip in (np.maximum, np.minimum):
        assert np.array_equal(
            _clipped(clip, times.take, ev, bound, st, chunk=7), clip(times[ev], bound[st])
        )
