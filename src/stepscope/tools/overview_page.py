"""overview_page: where each step's time goes, the top ops, the run, and what to do first.

Fields and units: docs/tools/overview_page.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from stepscope.records import record
from stepscope.stats import CATEGORY_NAMES, OpTable, StepStats, StepSummary
from stepscope.stats import rank_input as by_rank
from stepscope.stats.advice import (
    FINDING_TOPICS,
    MODERATE_INPUT,
    InputBound,
    Recommendation,
    classify_steps,
    limit_level,
    recommend,
)
from stepscope.stats.bound import BoundBy, bound_by
from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.diagnostics.cores import waiting_first
from stepscope.stats.gpu.device import DeviceInfo
from stepscope.stats.host.python_samples import MIN_SAMPLES, PYTHON_OP_TYPE
from stepscope.stats.input.input_pipeline import (
    advice_for,
    has_generator,
    has_prefetch,
    held_by_python_fix,
    is_parallel_map,
    py_function_map_advice,
)
from stepscope.stats.input.loader_workers import JUDGED_VERDICTS
from stepscope.stats.job_steps import JobSteps, job_steps
from stepscope.stats.kernel_rules import PRECISIONS, REDUCED_PRECISIONS
from stepscope.stats.op_metrics import ranked
from stepscope.stats.warmup import SteadyState, steady_state, steps_from, warmup_count
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

TOP_OPS = 10
NEGLIGIBLE_PIPELINE_SHARE = 0.05  # as tf_data_bottleneck_analysis: under 5% of a step


@record
class StepRow:
    """One step of the overview: its time and breakdown."""

    step: int = out("step number (`step_num`, `N` of `ProfilerStep#N`, or 0.. for inferred steps)")
    name: str = out("e.g. `train 6`")
    start_ns: int = out("start on the profile's clock", "ns")
    duration_ns: int = out("step time", "ns")
    breakdown_ns: dict[str, int] = out(
        "time per category (below); the categories add up to `duration_ns`", "ns"
    )


@record
class TopOp:
    """One of the ops with the most self time."""

    rank: int = out("1 for the op with the most self time")
    side: str = out("`device` or `host`")
    category: str = out("op type (`MatMul`, `Kernel`, `Collective`, `MemcpyHToD`, `Dataset`...)")
    name: str = out("op name (TF/JAX op from `tf_op`, else the kernel)")
    self_time_ns: int = out("total self time", "ns")
    self_time_percent: float = out("share of the side's total op self time", "%", 3)
    cumulative_percent: float = out("running sum of `self_time_percent`", "%", 3)
    flop_rate_gflops: float | None = out(
        "`flops` stat / self time, where the trace records flops, else `null`", "GFLOP/s"
    )
    eager_percent: float | None = out(
        "share of its self time that ran eagerly (op_stats' `eager_percent`: a TensorFlow "
        "eager op); left out where none did",
        "%",
        3,
        default=None,
        omit_none=True,
    )


@record
class RunEnvironment:
    """The hosts, devices and framework of the run."""

    hosts: tuple[str, ...] = out("the hosts analysed")
    host_count: int = out("number of hosts")
    device_type: str = out("device kinds, `/`-joined; `CPU` when no device was traced")
    device_count: int = out("device planes with events")
    device_core_count: int = out(
        "sum of the devices' `core_count` (SMs / CUs / TensorCores), 0 if unknown"
    )
    framework: str = out("framework(s) that wrote the profile, `/`-joined")
    devices: tuple[DeviceInfo, ...] = out(
        "per device plane: plane, kind, kernel count, plane stats such as `device_name`, "
        "`compute_cap_*`, `memory_size`"
    )


@record
class OverviewPage:
    """The overview: where each step's time goes, the top ops, the run, and what to do."""

    host: str = out("the host shown, or `ALL_HOSTS`")
    bound_by: BoundBy = out(
        'what bounds the steps ("Bound by", below): the headline first, then every limit'
    )
    step_source: str = out("how steps were found (table above)")
    step_source_detail: str = out("how steps were found, in words (and how hosts were paired)")
    steps: tuple[StepRow, ...] = out("one entry per step")
    step_time: StepStats = out(
        "the step time: average, spread and extremes", "ms", key="step_time_ms"
    )
    breakdown_ms: dict[str, float] = out("average per step of each category", "ms", 6)
    breakdown_percent: dict[str, float] = out(
        "each category's share of the total step time", "%", 3
    )
    input_staged_ms: float = out(
        "input prepared inside the steps, average per step: from a step's start to its first "
        "model op (building the batch, however it is made), beyond its input category; in the "
        "categories as XProf counts it (host compute or other), in `bound_by` as input",
        "ms",
        6,
    )
    input_bound: InputBound = out(
        "XProf's input-bound verdict, unchanged (from XProf's categories; no staged input)"
    )
    precision: dict[str, float] | None = out(
        "`fp4_percent`, `fp8_percent`, `int8_percent`, `16bit_percent`, `32bit_percent`, "
        "`64bit_percent` of the device compute time by kernel precision (rules in "
        'kernel_stats.md), and `reduced_percent` (below 32 bits, XProf\'s "16-bit"); `null` '
        "without device compute",
        "%",
    )
    op_placement: dict[str, float] = out("`host_percent` / `device_percent` of op occurrences", "%")
    eager: dict[str, float] = out(
        "`host_percent` / `device_percent`: share of op self time that ran eagerly (`is_eager`)",
        "%",
    )
    gpu_utilization: dict[str, float] | None = out(
        "per device plane (`host:plane` with several hosts) and `mean`: merged kernel busy time "
        "(compute and collectives) over [first step start, last step end] (the whole profile "
        "without steps); `null` without devices",
        "%",
    )
    top_ops: tuple[TopOp, ...] = out(
        "the 10 device ops (host ops on CPU-only profiles) with the most self time; "
        "annotations that hold ops after the ops (op_stats' rank)"
    )
    run_environment: RunEnvironment = out("the hosts, devices and framework of the run")
    recommendation: Recommendation = out("the advice: what bounds the steps and what to do")
    diagnostics: tuple[str, ...] = out("how steps were found, candidates left out")
    untraced: dict[str, Any] = out(
        '`host`: with several hosts, the host with the most "All Others", whose steps the '
        'figures below are per and of ("" for one host); `thread`: the thread running the '
        'steps, where the untraced host time (the "host" limit of `bound_by`) is located; '
        "`places[]`: `after`, `before` (the traced events around each step's largest gap "
        "that no traced event, staged input, wait for a computation or dispatch run covers; "
        "`(step start)` / `(step end)` at its bounds), `ms_per_step` (host time in such "
        "gaps, averaged over all steps: a gap's time less what input counts there as the "
        "loop's fetch from its Python iterator, by which the largest is chosen too), `steps` "
        "(steps whose largest gap is there), most time "
        "first; `python[]`: with the Python stack sampler (docs/formats/python_samples.md), "
        "the Python functions of the steps' threads during the steps, by function and "
        "inclusive: `function` (`func (file)`), `stack` (its most common call path), "
        "`samples` (samples whose stack holds it), `total_samples` (samples in the steps), "
        "`percent` (its share of the step time: `samples / total_samples`, or its traced "
        "time when the trace times it), `ci_low` / `ci_high` (95% Wilson interval of that "
        "share), `ms_per_step`, `traced` (the time is a traced event's, not an estimate), "
        f"`too_few` (under {MIN_SAMPLES} samples: the share means nothing; the text says "
        '"too few samples (n=3)" instead)',
        "ms, %",
    )
    job: JobSteps | None = out(
        "several hosts (ALL_HOSTS): the job's step time (the pacing rank's, slowest on average: "
        "`step_time` above), the ranks' mean and spread, XProf's ALL_HOSTS figures beside "
        "them, and one row per rank (docs/jobs.md); `null` for one host",
        default=None,
    )
    steady_state: SteadyState | None = out(
        "when the first steps are warm-up (each at least 3x the median of the steps after "
        "it: a compile, autotuning), the steps after them: their step time, breakdown and "
        "what bounds them, with the warm-up steps and their time; the fields above stay "
        "over all steps (XProf's); `null` when the first step is no outlier",
        default=None,
    )


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def top_ops(table: OpTable, count: int = TOP_OPS) -> tuple[TopOp, ...]:
    """The ops with the most self time; the stack sampler's "Python" rows are estimates, not
    ops, and the overview gives their functions once, in `bound_by` and `untraced.python`."""
    if table.side == "host" and PYTHON_OP_TYPE in table.types:
        table = table.without_type(PYTHON_OP_TYPE)
    if not len(table):
        return ()
    total = float(table.self_ns.sum())
    order = ranked(table.types, table.total_ns, table.self_ns)[:count]  # labels after ops
    rows, cumulative = [], 0.0
    for rank, i in enumerate(order.tolist(), start=1):
        share = 100.0 * float(table.self_ns[i]) / total if total else 0.0
        cumulative += share
        flops = float(table.flops[i])
        rate = flops / float(table.self_ns[i]) if flops > 0 and table.self_ns[i] > 0 else None
        rows.append(
            TopOp(
                rank,
                table.side,
                table.types[i],
                table.names[i],
                int(table.self_ns[i]),
                share,
                cumulative,
                round(rate, 3) if rate else None,
                _eager_share(table, i),
            )
        )
    return tuple(rows)


