"""The bootstrap and the family correction: deterministic, calibrated, and exact for ties."""

from __future__ import annotations

import numpy as np

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
