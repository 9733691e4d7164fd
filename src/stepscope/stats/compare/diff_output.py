"""What `stepscope diff --json` and the Compare page's ``/api/compare`` answer: the diff of
two runs as declared fields (`stepscope.fields`), serialized by `stepscope.tools.output`.
The field tables of docs/tools/diff.md are generated from these classes."""

from __future__ import annotations

from collections.abc import Sequence

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.compare.diff import (
    CORE_WAIT,
    CORE_WAIT_LABEL,
    NOISE_FLOOR,
    MetricChange,
    RowChange,
    RunDiff,
)
from stepscope.stats.compare.rules import RuleResult
from stepscope.stats.compare.run_summary import RunSummary

STATISTIC = (
    "seeded expanded percentile bootstrap (2000 resamples) of the change, 95% interval; "
    "significant = Holm-adjusted p < 0.05 over the step-time and category metrics (the "
    "`bound.` limits: a family of their own), and a "
    f"change of at least {NOISE_FLOOR:.0%} of the baseline median step time"
)


def core_wait_note(diff: RunDiff) -> str:
    """The significance footnote's words on the core-wait row, tested on its own outside the
    Holm family (decision 950), when it is tested; "" otherwise."""
    wait = diff.metric(CORE_WAIT)
    if wait is None or not wait.tested:
        return ""
    return f"{CORE_WAIT_LABEL}: tested on its own, p < 0.05"


def statistic(diff: RunDiff) -> str:
    """How significance was decided, as every output of the diff says it."""
    note = core_wait_note(diff)
    return f"{STATISTIC}; {note}" if note else STATISTIC


@record
class DiffStep:
    step_num: int = out("step number")
    name: str = out("step name")
    start_ns: int = out("start on the profile's clock (for trace viewer links)", unit="ns")
    dur_ns: int = out("step time", unit="ns")


@record
class DiffSide:
    run: str = out("the run's name or path (or the summary file)")
    host: str = out("the host compared, or `ALL_HOSTS`")
    hosts: list[str] = out("the hosts it covers")
    framework: str = out("framework(s) that wrote the profile")
    step_source: str = out("how steps were found (as the overview's `step_source`)")
    step_description: str = out("the same, in words")
    steps: tuple[DiffStep, ...] = out("its steps")
    bound_by: str = out(
        'what bounds its steps: the overview\'s "Bound by" headline ("" from an older summary)'
    )
    warmup_steps: list[int] = out(
        "step numbers of its warm-up steps (the overview's `steady_state.warmup_steps`), left "
        "out of the step figures when `compared` is `once_warm`; [] without a warm-up"
    )
    bound_by_once_warm: str = out(
        "what bounds its steps after the warm-up (the overview's `steady_state.bound_by` "
        'headline); "" without a warm-up'
    )


@record
class Metric:
    name: str = out("metric name, as `--fail-on` rules name it (table above)")
    label: str = out("its name for people")
    unit: str = out("`ns`, `bytes` or `percent`")
    baseline: float | None = out("the baseline's value; `null` when it has none")
    candidate: float | None = out("the candidate's value")
    delta: float | None = out("candidate - baseline")
    relative: float | None = out("delta / baseline (a fraction); `null` for a zero baseline")
    ci_low: float | None = out("95% interval of the delta, low end (tested metrics)")
    ci_high: float | None = out("its high end")
    relative_ci: list[float] | None = out("the interval of `relative`, [low, high]")
    p_value: float | None = out("bootstrap p-value (before Holm's correction)")
    tested: bool = out("has per-step samples in both runs")
    significant: bool = out("tested, Holm-significant and above the noise floor")


@record
class RowDelta:
    key: str = out("match key (numbers, addresses and template arguments normalized)")
    name: str = out("the candidate's name, else the baseline's")
    type: str = out("op type, kernel, or the input stage's category")
    status: str = out(
        "`changed` (in both), `same` (in both, the same time per step and count), `new` (only "
        "in the candidate) or `gone` (only in the baseline)"
    )
    baseline_ns_per_step: float = out("self time per step (total for kernels)", unit="ns", digits=1)
    candidate_ns_per_step: float = out("the same in the candidate", unit="ns", digits=1)
    delta_ns_per_step: float = out("candidate - baseline", unit="ns", digits=1)
    baseline_count: int = out("occurrences in the baseline")
    candidate_count: int = out("occurrences in the candidate")
    baseline_avg_ns: float = out("time per occurrence in the baseline", unit="ns", digits=1)
    candidate_avg_ns: float = out("time per occurrence in the candidate", unit="ns", digits=1)