def _eager_share(table: OpTable, i: int) -> float | None:
    """The share of row ``i``'s self time that ran eagerly, None where none did."""
    eager, own = float(table.eager_self_ns[i]), float(table.self_ns[i])
    return 100.0 * eager / own if eager > 0 and own > 0 else None


def step_rows(summary: StepSummary) -> tuple[StepRow, ...]:
    return tuple(
        StepRow(
            int(summary.step_num[k]),
            summary.names[k],
            int(summary.start_ns[k]),
            int(summary.dur_ns[k]),
            {c: int(summary.category_ns[c][k]) for c in CATEGORY_NAMES},
        )
        for k in range(summary.n_steps)
    )


def _top_findings(ctx: ToolContext) -> list[Finding]:
    """The diagnostics tool's most severe findings (at most five) for the advice."""
    return [
        f
        for f in analysis.findings(ctx)
        # the verdict and the category advice already say these
        if f.severity in ("high", "medium")
        and f.id not in ("input_bound", "untraced_host_work", "dispatch_bound")
    ][:5]


DIAGNOSTICS_TIP = "diagnostics: every finding with its evidence"


def _note(f: Finding) -> str:
    """A finding as one line of the advice, its fix included."""
    return f"{f.title} ({f.severity}): {f.summary} Fix: {f.fix}"


