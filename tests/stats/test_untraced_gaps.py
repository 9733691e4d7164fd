"""The widest untraced piece of each step, found for all steps at once (decision 300),
against the per-step loop it replaced (the rule as first written)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.host.untraced import _largest_gaps


def _per_step(
    span_lo: np.ndarray, span_hi: np.ndarray, covered_lo: np.ndarray, covered_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    gaps_lo, gaps_hi = [], []
    for lo, hi in zip(span_lo.tolist(), span_hi.tolist(), strict=True):
        a = np.searchsorted(covered_hi, lo, "right")
        b = np.searchsorted(covered_lo, hi, "left")
        starts = np.clip(np.concatenate([[lo], covered_hi[a:b]]), lo, hi)
        ends = np.clip(np.concatenate([covered_lo[a:b], [hi]]), lo, hi)
        k = int(np.argmax(ends - starts))  # the first of equal widths
        gaps_lo.append(int(starts[k]))
        gaps_hi.append(int(ends[k]))
    return np.array(gaps_lo, np.int64), np.array(gaps_hi, np.int64)


def test_the_widest_gap_of_every_step_as_the_loop_found_it() -> None:
    rng = np.random.default_rng(30)
    for _ in range(400):
        # covered: sorted disjoint intervals, touching or of no length now and then
        points = np.sort(rng.integers(0, 60, 2 * int(rng.integers(0, 9))))
        covered_lo, covered_hi = points[0::2], points[1::2]
        span_lo = np.sort(rng.integers(0, 60, int(rng.integers(1, 7))))
        span_hi = span_lo + rng.integers(0, 20, len(span_lo))
        found = _largest_gaps(span_lo, span_hi, covered_lo, covered_hi)
        expected = _per_step(span_lo, span_hi, covered_lo, covered_hi)
        for got, want in zip(found, expected, strict=True):
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, want)


def test_ties_take_the_first_piece_and_no_cover_leaves_the_whole_step() -> None:
    lo, hi = np.array([0, 100]), np.array([30, 130])
    # pieces [0, 10], [20, 30] and [100, 105], [125, 130]: equally wide, the first of each
    found = _largest_gaps(lo, hi, np.array([10, 105]), np.array([20, 125]))
    assert found[0].tolist() == [0, 100] and found[1].tolist() == [10, 105]
    empty = np.zeros(0, np.int64)
    found = _largest_gaps(lo, hi, empty, empty)
    assert found[0].tolist() == [0, 100] and found[1].tolist() == [30, 130]
