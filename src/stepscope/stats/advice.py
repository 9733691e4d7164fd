"""Bottleneck classification and advice, with XProf's thresholds
(``xprof/convert/op_stats_to_input_pipeline_analysis.cc`` and ``op_stats_to_overview_page.cc``).

Input: input share of the total step time >= 20% -> "high", >= 5% -> "moderate", else
"potential" when "all others" >= 3%, else "no". stepscope departs from XProf in one case: when
input is near zero (< 1%) and "All Others" is high (>= 15%), the program is not called
input-bound: the statement says the time is untraced host work and where it sits (thread,
traced events around it, Python functions from the stack sampler).
Other categories are flagged "moderate" from their low threshold and "high" from their high
one: output 5/20, kernel launch 3/15, all others 3/15, device collectives 3/15, and (not
XProf's) collective wait on the host 3/15.
"""

from __future__ import annotations

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.summary import StepSummary
from stepscope.stats.untraced import Untraced

HIGH_INPUT = 20.0
MODERATE_INPUT = 5.0
POTENTIAL_OTHER = 3.0
NEAR_ZERO_INPUT = 1.0  # % of step time: below it, "All Others" is not waiting for input
HIGH_OTHER = 15.0
THRESHOLDS: dict[str, tuple[float, float]] = {  # category -> (moderate, high), in %
    "output": (5.0, 20.0),
    "kernel_launch": (3.0, 15.0),
    "other": (3.0, 15.0),
    "device_collectives": (3.0, 15.0),
    "collective_wait": (3.0, 15.0),
}
# Diagnostics findings that say (with evidence) what a generic category line would: with the
# finding in the advice, the generic line is left out so no advice is given twice.
FINDING_TOPICS = {
    "kernel_launch_bound": "kernel_launch",
    "collectives": "device_collectives",
    "low_tensor_core_use": "precision",
}
MIXED_PRECISION_BELOW = 10.0  # % of device compute in 16 bit
EAGER_ABOVE = 10.0  # % of op time run eagerly


@record
class InputBound:
    """How input-bound the steps are, and why."""

    classification: str = out(
        '`high` (input >= 20%), `moderate` (>= 5%), `no` when input < 1% and "other" >= 15% '
        "(untraced host work, not input: the statement says where it sits), `potential` "
        '(input < 5% but "other" >= 3%: XProf\'s "could be I/O or Python"), `no` otherwise, '
        "`unknown` (no steps)"
    )
    percent: float = out("input share of the total step time", unit="%", digits=3)
    statement: str = out(
        "the conclusion in words (XProf's wording, but for the untraced-host-work case)"
    )


def where_untraced(untraced: Untraced, n_steps: int, step_ns: int) -> str:
    """'on thread T, mostly after A and before B (x ms per step); Python: f 40%, ...'."""
    n_steps, step_ns = untraced.per(n_steps, step_ns)
    parts = []
    if untraced.places:
        place = untraced.places[0]
        on_host = f"on host {untraced.host}, " if untraced.host else ""
        parts.append(
            f"{on_host}on thread {untraced.thread or '?'}, mostly after '{place.after}' and before "
            f"'{place.before}' ({place.ns / 1e6 / max(n_steps, 1):.2f} ms per step in "
            f"{place.steps} of {n_steps} steps)"
        )
    python = untraced.python
    if len(python) and step_ns:
        named = ", ".join(
            f"{python.function[k]} {100.0 * python.ns[k] / step_ns:.1f}%"
            for k in range(min(3, len(python)))
        )
        parts.append(f"Python functions sampled there: {named} of the step time")
    return "; ".join(parts)


def classify_steps(summary: StepSummary) -> InputBound:
    """`classify_input` for a step summary, with the untraced time located."""
    return classify_input(
        summary.percent("input"),
        summary.percent("other"),
        summary.n_steps > 0,
        where_untraced(summary.untraced, summary.n_steps, summary.total_ns()),
        summary.staged_percent(),
    )


def classify_input(
    input_percent: float,
    other_percent: float,
    has_steps: bool = True,
    where: str = "",
    staged_percent: float = 0.0,
) -> InputBound:
    """``where``: where the untraced time sits (`where_untraced`), said when it decides.
    ``staged_percent``: input staged inside the steps (`stepscope.stats.steps.staging`), which
    counts as input here though XProf counts it as host compute."""
    if staged_percent > 0:
        bound = classify_input(input_percent + staged_percent, other_percent, has_steps, where)
        staged = (
            f" ({staged_percent:.1f}% of it inside the steps, building the batch and copying it "
            "to the device before the step's compute; XProf counts that as host compute)"
        )
        return InputBound(
            bound.classification, bound.percent, _after_first(bound.statement, staged)
        )
    if not has_steps:
        return InputBound(
            "unknown",
            0.0,
            "No step time measured, so where the time goes in a step cannot be told.",
        )
    if input_percent >= HIGH_INPUT:
        return InputBound(
            "high",
            input_percent,
            f"Your program is HIGHLY input-bound because {input_percent:.1f}% of the "
            "total step time sampled is waiting for input. Therefore, you should "
            "first focus on reducing the input time.",
        )
    if input_percent >= MODERATE_INPUT:
        return InputBound(
            "moderate",
            input_percent,
            f"Your program is MODERATELY input-bound because {input_percent:.1f}% of "
            "the total step time sampled is waiting for input. Therefore, you would "
            "need to reduce both the input time and other time.",
        )
    if input_percent < NEAR_ZERO_INPUT and other_percent >= HIGH_OTHER:
        return InputBound(
            "no",
            input_percent,
            f"Your program is NOT input-bound: only {input_percent:.1f}% of the total step "
            f"time is spent waiting for input, while {other_percent:.1f}% is untraced host work "
            "('All Others': Python code, synchronization or I/O that no traced op covers)"
            + (f", {where}" if where else "")
            + ". Focus on that host work first.",
        )
    if other_percent >= POTENTIAL_OTHER:
        return InputBound(
            "potential",
            input_percent,
            f"Your program is POTENTIALLY input-bound because {other_percent:.1f}% of "
            "the total step time sampled is spent on 'All Others' time (which could "
            "be due to I/O or Python execution or both).",
        )
    return InputBound(
        "no",
        input_percent,
        f"Your program is NOT input-bound because only {input_percent:.1f}% of the "
        "total step time sampled is waiting for input. Therefore, you should "
        "focus on reducing other time.",
    )


