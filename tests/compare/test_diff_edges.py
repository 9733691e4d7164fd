"""The verdict of `stepscope diff` at its edges: a baseline of 0 ns (no relative change to
quote), an interval ending exactly at 0, a category or row moving by under 1 ns, a driver
chosen among significant and larger non-significant categories. Where the statistics cannot
be steered to such a case, the verdict is computed from metrics set by hand."""

from __future__ import annotations

import dataclasses

import numpy as np

from stepscope.stats.compare import RunSummary, diff_runs
from stepscope.stats.compare.diff import MetricChange, RowChange, _verdict
from tests.compare.synthetic import MS, summary

NO_ROWS: dict[str, tuple[RowChange, ...]] = {
    "host_ops": (),
    "device_ops": (),
    "kernels": (),
    "input_stages": (),
}


def _flat(steps: int, **extra: float) -> RunSummary:
    return summary(np.random.default_rng(0), steps=steps, noise=0.0, **extra)


def _idle(steps: int) -> RunSummary:
    """A run whose steps take 0 ns (every category empty)."""
    run = _flat(steps)
    return dataclasses.replace(
        run,
        step_dur_ns=np.zeros(steps, np.int64),
        category_ns={c: np.zeros(steps, np.int64) for c in run.category_ns},
    )


def test_a_baseline_of_0_ns_has_no_relative_change() -> None:
    """From steps of 0 ns to 10 ms steps: the verdict gives both times and no percentage
    (it read "+0.0%" before)."""
    one = diff_runs(_idle(1), _flat(1))
    assert one.verdict == (
        "step time 0.0 µs → 10.00 ms, too few steps to test whether it is real (need 2 in each run)"
    )
    ten = diff_runs(_idle(10), _flat(10))
    assert ten.verdict.startswith(
        "step time 0.0 µs → 10.00 ms mean per step, driven by device compute: +7.00 ms/step"
    )


def _mean(base: float, cand: float, **interval: float | bool) -> MetricChange:
    return MetricChange("step_time.mean", "Mean step time", "ns", base, cand, **interval)


def _category(name: str, label: str, delta: float, significant: bool) -> MetricChange:
    return MetricChange(
        f"category.{name}", label, "ns", MS, MS + delta, tested=True, significant=significant
    )


def test_an_interval_ending_at_0_is_not_no_change() -> None:
    mean = _mean(
        10 * MS,
        9 * MS,
        ci_low=-2 * MS,
        ci_high=0.0,
        rel_ci_low=-0.2,
        rel_ci_high=0.0,
        p_value=0.05,
        tested=True,
    )
    verdict, _, _ = _verdict([mean], NO_ROWS)
    assert verdict == "no significant change in step time (-10.0% [-20.0%, +0.0%])"


def test_a_category_or_row_moving_under_1_ns_still_drives_the_change() -> None:
    """Step time up 1 ms, significant; input the only category up, by 0.5 ns a step, and its
    one stage up by 0.5 ns too: both are named (shown as +0.0 µs)."""
    mean = _mean(
        10 * MS,
        11 * MS,
        ci_low=0.5 * MS,
        ci_high=1.5 * MS,
        rel_ci_low=0.05,
        rel_ci_high=0.15,
        p_value=0.001,
        tested=True,
        significant=True,
    )
    stage = RowChange("s", "Iterator::Root::Map", "op", "changed", 100.0, 100.5, 1, 1, 100.0, 100.5)
    rows = {**NO_ROWS, "input_stages": (stage,)}
    verdict, driver, detail = _verdict([mean, _category("input", "Input", 0.5, False)], rows)
    assert (driver, detail) == ("input", "Map stage +0.0 µs/step")
    assert verdict.endswith(", driven by input: +0.0 µs/step (Map stage +0.0 µs/step)")


def test_a_significant_category_drives_before_a_larger_one_that_is_not() -> None:
    mean = _mean(
        10 * MS,
        14 * MS,
        ci_low=3 * MS,
        ci_high=5 * MS,
        rel_ci_low=0.3,
        rel_ci_high=0.5,
        p_value=0.001,
        tested=True,
        significant=True,
    )
    categories = [
        _category("input", "Input", 3 * MS, False),
        _category("device_compute", "Device compute", 1 * MS, True),
    ]
    verdict, driver, _ = _verdict([mean, *categories], NO_ROWS)
    assert driver == "device_compute"
    assert verdict == (
        "step time +40.0% [+30.0%, +50.0%] (10.00 ms → 14.00 ms mean per step), driven by "
        "device compute: +1.00 ms/step"
    )


