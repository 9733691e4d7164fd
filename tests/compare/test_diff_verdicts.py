"""The verdict line of `stepscope diff` and the matched rows behind it, on runs whose every
step is the same (no noise: each interval is one point, each answer exact).

What a user reads first: the change with its interval, or why there is none; the category
that drove it and the stage or op behind that. tests/compare/test_diff_synthetic.py checks
the statistics on noisy runs; these check the words and the numbers in them.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from stepscope.stats.compare import NamedRows, RunSummary, diff_runs
from stepscope.stats.compare.diff import match_rows, ms, pct, signed_ms
from tests.compare.synthetic import MS, rows, summary

US = 1_000


def _flat(steps: int = 10, **extra: float) -> RunSummary:
    """A run whose every step is the same (2 ms input, 7 ms device compute, 1 ms other, plus
    ``extra_input_ms`` / ``extra_compute_ms``)."""
    return summary(np.random.default_rng(0), steps=steps, noise=0.0, **extra)


def test_a_slowdown_names_its_interval_category_and_stage() -> None:
    d = diff_runs(_flat(), _flat(extra_input_ms=1.0))
    assert d.verdict == (
        "step time +10.0% [+10.0%, +10.0%] (10.00 ms → 11.00 ms mean per step), "
        "driven by input: +1.00 ms/step (Map stage +1.00 ms/step)"
    )
    assert (d.driver, d.driver_detail) == ("input", "Map stage +1.00 ms/step")


def test_a_speedup_is_driven_by_what_got_faster() -> None:
    """The driver moves the way the step time moved: the biggest fall, not a rise."""
    d = diff_runs(_flat(), _flat(extra_input_ms=-1.5, extra_compute_ms=0.5))
    assert d.verdict == (
        "step time -10.0% [-10.0%, -10.0%] (10.00 ms → 9.00 ms mean per step), "
        "driven by input: -1.50 ms/step (Map stage -1.50 ms/step)"
    )
    assert d.driver == "input"


def test_the_driver_is_the_largest_category_change_in_the_step_times_direction() -> None:
    d = diff_runs(_flat(), _flat(extra_input_ms=0.5, extra_compute_ms=2.0))
    assert d.driver == "device_compute"
    assert d.verdict.endswith("driven by device compute: +2.00 ms/step (fusion.3 op +2.00 ms/step)")


def test_a_device_change_with_no_device_ops_is_read_from_the_kernels() -> None:
    base, cand = _flat(), _flat(extra_compute_ms=1.0)
    kernels = {
        s: rows(["volta_sgemm_128x64_nn"], [int((7 + extra) * 10 * MS)])
        for s, extra in (("base", 0.0), ("cand", 1.0))
    }
    base = dataclasses.replace(base, device_ops=NamedRows.empty(), kernels=kernels["base"])
    cand = dataclasses.replace(cand, device_ops=NamedRows.empty(), kernels=kernels["cand"])
    d = diff_runs(base, cand)
    assert d.driver_detail == "volta_sgemm_128x64_nn op +1.00 ms/step"


def test_a_host_side_change_is_read_from_the_host_ops_and_says_new() -> None:
    """Host compute, kernel launch, compilation and "other" are explained by host ops; an
    op only in the candidate says so."""
    base, cand = _flat(), _flat()
    cats = {**cand.category_ns, "host_compute": np.full(10, 3 * MS, np.int64)}
    host_ops = rows(
        ["Iterator::Root::Batch::Map", "model/dense/MatMul", "model/new_loss/Mean"],
        [20 * MS, 5 * MS, 30 * MS],
    )
    cand = dataclasses.replace(
        cand,
        category_ns=cats,
        step_dur_ns=cand.step_dur_ns + 3 * MS,
        host_ops=host_ops,
    )
    d = diff_runs(base, cand)
    assert d.driver == "host_compute"
    assert d.driver_detail == "model/new_loss/Mean op +3.00 ms/step, new"
    statuses = {r.name: r.status for r in d.host_ops}
    assert statuses["model/new_loss/Mean"] == "new"
    assert statuses["model/dense/MatMul"] == "same"


def test_an_op_only_in_the_baseline_is_gone() -> None:
    base = dataclasses.replace(_flat(), host_ops=rows(["a/Relu", "b/Sum"], [10 * MS, 40 * MS]))
    cand = dataclasses.replace(_flat(), host_ops=rows(["a/Relu"], [10 * MS]))
    [sum_row, relu_row] = match_rows(base, cand, "host_ops")
    assert (sum_row.name, sum_row.status, sum_row.base_ns, sum_row.cand_ns) == (
        "b/Sum",
        "gone",
        4 * MS,
        0.0,
    )
    assert (sum_row.base_count, sum_row.cand_count, sum_row.cand_avg_ns) == (1, 0, 0.0)
    assert (relu_row.status, relu_row.delta_ns) == ("same", 0.0)


def test_rows_are_matched_per_step_and_per_occurrence() -> None:
    """Per step: a run's total over its steps (runs of different lengths compare); per
    occurrence: the total over the op's count."""
    base = dataclasses.replace(_flat(steps=10), host_ops=rows(["a/Relu"], [20 * MS], [40]))
    cand = dataclasses.replace(_flat(steps=20), host_ops=rows(["a/Relu"], [60 * MS], [60]))
    [row] = match_rows(base, cand, "host_ops")
    assert (row.base_ns, row.cand_ns) == (2 * MS, 3 * MS)
    assert (row.base_count, row.cand_count) == (40, 60)
    assert (row.base_avg_ns, row.cand_avg_ns) == (0.5 * MS, 1 * MS)