def _with_findings(recommendation: Recommendation, top: list[Finding]) -> Recommendation:
    """Adds the findings (with their fixes) to the advice, each once."""
    notes = tuple(dict.fromkeys(_note(f) for f in top))
    if not notes:
        return recommendation
    return replace(
        recommendation,
        details=recommendation.details + notes,
        tips=(*recommendation.tips, DIAGNOSTICS_TIP),
    )


def _holding_straggler(ctx: ToolContext) -> Finding | None:
    """The straggler finding, of any severity, for a job a straggler holds (the headline names
    it): the job's first advice is then that rank's own fix (decision 485)."""
    return next((f for f in analysis.findings(ctx) if f.id == "host_skew"), None)


def _straggler_first(
    recommendation: Recommendation,
    skew: Finding,
    job: JobSteps,
    summary: StepSummary,
    collectives_covered: bool,
) -> Recommendation:
    """The advice of a job held by a straggler (decision 485): the straggler's finding (who,
    from what, its fix) first; then, unless a collectives finding says it, the collectives'
    generic advice for their share beyond the ranks' waiting for the last rank, graded by
    that share: the waiting is the straggler's doing, and overlapping communication or larger
    buckets do not shorten it."""
    note = _note(skew)
    rest = tuple(d for d in recommendation.details if d != note)
    first: tuple[str, ...] = (note,)
    step_ms = sum(r.step_ms for r in job.rows)
    waiting_pct = 100.0 * sum(r.waiting_ms for r in job.rows) / step_ms if step_ms > 0 else 0.0
    beyond = summary.limit_percent("collectives") - waiting_pct
    grade = limit_level("collectives", beyond)
    if not collectives_covered and grade != "no":
        first += (
            ("HIGH: " if grade == "high" else "")
            + f"{beyond:.1f}% of the step time is collective communication with nothing else "
            "running, beyond the ranks' waiting for the last one: overlap communication with "
            "compute, use larger buckets, or check the interconnect.",
        )
    tips = recommendation.tips
    if DIAGNOSTICS_TIP not in tips:
        tips = (*tips, DIAGNOSTICS_TIP)
    return replace(recommendation, details=first + rest, tips=tips)