def test_the_diff_keeps_every_table() -> None:
    d = diff_runs(_flat(10), _flat(10, extra_compute_ms=1.0))
    assert [r.name for r in d.device_ops] == ["fusion.3", "convolution.7"]
    assert [r.name for r in d.host_ops] == ["Iterator::Root::Batch::Map", "model/dense/MatMul"]
    assert [r.name for r in d.input_stages] == ["Iterator::Root::Batch::Map"]
    assert d.kernels == ()


def test_a_tested_change_without_a_relative_interval_quotes_none() -> None:
    """The relative interval is left out when too many resampled baselines are 0 (a
    category absent from most steps); the change's own percentage stays."""
    kw = {"ci_low": 0.5 * MS, "ci_high": 1.5 * MS, "p_value": 0.001, "tested": True}
    up = _mean(10 * MS, 11 * MS, significant=True, **kw)
    assert _verdict([up], NO_ROWS)[0] == "step time +10.0% (10.00 ms → 11.00 ms mean per step)"
    flat = _mean(10 * MS, 11 * MS, **kw)
    assert _verdict([flat], NO_ROWS)[0] == "no significant change in step time (+10.0%)"


def test_no_significant_change_from_a_baseline_of_0_ns_gives_both_times() -> None:
    mean = _mean(0.0, 1_000.0, ci_low=-500.0, ci_high=2_500.0, p_value=0.3, tested=True)
    assert _verdict([mean], NO_ROWS)[0] == "no significant change in step time (0.0 µs → 1.0 µs)"


def test_an_interval_leaving_out_zero_says_why_it_is_not_significant() -> None:
    """A user read "no significant change in step time (+37.5% [+3.6%, +77.7%])" as a
    contradiction: the verdict says whether the correction for the figures tested together
    or the noise floor held it back."""
    kw = {"ci_low": 0.5 * MS, "ci_high": 1.5 * MS, "rel_ci_low": 0.05, "rel_ci_high": 0.15}
    median = MetricChange("step_time.median", "Median step time", "ns", 10 * MS, 11 * MS)
    p = MetricChange("step_time.p90", "p90", "ns", MS, MS, p_value=0.4, tested=True)
    held = _mean(10 * MS, 11 * MS, p_value=0.024, tested=True, **kw)
    floor = 0.1 * MS  # 1% of the baseline's 10 ms median
    assert _verdict([held, median, p], NO_ROWS, floor)[0] == (
        "no significant change in step time (+10.0% [+5.0%, +15.0%]; p=0.024 before Holm's "
        "correction for the 2 figures tested together, not significant after it)"
    )
    tiny = _mean(10 * MS, 10.05 * MS, p_value=0.001, tested=True, **kw)
    assert _verdict([tiny, median], NO_ROWS, floor)[0].endswith(
        "; under the noise floor, 0.10 ms: 1% of the baseline's median step)"
    )
    crosses = _mean(10 * MS, 11 * MS, ci_low=-MS, ci_high=2 * MS, p_value=0.3, tested=True)
    assert _verdict([crosses, median], NO_ROWS, floor)[0] == (
        "no significant change in step time (+10.0%)"
    )


def test_a_significant_median_is_said_when_the_mean_is_not() -> None:
    """Input 3 -> 6 ms a batch with a 50 ms checkpoint every 10 steps in both runs: the
    median step rose 87%, significant, while the mean's interval crossed 0 (the checkpoint
    steps), and the verdict said only "no significant change in step time" (decision 667)."""
    mean = _mean(12 * MS, 17.6 * MS, ci_low=-1.4 * MS, ci_high=19 * MS, p_value=0.2, tested=True)
    median = MetricChange(
        "step_time.median",
        "Median step time",
        "ns",
        6.49 * MS,
        12.13 * MS,
        rel_ci_low=0.631,
        rel_ci_high=1.788,
        p_value=0.001,
        tested=True,
        significant=True,
    )
    assert _verdict([mean, median], NO_ROWS)[0] == (
        "no significant change in step time (+46.7%); the median step changed +86.9% "
        "[+63.1%, +178.8%] (6.49 ms → 12.13 ms), significant: a few long steps widen the "
        "mean's interval"
    )