def test_kernels_compare_total_time_and_ops_their_self_time() -> None:
    table = NamedRows.aggregate(
        ("a/Conv2D",), ("op",), np.array([1]), np.array([9 * MS]), np.array([4 * MS])
    )
    base = dataclasses.replace(_flat(), host_ops=table, kernels=table)
    [op] = match_rows(base, base, "host_ops")
    [kernel] = match_rows(base, base, "kernels")
    assert op.base_ns == 0.4 * MS and kernel.base_ns == 0.9 * MS


def test_a_row_below_a_cut_tables_last_row_is_not_called_new_or_gone() -> None:
    """A summary file keeps the top rows of each table: a key missing from a cut table is
    unknown there, not absent; from a complete table it is new or gone."""
    cut = dataclasses.replace(rows(["a/Relu"], [10 * MS]), rest_ns=MS)
    full = rows(["a/Relu", "b/Sum"], [10 * MS, MS])
    base = dataclasses.replace(_flat(), host_ops=cut)
    cand = dataclasses.replace(_flat(), host_ops=full)
    assert [r.key for r in match_rows(base, cand, "host_ops")] == ["a/Relu"]
    assert [r.status for r in match_rows(cand, base, "host_ops")] == ["same"]
    base = dataclasses.replace(_flat(), host_ops=rows(["a/Relu"], [10 * MS]))
    assert {r.key: r.status for r in match_rows(base, cand, "host_ops")} == {
        "a/Relu": "same",
        "b/Sum": "new",
    }


def test_rows_are_ordered_by_the_size_of_their_change() -> None:
    base = dataclasses.replace(_flat(), host_ops=rows(["a", "b", "c"], [10 * MS, 10 * MS, 0]))
    cand = dataclasses.replace(_flat(), host_ops=rows(["a", "b", "c"], [5 * MS, 30 * MS, MS]))
    assert [r.key for r in match_rows(base, cand, "host_ops")] == ["b", "a", "c"]


def test_the_same_steps_are_no_change() -> None:
    d = diff_runs(_flat(), _flat())
    assert d.verdict == "no change in step time (the same per-step times: 10.00 ms mean)"
    assert d.driver is None and not d.flagged