def precision_percent(by_precision: dict[str, int]) -> dict[str, float] | None:
    """``<precision>_percent`` of device compute time for each of `PRECISIONS` (fp4, fp8, int8,
    16bit, 32bit, 64bit), plus ``reduced_percent``: everything narrower than fp32 (what
    XProf's "16-bit" means and what the mixed-precision advice looks at)."""
    total = sum(by_precision.values())
    if not total:
        return None
    out = {f"{k}_percent": _pct(by_precision[k], total) for k in PRECISIONS}
    out["reduced_percent"] = _pct(sum(by_precision[k] for k in REDUCED_PRECISIONS), total)
    return out


def _untraced_json(summary: StepSummary) -> dict[str, Any]:
    """Where the steps' "All Others" sits, per step on average, and the Python functions the
    stack sampler saw in it (share of the total step time). With several hosts it is the
    host with the most "All Others", per step of that host."""
    u = summary.untraced
    n, total = u.per(summary.n_steps, summary.total_ns())
    n = max(n, 1)
    return {
        "host": u.host,
        "thread": u.thread,
        "places": [
            {"after": p.after, "before": p.before, "ms_per_step": p.ns / 1e6 / n, "steps": p.steps}
            for p in u.places
        ],
        "python": [
            {
                "function": u.python.function[k],
                "stack": u.python.stack[k],
                "samples": int(u.python.samples[k]),
                "total_samples": u.python.total_samples,
                "percent": 100.0 * float(u.python.ns[k]) / total if total else 0.0,
                "ci_low": round(100.0 * float(u.python.ci_low[k]), 3),
                "ci_high": round(100.0 * float(u.python.ci_high[k]), 3),
                "ms_per_step": float(u.python.ns[k]) / 1e6 / n,
                "traced": bool(u.python.traced[k]),
                "too_few": u.python.too_few(k),
            }
            for k in range(len(u.python))
        ],
    }


