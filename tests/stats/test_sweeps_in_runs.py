"""The C sweeps that merge the step pairs' ascending stretches as they read them
(`_sweeps_pairs.c`: step_type_unions_in_runs, union_in_runs) give what sorting every pair
gives: the step breakdown and covered time, with the stretches of threads and past the most
stretches they merge (then the callers sort), against the NumPy versions."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import native
from stepscope.stats.intervals import merge, union_of
from stepscope.stats.steps.breakdown import type_time
from tests.support.analysis import c_and_numpy

pytestmark = pytest.mark.skipif(native.sweeps is None, reason="C sweeps not built")
MAX_RUNS = 4096  # _sweeps_pairs.c


def _pairs(
    seed: int, stretches: int, n: int = 12_000, n_steps: int = 9, longest: int = 4000
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(step, lo, hi, type) of ``stretches`` threads, each in (step, lo) order as the
    attribution lists a thread's events (empty, zero-length, nested and equal starts);
    ``stretches=0``: every pair shuffled."""
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 90_000, n)
    hi = lo + rng.choice([0, 0, 1, 10, longest // 13, longest], n)
    step = np.minimum(lo // 10_000, n_steps - 1)
    types = rng.choice([10, 20, 30, 50, 80, 120], n)
    if stretches:
        thread = rng.integers(0, stretches, n)
        order = np.lexsort((lo, step, thread))
    else:
        order = rng.permutation(n)
    return step[order], lo[order], hi[order], types[order]


@pytest.mark.parametrize(("seed", "stretches"), [(0, 1), (1, 8), (2, 300), (3, 0)])
def test_breakdown_of_stretches_equals_the_sorted_one(
    seed: int, stretches: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    step, lo, hi, types = _pairs(seed, stretches)
    n_steps = 9
    fast, slow = c_and_numpy(monkeypatch, lambda: type_time(step, lo, hi, types, n_steps))
    assert np.array_equal(fast, slow) and np.asarray(fast).sum() > 0
    # the merge itself, against the sweep in a stable sort's order
    assert native.sweeps is not None
    thresholds = np.array([120, 80, 50, 30, 20, 10], np.int64)
    merged = np.zeros((6, n_steps), np.int64)
    sorted_ = np.zeros((6, n_steps), np.int64)
    columns = (step.astype(np.int32), lo, hi, types.astype(np.int16))
    took = native.sweeps.step_type_unions_in_runs(*columns, thresholds, merged)
    assert took == (stretches > 0)  # shuffled: past the most stretches merged
    order = np.lexsort((lo, step))
    native.sweeps.step_type_unions(*columns, order, thresholds, sorted_)
    if took:
        assert np.array_equal(merged, sorted_)
    else:
        assert not merged.any()  # untouched


@pytest.mark.parametrize(("seed", "stretches"), [(4, 1), (5, 7), (6, 900), (7, 0)])
def test_union_of_stretches_equals_the_sorted_merge(
    seed: int, stretches: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, lo, hi, _ = _pairs(seed, stretches, longest=20)
    fast, slow = c_and_numpy(monkeypatch, lambda: union_of(lo, hi))
    keep = hi > lo
    expected = merge(lo[keep], hi[keep])
    assert len(expected[0]) > 10
    for got in (fast, slow):
        assert isinstance(got, tuple)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert native.sweeps is not None
    assert (native.sweeps.union_in_runs(lo, hi) is None) == (stretches == 0)


def test_stretches_up_to_the_most_merged() -> None:
    """Descending starts: every interval a stretch of its own."""
    assert native.sweeps is not None
    lo = np.arange(MAX_RUNS, 0, -1, dtype=np.int64) * 10
    runs = native.sweeps.union_in_runs(lo, lo + 5)
    assert runs is not None
    assert np.frombuffer(runs, np.int64).tolist() == np.c_[lo[::-1], lo[::-1] + 5].ravel().tolist()
    lo = np.r_[lo, 1]
    assert native.sweeps.union_in_runs(lo, lo + 5) is None
    step = np.zeros(len(lo), np.int32)
    types = np.full(len(lo), 10, np.int16)
    out = np.zeros((1, 1), np.int64)
    thresholds = np.array([10], np.int64)
    assert not native.sweeps.step_type_unions_in_runs(step, lo, lo + 5, types, thresholds, out)
    assert native.sweeps.step_type_unions_in_runs(
        step[1:], lo[1:], lo[1:] + 5, types[1:], thresholds, out
    )
    assert out.tolist() == [[5 * MAX_RUNS]]