def test_a_change_within_the_noise_names_a_category_that_moved() -> None:
    """No significant change of the step time, but categories moved significantly (input
    up 2 ms, compute and "other" down 1 ms each): the verdict names the biggest move."""
    rng = np.random.default_rng(3)
    base = summary(rng, steps=40, noise=0.02)
    cand = summary(rng, steps=40, noise=0.02, extra_input_ms=2.0, extra_compute_ms=-1.0)
    other = cand.category_ns["other"] - MS  # and "other" 1 ms less: the step time stays
    cand = dataclasses.replace(
        cand,
        category_ns={**cand.category_ns, "other": other},
        step_dur_ns=cand.step_dur_ns - MS,
    )
    d = diff_runs(base, cand)
    assert d.verdict.startswith("no significant change in step time (")
    assert d.verdict.endswith("; input changed +2.00 ms/step")
    assert d.driver is None


def test_one_step_each_is_compared_but_not_tested() -> None:
    d = diff_runs(_flat(steps=1), _flat(steps=1, extra_compute_ms=1.0))
    assert d.verdict == (
        "step time +10.0% (10.00 ms → 11.00 ms), "
        "too few steps to test whether it is real (need 2 in each run)"
    )
    same = diff_runs(_flat(steps=1), _flat(steps=1))
    assert same.verdict == "no change in step time (10.00 ms in both runs)"
    mean = same.metric("step_time.mean")
    assert mean is not None and not mean.tested and mean.p_value is None
    assert mean.ci_low is None and mean.rel_ci_low is None
    assert mean.ci_high is None and mean.rel_ci_high is None


def _no_steps() -> RunSummary:
    empty = np.zeros(0, np.int64)
    return dataclasses.replace(
        _flat(),
        step_num=empty,
        step_names=(),
        step_start_ns=empty,
        step_dur_ns=empty,
        category_ns={c: empty for c in _flat().category_ns},
        profile_steps=0,
    )


def test_no_steps_in_the_candidate() -> None:
    d = diff_runs(_flat(), _no_steps())
    assert d.verdict == "no steps in the candidate: step times cannot be compared"
    mean = d.metric("step_time.mean")
    assert mean is not None and mean.base == 10 * MS and mean.cand is None


