"""Acceptance on synthetic pairs made in code (issue #16; figures in docs/benchmarks.md):
two runs of one distribution flag nothing in >= 95 of 100 seeded pairs; a 10% slowdown over
50 steps with 5% noise is flagged in >= 95 of 100, blaming the category that slowed down.

The 100 pairs (1.2 s of CPU each, a bootstrap of 2000 resamples a pair) are the acceptance
run of the slow tier, marked integration; the default tier runs their first 20 at the same
rate, 19 of 20 (decision 715)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.compare import diff_runs
from tests.compare.synthetic import MS, summary

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

# (pairs, how many must pass): the acceptance's 95%, on 20 pairs in the default tier
RUNS = [
    pytest.param(20, 19, id="20"),
    pytest.param(100, 95, id="100", marks=pytest.mark.integration),
]


@pytest.mark.parametrize(("pairs", "needed"), RUNS)
def test_same_distribution_flags_nothing_in_95_of_100_pairs(pairs: int, needed: int) -> None:
    quiet = 0
    for seed in range(pairs):
        rng = np.random.default_rng(seed)
        d = diff_runs(summary(rng), summary(rng))
        quiet += not d.flagged
    assert quiet >= needed


@pytest.mark.parametrize(("pairs", "needed"), RUNS)
def test_ten_percent_input_slowdown_flagged_with_input_blamed(pairs: int, needed: int) -> None:
    caught = 0
    for seed in range(pairs):
        rng = np.random.default_rng(10_000 + seed)
        d = diff_runs(summary(rng), summary(rng, extra_input_ms=1.0))
        median = d.metric("step_time.median")
        assert median is not None
        caught += median.significant and (median.delta or 0) > 0 and d.driver == "input"
    assert caught >= needed


def test_ten_percent_compute_slowdown_blames_device_compute() -> None:
    caught = 0
    for seed in range(20):
        rng = np.random.default_rng(20_000 + seed)
        d = diff_runs(summary(rng), summary(rng, extra_compute_ms=1.0))
        caught += d.driver == "device_compute" and (d.driver_detail or "").startswith(
            "fusion.3 op +"
        )
    assert caught >= 19


def test_verdict_names_change_interval_category_and_stage() -> None:
    rng = np.random.default_rng(7)
    d = diff_runs(summary(rng), summary(rng, extra_input_ms=1.0))
    assert d.verdict.startswith("step time +")
    assert "driven by input: +1.0" in d.verdict and "Map stage +1.00 ms/step" in d.verdict
    assert d.driver_detail == "Map stage +1.00 ms/step"


def test_no_change_verdict_and_no_driver() -> None:
    rng = np.random.default_rng(8)
    d = diff_runs(summary(rng), summary(rng))
    assert d.verdict.startswith("no significant change in step time")
    assert d.driver is None


def test_fusion_renumbering_matches_rows() -> None:
    rng = np.random.default_rng(9)
    d = diff_runs(summary(rng), summary(rng))
    keys = {r.key: r.status for r in d.device_ops}
    assert keys == {"fusion": "same", "convolution": "same"}


def test_memory_peak_compared_as_one_figure() -> None:
    rng = np.random.default_rng(10)
    d = diff_runs(summary(rng), summary(rng, memory_peak_bytes=1_200_000_000))
    peak = d.metric("memory.peak")
    assert peak is not None and not peak.tested and peak.relative is not None
    assert abs(peak.relative - 0.2) < 1e-9


def test_ops_spread_over_all_profile_steps() -> None:
    rng = np.random.default_rng(11)
    a = summary(rng)
    b = summary(rng, extra_input_ms=2.0)
    d = diff_runs(a, b)
    stage = d.input_stages[0]
    assert abs(stage.delta_ns - 2.0 * MS) < 1e3


def test_runs_without_steps_say_so_and_rules_on_them_are_errors() -> None:
    import dataclasses

    import pytest

    from stepscope.errors import StepscopeError
    from stepscope.stats.compare import evaluate, metric_names, parse_rule

    rng = np.random.default_rng(12)
    full = summary(rng)
    empty = np.zeros(0, np.int64)
    none = dataclasses.replace(
        full,
        step_num=empty,
        step_names=(),
        step_start_ns=empty,
        step_dur_ns=empty,
        category_ns={c: empty for c in full.category_ns},
        profile_steps=0,
    )
    d = diff_runs(none, full)
    assert d.verdict == "no steps in the baseline: step times cannot be compared"
    assert not d.flagged and d.input_stages  # ops still compare (run totals)
    with pytest.raises(StepscopeError, match=r"not available in the baseline \(no steps\)"):
        evaluate(parse_rule("step_time.median>+5%", metric_names()), d)