def _after_first(statement: str, note: str) -> str:
    """``note`` inserted after the input share the statement states first."""
    marks = (" is waiting for input", " is spent waiting for input", " waiting for input")
    for mark in marks:
        if mark in statement:
            return statement.replace(mark, mark + note, 1)
    return statement + note


def level(category: str, percent: float) -> str:
    """ "high", "moderate" or "no" for a category with thresholds."""
    moderate, high = THRESHOLDS[category]
    return "high" if percent >= high else "moderate" if percent >= moderate else "no"


_CATEGORY_ADVICE = {
    "output": "{pct:.1f}% of the step time is spent copying output from the device to the "
    "host: fetch fewer or smaller results per step, or fetch them less often.",
    "kernel_launch": "{pct:.1f}% of the step time is spent launching kernels: the host cannot "
    "keep the device busy. Use fewer, larger kernels (XLA / torch.compile / "
    "CUDA graphs){thread_mode}.",
    "other": "{pct:.1f}% of the step time is not covered by any traced work ('All Others'): "
    "Python overhead, synchronization or untraced I/O. Look at the trace viewer for "
    "the gaps between ops.",
    "device_collectives": "{pct:.1f}% of the step time is spent in collective communication: "
    "overlap communication with compute, use larger buckets, or check "
    "the interconnect.",
    "collective_wait": "{pct:.1f}% of the step time is spent in collectives on the host (gloo, "
    "MPI, XLA or TensorFlow collectives), mostly waiting for the rank that arrives last: see "
    "the pod viewer's stragglers for who and why; otherwise overlap communication with "
    "compute.",
}


@record
class Recommendation:
    """What bounds the steps and what to do about it."""

    bottleneck: str = out(
        "`input` (highly input-bound), `both` (moderately or potentially), `device` / `host` "
        "(not input-bound), `unknown`"
    )
    statement: str = out("the input conclusion")
    details: tuple[str, ...] = out(
        "further findings, most important first: the tf.data bottleneck and its fix, output "
        "5/20%, kernel launch 3/15% (with `TF_GPU_THREAD_MODE=gpu_private` advice when "
        "tf.data is used), all-others 3/15%, collectives 3/15% (`HIGH:` past the high "
        "threshold), reduced-precision (below 32-bit) share below 10% (mixed precision), "
        "eager time above 10% (tf.function / jit), the diagnostics tool's high and medium "
        "findings with their fixes"
    )
    tips: tuple[str, ...] = out("where to look next")


def recommend(
    summary: StepSummary,
    bound: InputBound,
    *,
    precision_16_percent: float | None = None,
    eager_percent: float = 0.0,
    uses_tf_data: bool = False,
    tf_data_advice: str = "",
    covered: frozenset[str] = frozenset(),
) -> Recommendation:
    """The advice; topics in ``covered`` (categories, "precision") are given elsewhere."""
    if bound.classification == "unknown":
        return Recommendation(
            "unknown",
            bound.statement,
            (summary.description,),
            ("trace_viewer: look for the repeating work of a step",),
        )
    bottleneck = {"high": "input", "moderate": "both", "potential": "both"}.get(
        bound.classification, "device" if summary.has_device else "host"
    )
    details: list[str] = []
    if bound.classification == "potential":  # the statement already is the 'All Others' advice
        covered = covered | {"other"}
    for category in THRESHOLDS:
        if category in covered:
            continue
        pct = summary.percent(category)
        if level(category, pct) == "no":
            continue
        thread_mode = (
            (
                " and set TF_GPU_THREAD_MODE=gpu_private so tf.data threads do not "
                "compete with kernel launches"
            )
            if uses_tf_data
            else ""
        )
        text = _CATEGORY_ADVICE[category].format(pct=pct, thread_mode=thread_mode)
        if category == "other":
            where = where_untraced(summary.untraced, summary.n_steps, summary.total_ns())
            text += f" It sits {where}." if where else ""
        details.append(("HIGH: " if level(category, pct) == "high" else "") + text)
    if bound.classification in ("high", "moderate") and tf_data_advice:
        details.insert(0, tf_data_advice)
    if (
        "precision" not in covered
        and precision_16_percent is not None
        and precision_16_percent < MIXED_PRECISION_BELOW
    ):
        details.append(
            f"Only {precision_16_percent:.1f}% of the device compute time runs in "
            "16-bit precision: mixed precision (bf16/fp16) could speed it up."
        )
    if eager_percent > EAGER_ABOVE:
        details.append(
            f"{eager_percent:.1f}% of the op time runs eagerly: wrap the step in "
            "tf.function (or jit / torch.compile) to run it as a graph."
        )
    tips = (
        ["input_pipeline_analyzer: the breakdown of input time on the host"]
        if bottleneck in ("input", "both")
        else []
    )
    tips += ["op_stats: the most time-consuming ops", "trace_viewer: the timeline of each step"]
    return Recommendation(bottleneck, bound.statement, tuple(details), tuple(tips))
