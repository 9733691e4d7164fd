"""The bootstrap and the family correction: deterministic, calibrated, and exact for ties."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.compare.significance import (
    STATISTICS,
    bootstrap_change,
    holm_significant,
)


def test_sorted_quantiles_equal_numpy() -> None:
    rng = np.random.default_rng(1)
    for n in (2, 3, 50, 51):
        x = np.sort(rng.standard_normal(n))
        assert STATISTICS["median"](x) == np.median(x)
        assert np.isclose(STATISTICS["p90"](x), np.percentile(x, 90))


def test_same_answer_every_call() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(10, 1, 30), rng.normal(10.5, 1, 30)
    assert bootstrap_change(a, b, "median") == bootstrap_change(a, b, "median")


def test_interval_covers_a_clear_shift_and_not_zero() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(100, 5, 50), rng.normal(110, 5, 50)
    iv = bootstrap_change(a, b, "median")
    assert iv.testable and 0 < iv.ci_low < iv.delta < iv.ci_high
    assert 0.0 < iv.rel_low < 0.1 < iv.rel_high < 0.2
    assert iv.p_value < 0.01


def test_relative_interval_never_below_minus_100_percent() -> None:
    iv = bootstrap_change(
        np.array([62.0, 66.0, 128.0, 74.0]), np.array([13.0, 14.0, 20.0, 22.0]), "median"
    )
    assert -1.0 < iv.rel_low < iv.rel_high < 0.0


def test_identical_samples_are_no_change_and_one_sample_is_untestable() -> None:
    x = np.array([3.0, 1.0, 2.0])
    same = bootstrap_change(x, x[::-1], "mean")
    assert same.delta == 0.0 and same.p_value == 1.0 and same.testable
    single = bootstrap_change(np.array([1.0]), np.array([2.0]), "mean")
    assert not single.testable and single.delta == 1.0


def test_holm_step_down() -> None:
    assert holm_significant([0.001, 0.06, 0.012]) == [True, False, True]
    assert holm_significant([0.001, 0.04, 0.012]) == [True, True, True]
    assert holm_significant([0.03, 0.03]) == [False, False]
    assert holm_significant([]) == []


def test_small_sample_widening_follows_student_t() -> None:
    from stepscope.stats.compare.significance import expansion

    # sqrt(n / (n - 1)) * t(0.975, n - 1) / z(0.975), t from tables; the code's series for t
    # is 4% short at 4 steps and exact to 0.02% from 20.
    z = 1.959964
    for n, t, tolerance in ((4, 3.182446, 0.04), (20, 2.093024, 2e-4), (50, 2.009575, 2e-5)):
        exact = (n / (n - 1)) ** 0.5 * t / z
        assert abs(expansion(n) / exact - 1) < tolerance, n
    assert expansion(3) > expansion(4) > expansion(20) > 1.0
    assert expansion(1) == 1.0


def test_stddev_is_the_sample_standard_deviation() -> None:
    base, cand = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 5.0, 7.0])
    iv = bootstrap_change(base, cand, "stddev")
    assert iv.base == np.std(base, ddof=1) and iv.cand == np.std(cand, ddof=1)
    # two steps each: the resampled spreads are not all zero, so the interval is not either
    two = bootstrap_change(np.array([1.0, 3.0]), np.array([2.0, 8.0]), "stddev")
    assert two.testable and two.ci_low < 0 < two.ci_high


def test_p_value_is_capped_at_one_when_most_changes_are_zero() -> None:
    # Medians of 5 steps that are mostly 1: most resampled changes are exactly 0, counted on
    # both sides; twice the smaller side would exceed 1.
    iv = bootstrap_change(np.array([1.0, 1, 1, 1, 2]), np.array([1.0, 1, 1, 2, 2]), "median")
    assert iv.delta == 0.0 and iv.p_value == 1.0


def test_two_steps_are_testable_and_one_is_not() -> None:
    two = bootstrap_change(np.array([1.0, 2.0]), np.array([3.0, 4.0]), "mean")
    assert two.testable and two.delta == 2.0 and two.ci_low < 2.0 < two.ci_high
    single = bootstrap_change(np.array([1.0, 5.0]), np.array([2.0]), "mean")
    assert not single.testable and (single.base, single.cand, single.delta) == (3.0, 2.0, -1.0)
    assert single.p_value == 1.0
    for bound in (single.ci_low, single.ci_high, single.rel_low, single.rel_high):
        assert np.isnan(bound)


def test_identical_samples_give_a_zero_width_interval() -> None:
    x = np.array([3.0, 1.0, 2.0])
    same = bootstrap_change(x, x[::-1], "median")
    assert (same.ci_low, same.ci_high, same.rel_low, same.rel_high) == (0.0, 0.0, 0.0, 0.0)


def test_holm_threshold_is_inclusive() -> None:
    # p <= alpha / (m - rank) is significant (Holm's rule), at the boundary too
    assert holm_significant([0.05]) == [True]
    assert holm_significant([0.025, 0.05]) == [True, True]
    assert holm_significant([0.0250001, 0.05]) == [False, False]


def test_no_relative_interval_from_a_zero_baseline() -> None:
    iv = bootstrap_change(np.zeros(4), np.array([1.0, 2.0, 3.0, 4.0]), "mean")
    assert iv.testable and iv.delta == 2.5 and iv.ci_low < 2.5 < iv.ci_high
    assert np.isnan(iv.rel_low) and np.isnan(iv.rel_high)
    # a baseline that is mostly zero (a category absent from most steps): no ratio either
    mostly = bootstrap_change(np.array([0.0] * 39 + [5.0]), np.full(40, 1.0), "mean")
    assert np.isnan(mostly.rel_low) and np.isnan(mostly.rel_high)


def test_the_answer_does_not_depend_on_how_the_resamples_are_chunked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Long runs are resampled in chunks (memory); a chunk size that does not divide the
    resample count (7 resamples a chunk: the last chunk short) gives the same intervals as
    one chunk, every one of them a number."""
    from stepscope.stats.compare import significance

    rng = np.random.default_rng(5)
    a, b = rng.normal(100, 5, 12), rng.normal(104, 5, 9)
    whole = {name: bootstrap_change(a, b, name) for name in STATISTICS}
    monkeypatch.setattr(significance, "_MAX_CELLS", 7 * len(a))
    chunked = {name: bootstrap_change(a, b, name) for name in STATISTICS}
    assert chunked == whole
    for iv in chunked.values():
        fields = (iv.ci_low, iv.ci_high, iv.rel_low, iv.rel_high, iv.p_value)
        assert all(np.isfinite(fields)), iv


