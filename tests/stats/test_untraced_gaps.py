"""The widest untraced piece of each step, found for all steps at once (decision 300),
against the per-step loop it replaced (the rule as first written)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.host.untraced import _largest_gaps


def _per_step(
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    covered_lo: np.ndarray,
    covered_hi: np.ndarray,
    fetch: tuple[tuple[int, int, int], ...] = (),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gaps_lo, gaps_hi, host = [], [], []
    for lo, hi in zip(span_lo.tolist(), span_hi.tolist(), strict=True):
        a = np.searchsorted(covered_hi, lo, "right")
        b = np.searchsorted(covered_lo, hi, "left")
        starts = np.clip(np.concatenate([[lo], covered_hi[a:b]]), lo, hi)
        ends = np.clip(np.concatenate([covered_lo[a:b], [hi]]), lo, hi)
        # a piece's host time: its width less the fetch counted in the gaps inside it
        widths = [
            e - s - sum(ns for f_lo, f_hi, ns in fetch if s <= f_lo and f_hi <= e)
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        k = int(np.argmax(widths))  # the first of equal widths
        gaps_lo.append(int(starts[k]))
        gaps_hi.append(int(ends[k]))
        host.append(widths[k])
    return (
        np.array(gaps_lo, np.int64),
        np.array(gaps_hi, np.int64),
        np.array(host, np.int64),
    )


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


def test_the_widest_by_host_time_when_a_fetch_is_counted_in_some_gaps() -> None:
    """Decision 482: each piece less the time counted as the loop's fetch in the gaps
    inside it (sorted, disjoint; a piece, or part of one), the widest by what is left."""
    rng = np.random.default_rng(482)
    for _ in range(400):
        points = np.sort(rng.integers(0, 200, 2 * int(rng.integers(0, 9))))
        covered_lo, covered_hi = points[0::2], points[1::2]
        bounds = np.unique(rng.integers(0, 200, 2 * int(rng.integers(1, 6))))
        span_lo, span_hi = bounds[:-1:2], bounds[1::2]  # disjoint steps
        if not len(span_hi):
            continue
        span_lo = span_lo[: len(span_hi)]
        fetch: list[tuple[int, int, int]] = []
        for lo, hi in zip(span_lo.tolist(), span_hi.tolist(), strict=True):
            a = np.searchsorted(covered_hi, lo, "right")
            b = np.searchsorted(covered_lo, hi, "left")
            starts = np.clip(np.concatenate([[lo], covered_hi[a:b]]), lo, hi)
            ends = np.clip(np.concatenate([covered_lo[a:b], [hi]]), lo, hi)
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
                if e > s and rng.random() < 0.6:
                    f_lo = int(rng.integers(s, e))
                    f_hi = int(rng.integers(f_lo + 1, e + 1))
                    fetch.append((f_lo, f_hi, int(rng.integers(0, f_hi - f_lo + 1))))
        arrays = tuple(np.array([f[i] for f in fetch], np.int64) for i in range(3))
        found = _largest_gaps(span_lo, span_hi, covered_lo, covered_hi, arrays)
        expected = _per_step(span_lo, span_hi, covered_lo, covered_hi, tuple(fetch))
        for got, want in zip(found, expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_ties_take_the_first_piece_and_no_cover_leaves_the_whole_step() -> None:
    lo, hi = np.array([0, 100]), np.array([30, 130])
    # pieces [0, 10], [20, 30] and [100, 105], [125, 130]: equally wide, the first of each
    found = _largest_gaps(lo, hi, np.array([10, 105]), np.array([20, 125]))
    assert found[0].tolist() == [0, 100] and found[1].tolist() == [10, 105]
    empty = np.zeros(0, np.int64)
    found = _largest_gaps(lo, hi, empty, empty)
    assert found[0].tolist() == [0, 100] and found[1].tolist() == [30, 130]
