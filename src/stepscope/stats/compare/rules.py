"""``--fail-on`` rules: a small expression language over the diff's named metrics.

    RULE   := METRIC OP CHANGE
    METRIC := step_time.median | step_time.mean | step_time.p90 | step_time.stddev
              | category.<name> | bound.<limit> | core_wait | warmup.time | memory.peak
              | tensor_core.share
              (aliases: step_time, memory)
    OP     := > | >= | < | <=
    CHANGE := [+|-]NUMBER UNIT, UNIT one of
              %                 relative to the baseline
              ns us ms s        absolute, for time metrics (per step)
              B KB MB GB KiB MiB GiB   absolute, for memory.peak
              pp                percentage points, for tensor_core.share

A rule fails when the change satisfies it and, for metrics with per-step samples (step time,
categories), the change is statistically significant (see `significance`): noise never fails
a build. ``core_wait`` (the steps' thread's wait for a CPU core per step, the stack sampler's
readings) is tested on its own. A failing step-time or category rule whose change the
verdict calls the machine's load (`RunDiff.core_wait_share`) still fails, and its reason
says so (decision 952). After a warm-up those metrics are the steps once warm (`diff_runs`).
The warm-up's
time, memory peak and TensorCore share are one figure per run and compare as they are.
"""

from __future__ import annotations

import re

from stepscope.errors import StepscopeError
from stepscope.records import record
from stepscope.stats.compare.diff import MetricChange, RunDiff, share_of_change, waiting_threads

_RULE = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][\w.]*)\s*(?P<op>>=|<=|>|<)\s*"
    r"(?P<value>[+-]?\d+(?:\.\d+)?)\s*(?P<unit>%|[A-Za-z]+)\s*$"
)
_ALIASES = {"step_time": "step_time.median", "memory": "memory.peak"}
_TIME = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_BYTES = {
    "b": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "kib": 1024.0,
    "mib": 1024.0**2,
    "gib": 1024.0**3,
}
_UNIT_WORDS = {"ns": "a time (ns, us, ms, s)", "bytes": "bytes (B, KB, MB, GB, KiB, MiB, GiB)"}


@record
class Rule:
    text: str
    metric: str
    op: str
    value: float  # fraction for %, else in the metric's unit (ns, bytes, percent points)
    relative: bool


@record
class RuleResult:
    rule: Rule
    failed: bool
    reason: str  # one line, for the terminal and CI logs


def parse_rule(text: str, metric_names: tuple[str, ...]) -> Rule:
    """One rule; errors name the rule, what is wrong and the accepted forms."""
    m = _RULE.match(text)
    if not m:
        raise StepscopeError(
            f"--fail-on {text!r}: not METRIC OP CHANGE, e.g. 'step_time.median>+5%' or "
            "'memory.peak>+100MB'"
        )
    metric = _ALIASES.get(m["metric"], m["metric"])
    if metric not in metric_names:
        raise StepscopeError(
            f"--fail-on {text!r}: unknown metric {m['metric']!r}; metrics: "
            + ", ".join(metric_names)
        )
    number, unit = float(m["value"]), m["unit"]
    if unit == "%":
        return Rule(text, metric, m["op"], number / 100.0, True)
    kind = _kind_of(metric)
    scale = {"ns": _TIME, "bytes": _BYTES, "percent": {"pp": 1.0}}[kind].get(
        unit if kind == "ns" else unit.lower()
    )
    if scale is None:
        accepted = _UNIT_WORDS.get(kind, "percentage points (pp)")
        raise StepscopeError(
            f"--fail-on {text!r}: unit {unit!r} does not fit {metric}; use % or {accepted}"
        )
    return Rule(text, metric, m["op"], number * scale, False)


def _kind_of(metric: str) -> str:
    if metric.startswith(("step_time.", "category.", "bound.", "warmup.")) or metric == "core_wait":
        return "ns"
    return "bytes" if metric == "memory.peak" else "percent"


def metric_names() -> tuple[str, ...]:
    from stepscope.stats.compare.diff import STEP_STATISTICS
    from stepscope.stats.events import CATEGORY_NAMES
    from stepscope.stats.steps.limits import LIMIT_NAMES

    return (
        *(f"step_time.{s}" for s in STEP_STATISTICS),
        *(f"category.{c}" for c in CATEGORY_NAMES),
        *(f"bound.{c}" for c in LIMIT_NAMES),
        "core_wait",
        "warmup.time",
        "memory.peak",
        "tensor_core.share",
    )


def _holds(value: float, op: str, threshold: float) -> bool:
    return {
        ">": value > threshold,
        ">=": value >= threshold,
        "<": value < threshold,
        "<=": value <= threshold,
    }[op]


def _show(m: MetricChange, rule: Rule) -> str:
    if rule.relative:
        rel = m.relative or 0.0
        ci = m.relative_ci()
        return f"{rel * 100:+.1f}%" + (f" [{ci[0] * 100:+.1f}%, {ci[1] * 100:+.1f}%]" if ci else "")
    delta = m.delta or 0.0
    if m.unit == "ns":
        return f"{delta / 1e6:+.3f} ms"
    if m.unit == "bytes":
        return f"{delta / 1e6:+.1f} MB"
    return f"{delta:+.2f} pp"


def evaluate(rule: Rule, diff: RunDiff) -> RuleResult:
    m = diff.metric(rule.metric)
    if m is None or m.base is None or m.cand is None:
        side = "baseline" if m is None or m.base is None else "candidate"
        where = f"in the {side} "
        if rule.metric.startswith("warmup."):
            where, why = "", "neither run's first steps are warm-up"
        elif rule.metric == "core_wait":
            why = "no stack sampler readings of its steps' thread (of every rank, for a job)"
        else:
            why = "no steps" if _kind_of(rule.metric) == "ns" else "not measured in that run"
        raise StepscopeError(
            f"--fail-on {rule.text!r}: {rule.metric} is not available {where}({why})"
        )
    if rule.relative and not m.base:
        raise StepscopeError(
            f"--fail-on {rule.text!r}: {rule.metric} is 0 in the baseline, so a relative change "
            "is undefined; give an absolute change instead"
        )
    value = (m.relative or 0.0) if rule.relative else (m.delta or 0.0)
    crossed = _holds(value, rule.op, rule.value)
    shown = _show(m, rule)
    if diff.once_warm and m.tested:  # the steps after each run's warm-up
        shown = f"once warm {shown}"
    if not crossed:
        return RuleResult(rule, False, f"ok   {rule.text}: {rule.metric} {shown}")
    if m.tested and not m.significant:
        p = f", p={m.p_value:.3f}" if m.p_value is not None else ""
        return RuleResult(
            rule, False, f"ok   {rule.text}: {rule.metric} {shown} is within noise{p}"
        )
    why = " (significant)" if m.tested else ""
    share = diff.core_wait_share
    if share is not None and rule.metric.startswith(("step_time.", "category.", "bound.")):
        # still a failure: the steps were slower; the reason says why (decision 952)
        whose = waiting_threads(diff.candidate)
        whose += "'" if whose.endswith("s") else "'s"
        why += (
            f"; the change is the machine's load, not the program: {whose} extra wait for a "
            f"CPU core is {share_of_change(share)} (profile again on an idle machine)"
        )
    return RuleResult(rule, True, f"FAIL {rule.text}: {rule.metric} {shown}{why}")