@record
class RuleOutcome:
    rule: str = out("the rule as given to `--fail-on`")
    metric: str = out("the metric it tests")
    failed: bool = out("whether it failed")
    reason: str = out("one line saying why")


@record
class DiffOutput:
    baseline: DiffSide = out("the baseline run")
    candidate: DiffSide = out("the candidate run")
    compared: str = out(
        "the steps the step-time and category metrics compare: `once_warm` (each run's steps "
        "after its warm-up, when either run has one) or `all` (every step: no warm-up, or "
        "`--all-steps`)"
    )
    verdict: str = out("the change in words (see above)")
    driver: str | None = out(
        "what drove the step-time change: the `bound.` limit (the report's headline), or the "
        "category for a summary file without limits"
    )
    driver_detail: str | None = out(
        "its stage or op that moved most, e.g. `Map stage -68.1 ms/step`"
    )
    core_wait_share: float | None = out(
        "the candidate's extra wait for a CPU core per step as a share of the mean step time's "
        "change, when the verdict calls the change the machine's load (absent otherwise)",
        omit_none=True,
    )
    metrics: tuple[Metric, ...] = out("every compared metric")
    host_ops: tuple[RowDelta, ...] = out("host ops matched by name, biggest change first")
    device_ops: tuple[RowDelta, ...] = out("device ops")
    kernels: tuple[RowDelta, ...] = out("kernels")
    input_stages: tuple[RowDelta, ...] = out("input stages")
    statistic: str = out("how intervals and significance were computed")
    rules: tuple[RuleOutcome, ...] | None = out(
        "`stepscope diff --json` only: each `--fail-on` rule's outcome", omit_none=True
    )
    exit_code: int | None = out(
        "`stepscope diff --json` only: the command's exit status", omit_none=True
    )


def _side(s: RunSummary) -> DiffSide:
    steps = zip(
        s.step_num.tolist(),
        s.step_names,
        s.step_start_ns.tolist(),
        s.step_dur_ns.tolist(),
        strict=True,
    )
    return DiffSide(
        s.run,
        s.host,
        list(s.hosts),
        s.framework,
        s.step_source,
        s.step_description,
        tuple(DiffStep(*step) for step in steps),
        s.bound_by,
        s.step_num[: s.warmup_steps].tolist(),
        s.bound_by_once_warm,
    )


def _metric(m: MetricChange) -> Metric:
    rel_ci = m.relative_ci()
    return Metric(
        m.name,
        m.label,
        m.unit,
        m.base,
        m.cand,
        m.delta,
        m.relative,
        m.ci_low,
        m.ci_high,
        list(rel_ci) if rel_ci else None,
        m.p_value,
        m.tested,
        m.significant,
    )


def _rows(rows: Sequence[RowChange]) -> tuple[RowDelta, ...]:
    return tuple(
        RowDelta(
            r.key,
            r.name,
            r.type,
            r.status,
            r.base_ns,
            r.cand_ns,
            r.delta_ns,
            r.base_count,
            r.cand_count,
            r.base_avg_ns,
            r.cand_avg_ns,
        )
        for r in rows
    )


def diff_output(
    diff: RunDiff, results: Sequence[RuleResult] | None = None, exit_code: int | None = None
) -> DiffOutput:
    """The JSON answer of ``diff`` (with the CLI's rule outcomes and exit status, if given)."""
    rules = None
    if results is not None:
        rules = tuple(RuleOutcome(r.rule.text, r.rule.metric, r.failed, r.reason) for r in results)
    return DiffOutput(
        _side(diff.baseline),
        _side(diff.candidate),
        "once_warm" if diff.once_warm else "all",
        diff.verdict,
        diff.driver,
        diff.driver_detail,
        diff.core_wait_share,
        tuple(_metric(m) for m in diff.metrics),
        _rows(diff.host_ops),
        _rows(diff.device_ops),
        _rows(diff.kernels),
        _rows(diff.input_stages),
        statistic(diff),
        rules,
        exit_code,
    )