def test_the_interval_is_the_middle_95_percent_of_the_widened_changes() -> None:
    """On resampled statistics given by hand: the candidate's are 1 + 0.000, 0.001, ...,
    1.999, the baseline's all 1. The changes are 0, 0.001... 1.999; the interval is their
    2.5th-97.5th percentile (numpy's linear one: 0.049975 and 1.949025), widened by k
    around the observed change; the p-value is twice the share on the far side of 0 (one
    change of 2000 is 0: it counts on both sides)."""
    from stepscope.stats.compare.significance import _interval

    ra = np.ones(2000)
    rb = 1.0 + np.arange(2000) / 1000
    iv = _interval(1.0, 2.0, ra, rb, 1.0)
    assert (iv.delta, iv.ci_low, iv.ci_high) == pytest.approx((1.0, 0.049975, 1.949025))
    assert (iv.rel_low, iv.rel_high) == pytest.approx((0.049975, 1.949025))
    assert iv.p_value == pytest.approx(0.001) and iv.testable
    wide = _interval(1.0, 2.0, ra, rb, 2.0)  # 1 + 2 * (change - 1)
    assert (wide.ci_low, wide.ci_high) == pytest.approx((-0.90005, 2.89805))
    assert (wide.rel_low, wide.rel_high) == pytest.approx((-0.90005, 2.89805))


def test_the_relative_interval_leaves_out_resamples_with_a_zero_baseline() -> None:
    """A baseline statistic of 0 in 49 resamples of 2000 (2.45%): the ratios come from the
    other 1951 (0.049 + their 2.5th-97.5th percentile); in 50 (2.5%), no relative interval."""
    from stepscope.stats.compare.significance import _interval

    rb = 1.0 + np.arange(2000) / 1000
    ra = np.ones(2000)
    ra[:49] = 0.0
    iv = _interval(1.0, 2.0, ra, rb, 1.0)
    expected = np.percentile(np.arange(49, 2000) / 1000, [2.5, 97.5])
    assert (iv.rel_low, iv.rel_high) == pytest.approx(tuple(expected))
    ra[49] = 0.0
    iv = _interval(1.0, 2.0, ra, rb, 1.0)
    assert np.isnan(iv.rel_low) and np.isnan(iv.rel_high)


def test_the_widening_is_the_series_value_at_every_size() -> None:
    """expansion(n), to 12 digits, for 2, 4, 20 and 50 steps (the docstring's 1.81, 1.10,
    1.04): every term of the t series and the variance correction show in it."""
    from stepscope.stats.compare.significance import expansion

    expected = {2: 5.1625039211903, 4: 1.8053320773443, 20: 1.0954294314621, 50: 1.0357105180448}
    for n, value in expected.items():
        assert expansion(n) == pytest.approx(value, rel=1e-12), n


def test_no_relative_interval_from_a_zero_statistic_and_none_below_minus_100_percent() -> None:
    """A baseline statistic of 0 has no relative change; widened ratios below -100% (here
    1 + 3 * (0.049975 - 1)) read -100%."""
    from stepscope.stats.compare.significance import _interval

    ra, rb = np.ones(2000), 1.0 + np.arange(2000) / 1000
    zero = _interval(0.0, 2.0, ra, rb, 1.0)
    assert np.isnan(zero.rel_low) and np.isnan(zero.rel_high)
    wide = _interval(1.0, 2.0, ra, rb, 3.0)
    assert wide.rel_low == -1.0 and wide.rel_high == pytest.approx(1 + 3 * 0.949025)


def test_a_run_without_steps_is_untestable_and_has_no_statistic() -> None:
    single = bootstrap_change(np.array([1.0, 5.0]), np.array([]), "median")
    assert single.testable is False and single.base == 3.0 and np.isnan(single.cand)
    assert np.isnan(single.delta) and single.p_value == 1.0
    one = bootstrap_change(np.array([1.0, 5.0]), np.array([2.0]), "mean")
    assert one.testable is False
