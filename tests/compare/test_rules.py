"""The --fail-on language: parsing, units, and 'only significant changes fail'."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.errors import StepscopeError
from stepscope.stats.compare import diff_runs, evaluate, metric_names, parse_rule
from tests.compare.synthetic import summary

NAMES = metric_names()


def test_parse_forms() -> None:
    r = parse_rule("step_time.median>+5%", NAMES)
    assert (r.metric, r.op, r.value, r.relative) == ("step_time.median", ">", 0.05, True)
    r = parse_rule(" memory >= 100MiB ", NAMES)
    assert (r.metric, r.op, r.value, r.relative) == ("memory.peak", ">=", 100 * 2**20, False)
    r = parse_rule("category.input>2ms", NAMES)
    assert r.value == 2e6 and not r.relative
    r = parse_rule("tensor_core.share<-10pp", NAMES)
    assert (r.op, r.value) == ("<", -10.0)
    assert parse_rule("step_time<=-3%", NAMES).metric == "step_time.median"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("step_time.median", "not METRIC OP CHANGE"),
        ("step_time.median>5", "not METRIC OP CHANGE"),
        ("steptime>5%", "unknown metric 'steptime'; metrics: step_time.median"),
        ("memory.peak>5ms", "unit 'ms' does not fit memory.peak; use % or bytes"),
        ("step_time.median>5MB", "use % or a time (ns, us, ms, s)"),
    ],
)
def test_bad_rules_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(StepscopeError, match="--fail-on") as info:
        parse_rule(text, NAMES)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_significant_slowdown_fails_and_noise_does_not() -> None:
    rng = np.random.default_rng(1)
    base = summary(rng)
    slow = diff_runs(base, summary(rng, extra_input_ms=1.0))
    result = evaluate(parse_rule("step_time.median>+5%", NAMES), slow)
    assert result.failed and result.reason.startswith("FAIL step_time.median>+5%")
    assert "(significant)" in result.reason
    assert not evaluate(parse_rule("step_time.median>+15%", NAMES), slow).failed
    # a 1.5% shift in 3 steps clears a 1% threshold but is not significant: it must not fail
    rng = np.random.default_rng(2)
    few = diff_runs(summary(rng, steps=3), summary(rng, steps=3, extra_compute_ms=0.15))
    noisy = evaluate(parse_rule("step_time.mean>+1%", NAMES), few)
    assert not noisy.failed and "within noise" in noisy.reason


def test_single_figure_metrics_fail_on_the_threshold() -> None:
    rng = np.random.default_rng(3)
    d = diff_runs(summary(rng), summary(rng, memory_peak_bytes=1_150_000_000))
    assert evaluate(parse_rule("memory.peak>+10%", NAMES), d).failed
    assert not evaluate(parse_rule("memory.peak>+20%", NAMES), d).failed
    assert evaluate(parse_rule("memory.peak>+100MB", NAMES), d).failed


def test_missing_metric_is_an_error_not_a_pass() -> None:
    rng = np.random.default_rng(4)
    d = diff_runs(summary(rng, memory_peak_bytes=None), summary(rng))
    with pytest.raises(StepscopeError, match=r"memory\.peak is not available in the baseline"):
        evaluate(parse_rule("memory.peak>+10%", NAMES), d)
