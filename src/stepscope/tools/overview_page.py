"""overview_page: where each step's time goes, the top ops, the run, and what to do first.

Fields and units: docs/tools/overview_page.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from stepscope.stats import CATEGORY_NAMES, OpTable, StepStats, StepSummary
from stepscope.stats.advice import (
    FINDING_TOPICS,
    InputBound,
    Recommendation,
    classify_steps,
    recommend,
)
from stepscope.stats.device import DeviceInfo
from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.input_pipeline import advice_for, has_prefetch
from stepscope.stats.kernel_rules import PRECISIONS, REDUCED_PRECISIONS
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

TOP_OPS = 10


@dataclass(frozen=True)
class StepRow:
    step: int
    name: str
    start_ns: int
    duration_ns: int
    breakdown_ns: dict[str, int]  # per category; they add up to duration_ns

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "name": self.name,
            "start_ns": self.start_ns,
            "duration_ns": self.duration_ns,
            "breakdown_ns": dict(self.breakdown_ns),
        }


@dataclass(frozen=True)
class TopOp:
    rank: int
    side: str  # "device", or "host" on CPU-only profiles
    category: str  # op type
    name: str
    self_time_ns: int
    self_time_percent: float  # of the side's total op self time
    cumulative_percent: float
    flop_rate_gflops: float | None  # where the trace records flops

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "side": self.side,
            "category": self.category,
            "name": self.name,
            "self_time_ns": self.self_time_ns,
            "self_time_percent": round(self.self_time_percent, 3),
            "cumulative_percent": round(self.cumulative_percent, 3),
            "flop_rate_gflops": self.flop_rate_gflops,
        }


@dataclass(frozen=True)
class RunEnvironment:
    hosts: tuple[str, ...]
    device_type: str  # "CPU" when no device traced
    device_count: int
    device_core_count: int  # sum of the devices' core_count (SMs / CUs / TensorCores), 0 if unknown
    framework: str
    devices: tuple[DeviceInfo, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": list(self.hosts),
            "host_count": len(self.hosts),
            "device_type": self.device_type,
            "device_count": self.device_count,
            "device_core_count": self.device_core_count,
            "framework": self.framework,
            "devices": [d.to_json() for d in self.devices],
        }


@dataclass(frozen=True)
class OverviewPage:
    host: str
    step_source: str
    step_source_detail: str
    steps: tuple[StepRow, ...]
    step_time: StepStats
    breakdown_ms: dict[str, float]  # average per step
    breakdown_percent: dict[str, float]  # share of the total step time
    input_bound: InputBound
    precision: dict[str, float] | None  # device compute by precision, percent (precision_percent)
    op_placement: dict[str, float]  # op occurrences on host / device, percent
    eager: dict[str, float]  # op self time run eagerly, percent, per side
    gpu_utilization: dict[str, float] | None  # per device and mean, percent
    top_ops: tuple[TopOp, ...]
    run_environment: RunEnvironment
    recommendation: Recommendation
    diagnostics: tuple[str, ...] = field(default=())
    untraced: dict[str, Any] = field(default_factory=dict)  # where "All Others" sits

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "step_source": self.step_source,
            "step_source_detail": self.step_source_detail,
            "steps": [s.to_json() for s in self.steps],
            "step_time_ms": self.step_time.to_json(),
            "breakdown_ms": {k: round(v, 6) for k, v in self.breakdown_ms.items()},
            "breakdown_percent": {k: round(v, 3) for k, v in self.breakdown_percent.items()},
            "input_bound": self.input_bound.to_json(),
            "precision": self.precision,
            "op_placement": self.op_placement,
            "eager": self.eager,
            "gpu_utilization": self.gpu_utilization,
            "top_ops": [t.to_json() for t in self.top_ops],
            "run_environment": self.run_environment.to_json(),
            "recommendation": self.recommendation.to_json(),
            "diagnostics": list(self.diagnostics),
            "untraced": self.untraced,
        }


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def top_ops(table: OpTable, count: int = TOP_OPS) -> tuple[TopOp, ...]:
    if not len(table):
        return ()
    total = float(table.self_ns.sum())
    order = np.argsort(-table.self_ns, kind="stable")[:count]
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
            )
        )
    return tuple(rows)


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
        if f.severity in ("high", "medium") and f.id not in ("input_bound", "untraced_host_work")
    ][:5]


def _with_findings(recommendation: Recommendation, top: list[Finding]) -> Recommendation:
    """Adds the findings (with their fixes) to the advice, each once."""
    notes = tuple(dict.fromkeys(f"{f.title} ({f.severity}): {f.summary} Fix: {f.fix}" for f in top))
    if not notes:
        return recommendation
    return replace(
        recommendation,
        details=recommendation.details + notes,
        tips=(*recommendation.tips, "diagnostics: every finding with its evidence"),
    )


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
    stack sampler saw in it (share of the total step time)."""
    u, n, total = summary.untraced, max(summary.n_steps, 1), summary.total_ns()
    return {
        "thread": u.thread,
        "places": [
            {"after": p.after, "before": p.before, "ms_per_step": p.ns / 1e6 / n, "steps": p.steps}
            for p in u.places
        ],
        "python": [
            {
                "function": u.python.function[k],
                "stack": u.python.stack[k],
                "ms_per_step": float(u.python.ns[k]) / 1e6 / n,
                "percent": 100.0 * float(u.python.ns[k]) / total if total else 0.0,
                "samples": int(u.python.samples[k]),
            }
            for k in range(len(u.python))
        ],
    }


def build(ctx: ToolContext) -> OverviewPage:
    summary = analysis.steps(ctx)
    host_table, device_table = analysis.host_ops(ctx), analysis.device_ops(ctx)
    facts = [analysis.device_facts(ctx, h) for h in ctx.hosts]
    all_devices = tuple(d for devs, _, _ in facts for d in devs)
    by_precision = {k: sum(p[k] for _, p, _ in facts) for k in PRECISIONS}
    bound = classify_steps(summary)
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
    for pipeline in sorted(pipelines, key=lambda p: -p.bottleneck_self_ns):
        found = analysis.bottleneck_of(pipeline)
        if found:
            advice = (
                f"Input pipeline bottleneck: {found[0]}. "
                f"{advice_for(found[1], pipeline.python_stages, has_prefetch(pipeline.iterators))}"
            )
            break
    top = _top_findings(ctx)
    recommendation = recommend(
        summary,
        bound,
        precision_16_percent=precision["reduced_percent"]
        if precision and summary.has_device
        else None,
        eager_percent=max(eager.values()),
        uses_tf_data=bool(pipelines),
        tf_data_advice=advice,
        covered=frozenset(FINDING_TOPICS[f.id] for f in top if f.id in FINDING_TOPICS),
    )
    recommendation = _with_findings(recommendation, top)
    kinds = sorted({d.kind for d in all_devices})
    environment = RunEnvironment(
        tuple(ctx.hosts),
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
        step_source=summary.source,
        step_source_detail="; ".join(t for t in (summary.description, summary.pairing) if t),
        steps=step_rows(summary),
        step_time=summary.step_stats(),
        breakdown_ms={c: summary.avg_ms(c) for c in CATEGORY_NAMES},
        breakdown_percent={c: summary.percent(c) for c in CATEGORY_NAMES},
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
    )


TOOL = ToolSpec(
    name="overview_page",
    title="Overview",
    description="Step time and its breakdown, top ops, run environment and recommendation",
    build=build,
    options=(analysis.STEP_SOURCE,),
    order=10,
)