def test_no_steps_in_the_baseline_is_said_without_a_numpy_warning() -> None:
    """Nothing is computed over the missing steps (a median of nothing would print numpy's
    "Mean of empty slice" warning on the user's terminal)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = diff_runs(_no_steps(), _flat())
    assert d.verdict == "no steps in the baseline: step times cannot be compared"


def test_tested_metrics_carry_their_interval_and_p_value() -> None:
    d = diff_runs(_flat(), _flat(extra_input_ms=1.0))
    mean = d.metric("step_time.mean")
    assert mean is not None and mean.unit == "ns" and mean.significant
    assert (mean.ci_low, mean.ci_high) == (1 * MS, 1 * MS)
    assert np.allclose([mean.rel_ci_low, mean.rel_ci_high], 0.1, rtol=0, atol=1e-12)
    assert mean.p_value == 0.0
    # a category that is zero in both runs is not a metric; one in either is
    names = {m.name for m in d.metrics}
    assert "category.input" in names and "category.compilation" not in names


def test_a_change_under_the_noise_floor_of_flat_runs_is_not_flagged() -> None:
    """Exactly measured (every step the same) but 0.5% of the step: below the 1% floor."""
    d = diff_runs(_flat(), _flat(extra_input_ms=0.05))
    mean = d.metric("step_time.mean")
    assert mean is not None and mean.p_value == 0.0 and not mean.significant
    one_percent = diff_runs(_flat(), _flat(extra_input_ms=0.1)).metric("step_time.mean")
    assert one_percent is not None and one_percent.significant  # the floor is inclusive


def test_single_figures_memory_peak_and_tensor_core_share() -> None:
    base = dataclasses.replace(_flat(), tensor_core_percent=40.0)
    cand = dataclasses.replace(_flat(memory_peak_bytes=None), tensor_core_percent=55.0)
    d = diff_runs(base, cand)
    peak, share = d.metric("memory.peak"), d.metric("tensor_core.share")
    assert peak is not None and share is not None
    assert (peak.label, peak.unit, peak.base, peak.cand) == ("Memory peak", "bytes", 1e9, None)
    assert (share.label, share.unit) == ("TensorCore share of kernel time", "percent")
    assert (share.base, share.cand, share.delta) == (40.0, 55.0, 15.0)
    assert d.metric("no.such") is None


def test_times_are_shown_in_ms_or_us() -> None:
    assert ms(1_234_567) == "1.23 ms" and ms(100_000) == "0.10 ms"
    assert ms(99_999) == "100.0 µs" and ms(2_500) == "2.5 µs"
    assert signed_ms(0) == "+0.0 µs" and signed_ms(-3 * MS) == "-3.00 ms"
    assert signed_ms(50 * US) == "+50.0 µs"


def test_relative_interval_needs_both_ends() -> None:
    from stepscope.stats.compare.diff import MetricChange

    m = MetricChange("x", "X", "ns", 1.0, 2.0, rel_ci_low=0.1, rel_ci_high=None)
    assert m.relative_ci() is None
    m = MetricChange("x", "X", "ns", 1.0, 2.0, rel_ci_low=None, rel_ci_high=0.1)
    assert m.relative_ci() is None
    assert MetricChange("x", "X", "ns", 0.0, 2.0).relative is None


# --- What the verdict and the tables say in the cases the flat runs above do not reach --------


def test_the_verdict_quotes_the_step_times_own_relative_interval() -> None:
    """On noisy runs the interval has two ends: the verdict prints the mean's relative
    interval, low end first."""
    rng = np.random.default_rng(5)
    base = summary(rng, steps=30, run="before")
    d = diff_runs(base, summary(rng, steps=30, extra_compute_ms=1.5, run="after"))
    mean = d.metric("step_time.mean")
    assert mean is not None and mean.rel_ci_low is not None and mean.rel_ci_high is not None
    assert mean.rel_ci_low < mean.rel_ci_high
    assert f" [{pct(mean.rel_ci_low)}, {pct(mean.rel_ci_high)}] (" in d.verdict
    assert (d.baseline.run, d.candidate.run) == ("before", "after")


def test_equal_means_with_different_spreads_are_no_significant_change() -> None:
    """The same mean step time but different per-step times: not "the same per-step times",
    a change that is not significant."""
    base = _flat()
    cand = _flat()
    spread = np.tile(np.array([-MS, MS], np.int64), 5)
    cand = dataclasses.replace(
        cand,
        step_dur_ns=cand.step_dur_ns + spread,
        category_ns={**cand.category_ns, "other": cand.category_ns["other"] + spread},
    )
    d = diff_runs(base, cand)
    assert d.verdict.startswith("no significant change in step time (+0.0% [")
    assert d.driver is None


def test_within_the_noise_the_biggest_move_is_named_whatever_its_category() -> None:
    """Device compute down 2 ms, input and "other" up 1 ms each (the step time stays): the
    verdict names device compute, the biggest move, though input comes first in the table."""
    rng = np.random.default_rng(3)
    base = summary(rng, steps=40, noise=0.02)
    cand = summary(rng, steps=40, noise=0.02, extra_input_ms=1.0, extra_compute_ms=-2.0)
    other = cand.category_ns["other"] + MS
    cand = dataclasses.replace(
        cand,
        category_ns={**cand.category_ns, "other": other},
        step_dur_ns=cand.step_dur_ns + MS,
    )
    d = diff_runs(base, cand)
    assert d.verdict.startswith("no significant change in step time (")
    assert d.verdict.endswith("; device compute changed -2.02 ms/step")  # -2 ms, and noise


def test_a_stage_gone_from_the_candidate_is_named_gone() -> None:
    """Input 2 ms faster per step because the Map stage is gone: the detail says so."""
    base, cand = _flat(), _flat(extra_input_ms=-2.0)
    prefetch = rows(["Iterator::Root::Prefetch"], [int(0.1 * 10 * MS)])
    cand = dataclasses.replace(cand, input_stages=prefetch)
    d = diff_runs(base, cand)
    assert d.driver == "input"
    assert d.driver_detail == "Map stage -2.00 ms/step, gone"


def test_a_category_change_no_row_explains_has_no_detail() -> None:
    """Input 1 ms slower per step, but no input stage changed (time outside the stages):
    the verdict names the category and no stage (not one that did not move)."""
    base = _flat()
    cand = dataclasses.replace(_flat(extra_input_ms=1.0), input_stages=base.input_stages)
    d = diff_runs(base, cand)
    assert d.driver == "input" and d.driver_detail is None
    assert d.verdict.endswith("driven by input: +1.00 ms/step")


def test_a_host_op_keeps_its_framework_name() -> None:
    """Only input stages are shortened (``Iterator::Root::Batch::Map`` -> ``Map``); a
    PyTorch op named ``aten::addmm`` keeps its whole name in the detail."""
    base = dataclasses.replace(_flat(), host_ops=rows(["aten::addmm"], [10 * MS]))
    cand = _flat()
    cats = {**cand.category_ns, "host_compute": cand.category_ns["host_compute"] + 3 * MS}
    cand = dataclasses.replace(
        cand,
        host_ops=rows(["aten::addmm"], [40 * MS]),
        category_ns=cats,
        step_dur_ns=cand.step_dur_ns + 3 * MS,
    )
    d = diff_runs(base, cand)
    assert d.driver_detail == "aten::addmm op +3.00 ms/step"


def test_a_new_rows_baseline_side_is_zero_and_a_gone_rows_type_is_kept() -> None:
    base = dataclasses.replace(_flat(), host_ops=rows(["a/Sum"], [10 * MS], [5]))
    cand = dataclasses.replace(_flat(), host_ops=rows(["b/Relu"], [20 * MS], [4]))
    by_key = {r.key: r for r in match_rows(base, cand, "host_ops")}
    new, gone = by_key["b/Relu"], by_key["a/Sum"]
    assert (new.status, new.base_ns, new.base_count, new.base_avg_ns) == ("new", 0, 0, 0.0)
    assert (new.cand_ns, new.cand_count, new.cand_avg_ns) == (2 * MS, 4, 5 * MS)
    assert (gone.status, gone.type) == ("gone", base.host_ops.types[0])


def test_rows_missing_below_a_cut_are_skipped_wherever_they_come() -> None:
    """Keys below the baseline's cut are skipped, not the end of the matching: the rows
    after them are still compared."""
    cut = dataclasses.replace(rows(["a/Relu"], [10 * MS]), rest_ns=MS)
    # the candidate's rows come first, largest first: the two unknown keys lead
    full = rows(["b/Sum", "c/Exp", "a/Relu"], [20 * MS, 15 * MS, 12 * MS])
    base = dataclasses.replace(_flat(), host_ops=cut)
    cand = dataclasses.replace(_flat(), host_ops=full)
    assert [r.key for r in match_rows(base, cand, "host_ops")] == ["a/Relu"]


def test_a_kernel_is_compared_by_its_total_time_on_both_sides() -> None:
    table = NamedRows.aggregate(
        ("volta_sgemm",), ("kernel",), np.array([1]), np.array([9 * MS]), np.array([4 * MS])
    )
    base = dataclasses.replace(_flat(), kernels=table)
    [kernel] = match_rows(base, base, "kernels")
    assert (kernel.base_ns, kernel.cand_ns) == (0.9 * MS, 0.9 * MS)


def test_times_are_printed_in_ms_from_100_us_and_in_us_below() -> None:
    assert [ms(10_000 * MS), ms(100 * US), ms(99 * US), signed_ms(-2.5 * MS)] == [
        "10000.00 ms",
        "0.10 ms",
        "99.0 µs",
        "-2.50 ms",
    ]