def build(ctx: ToolContext) -> OverviewPage:
    analysis.op_metrics_beside(ctx)
    host_table, device_table = analysis.host_ops(ctx), analysis.device_ops(ctx)
    # the steps as every headline tells them: what of the compute ran eagerly, per step, and
    # the thread filling a queue the steps wait on (decisions 1026, 1028, 1029, 1060)
    summary = analysis.told_steps(ctx, host_table)
    producer = analysis.queue_producer(ctx)  # the advice names it too (decision 1024)
    facts = [analysis.device_facts(ctx, h) for h in ctx.hosts]
    all_devices = tuple(d for devs, _, _ in facts for d in devs)
    by_precision = {k: sum(p[k] for _, p, _ in facts) for k in PRECISIONS}
    bound = classify_steps(summary)
    job, headline, held = _job(ctx, summary, bound_by(summary))
    utilization: dict[str, float] | None = None
    if all_devices:
        utilization = {}
        for h in ctx.hosts:
            db = analysis.step_db(ctx, h)
            window = (
                (int(db.start_ns.min()), int((db.start_ns + db.dur_ns).max()))
                if db.n_steps
                else None
            )
            prefix = f"{h}:" if len(ctx.hosts) > 1 else ""
            for plane, pct in analysis.gpu_utilization(ctx, h, window).items():
                utilization[prefix + plane] = round(pct, 3)
        if utilization:
            utilization["mean"] = round(float(np.mean(list(utilization.values()))), 3)
    precision = precision_percent(by_precision)
    host_n, device_n = int(host_table.occurrences.sum()), int(device_table.occurrences.sum())
    eager = {
        "host_percent": _pct(host_table.eager_self_ns.sum(), host_table.self_ns.sum()),
        "device_percent": _pct(device_table.eager_self_ns.sum(), device_table.self_ns.sum()),
    }
    pipelines = [p for h in ctx.hosts for p in analysis.tf_data(ctx, h)]
    advice = ""
    median_step = float(np.median(summary.dur_ns)) if summary.n_steps else 0.0
    for pipeline in sorted(pipelines, key=lambda p: -p.bottleneck_self_ns):
        found = analysis.bottleneck_of(pipeline)
        # a pipeline whose slowest call is a small part of a step is no bottleneck
        if found and pipeline.max_latency_ns >= NEGLIGIBLE_PIPELINE_SHARE * median_step:
            fix = advice_for(
                found[1],
                pipeline.python_stages,
                has_prefetch(pipeline.iterators),
                has_generator(pipeline.iterators),
            )
            # a map whose function calls Python: the GIL's advice (decision 1025)
            python = analysis.map_python(ctx, summary, found[1])
            if python is not None:
                fix = py_function_map_advice(
                    python.describe(), python.at_once, is_parallel_map(found[1])
                )
            advice = f"Input pipeline bottleneck: {found[0]}. {fix}"
            break
    # the steps held up by the pipeline's Python (decision 495): no latency of the pipeline
    # shows it (its prefetch has each element ready), the steps' time does
    # (no parallel map or prefetch overlaps Python that holds the GIL: its fix comes first)
    # (or the model's ops slowed beside it, on the cores it takes: decision 525)
    python_held = summary.map_python_percent()
    if python_held >= MODERATE_INPUT:
        advice = held_by_python_fix(
            python_held,
            summary.map_python_ms(),
            summary.slowed_percent(),
            summary.limits.python.holds_gil,
        )
    # DataLoader worker processes captured (docs/jobs.md): say what they did, not "add workers"
    workers = [w for h in ctx.hosts for w in analysis.loader_workers(ctx, h)]
    waited = [w for w in workers if w.waited_batches > 1]
    if advice and waited:
        advice = f"Input pipeline bottleneck: {waited[0].loader}'s workers. {waited[0].summary}"
    # the workers' verdict (decision 353) says what to change, with or without a pipeline
    judged = [w for w in workers if w.verdict in JUDGED_VERDICTS]
    if judged:
        advice = judged[0].advice
    loader = analysis.dataloader_advice(ctx)
    if loader and not judged:
        advice = loader
    top = _top_findings(ctx)
    covered = frozenset(FINDING_TOPICS[f.id] for f in top if f.id in FINDING_TOPICS)
    skew = _holding_straggler(ctx) if held and job else None
    # the advice is the steps' once warm when the first steps are warm-up (decision 490): a
    # compile of 78% of the capture's time diluted every share it quotes; a job a straggler
    # holds keeps its all-steps advice (its headline and the straggler's fix are all steps')
    warm = warmup_count(summary.dur_ns, mid_run=summary.mid_run) if not held else 0
    once_warm = analysis.steady_python(ctx) if warm else None
    advised = steps_from(summary, warm, once_warm) if warm else summary
    recommendation = recommend(
        advised,
        bound_by(advised) if warm else headline,
        precision_16_percent=precision["reduced_percent"]
        if precision and summary.has_device
        else None,
        eager_percent=max(eager.values()),
        uses_tf_data=bool(pipelines),
        tf_data_advice=advice,
        # with a straggler holding the job, the collectives' advice is given apart, for the
        # time beyond the waiting for it (`_straggler_first`)
        covered=covered | {"collectives"} if skew else covered,
        once_warm=bool(warm),
        producer=producer.describe() if producer else "",
    )
    if job is not None:  # a rank waiting on its input alone is no mean's (decision 601)
        shares = by_rank.input_shares([(h, analysis.step_db(ctx, h)) for h in ctx.hosts])
        alone, rest = by_rank.apart(shares)
        line = by_rank.advice(
            alone,
            rest,
            summary.limit_percent("input"),
            summary.limits.framework,
            summary.has_device,
        )
        recommendation = by_rank.by_rank(recommendation, line)
        bound = replace(bound, statement=bound.statement + by_rank.verdict_note(alone, rest))
    recommendation = _with_findings(recommendation, top)
    if skew and job:
        recommendation = _straggler_first(
            recommendation, skew, job, summary, "collectives" in covered
        )
    cores = next((f for f in top if f.id in ("job_cores_wait", "cores_wait")), None)
    if cores is not None and (cores.id == "job_cores_wait" or cores.severity == "high"):
        # the steps' thread(s) waiting for a core (one host's: half its steps): its fix first,
        # before a straggler's, as in the job's headline (decision 734)
        note = _note(cores)
        others = tuple(d for d in recommendation.details if d != note)
        recommendation = replace(recommendation, details=(note, *others))
    # one host's parts all include the wait: said before them (a job's is, `_job`), by the
    # rule of its `cores_wait` finding, as the summary says it (decision 1063)
    runnable = analysis.cores_waited(ctx, summary) if job is None else None
    if runnable is not None:
        headline = BoundBy(waiting_first(headline.headline, runnable), headline.limits)
    kinds = sorted({d.kind for d in all_devices})
    environment = RunEnvironment(
        tuple(ctx.hosts),
        len(ctx.hosts),
        "/".join(kinds) if kinds else "CPU",
        len(all_devices),
        sum(_int(d.properties.get("core_count")) for d in all_devices),
        "/".join(sorted({f for _, _, f in facts})),
        all_devices,
    )
    diagnostics = [f"steps: {summary.description}"]
    if summary.dropped:
        diagnostics.append(
            f"{summary.dropped} of {summary.markers_found} candidate steps left out "
            "(no compute in them, or first/last incomplete)"
        )
    if summary.pairing:
        diagnostics.append(f"hosts: {summary.pairing}")
    return OverviewPage(
        host=ctx.host,
        bound_by=headline,
        step_source=summary.source,
        step_source_detail="; ".join(t for t in (summary.description, summary.pairing) if t),
        steps=step_rows(summary),
        step_time=summary.step_stats(),
        breakdown_ms={c: summary.avg_ms(c) for c in CATEGORY_NAMES},
        breakdown_percent={c: summary.percent(c) for c in CATEGORY_NAMES},
        input_staged_ms=float(summary.staged_ns.mean()) / 1e6 if summary.staged_ns.size else 0.0,
        input_bound=bound,
        precision=precision,
        op_placement={
            "host_percent": _pct(host_n, host_n + device_n),
            "device_percent": _pct(device_n, host_n + device_n),
        },
        eager=eager,
        gpu_utilization=utilization,
        top_ops=top_ops(device_table if len(device_table) else host_table),
        run_environment=environment,
        recommendation=recommendation,
        diagnostics=tuple(diagnostics),
        untraced=_untraced_json(summary),
        job=job,
        steady_state=steady_state(summary, analysis.warmup_python(ctx), once_warm),
    )


def _job(
    ctx: ToolContext, summary: StepSummary, headline: BoundBy
) -> tuple[JobSteps | None, BoundBy, bool]:
    """The job's figures and rows, for several hosts with steps, the headline (when a
    straggler holds the job, it comes first: the ranks' mean says "collectives"), and whether
    one holds it."""
    if len(ctx.hosts) < 2 or not summary.rank_hosts:
        return None, headline, False
    from stepscope.stats.stragglers import find_stragglers, held_by  # several hosts only
    from stepscope.stats.stragglers_words import job_held

    ranks = analysis.ranks(ctx)
    pod = find_stragglers(ranks)
    held = held_by(pod)
    said = job_held(pod)  # every rank waiting for a core first, then a straggler
    if said:
        headline = BoundBy(f"{said} Across the ranks: {headline.headline}", headline.limits)
    return job_steps(summary, ranks, pod), headline, bool(held)


TOOL = ToolSpec(
    name="overview_page",
    title="Overview",
    description="Step time and its breakdown, top ops, run environment and recommendation",
    build=build,
    options=(analysis.STEP_SOURCE,),
    order=10,
)
