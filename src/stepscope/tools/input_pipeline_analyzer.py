"""input_pipeline_analyzer: how long steps wait for input, and which input ops cost the time.

Fields and units: docs/tools/input_pipeline_analyzer.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.stats import StepStats
from stepscope.stats.advice import InputBound, classify_steps
from stepscope.stats.input_pipeline import INPUT_CATEGORIES, advice_for, has_prefetch, input_ops
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

_CATEGORY_ADVICE = {
    "enqueue": "Enqueuing data: you may want to combine small input data chunks into fewer but "
    "larger chunks.",
    "preprocessing": "Data preprocessing: you may increase num_parallel_calls in Dataset map() "
    "or preprocess the data offline.",
    "advanced_file_read": "Reading data from files in advance: you may tune prefetch size, "
    "interleave cycle_length and reader buffer_size.",
    "demanded_file_read": "Reading data from files on demand: you should read data in advance "
    "(prefetch, interleave, a reader buffer).",
    "other": "Other data reading or processing (e.g. a DataLoader without pipeline detail): "
    "use more workers (num_workers), pin_memory and prefetching, or a tf.data-style "
    "pipeline.",
}


@dataclass(frozen=True)
class StepInput:
    step: int
    name: str
    duration_ns: int
    input_ns: int  # time the step waited for input (input category)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "name": self.name,
            "duration_ns": self.duration_ns,
            "input_ns": self.input_ns,
        }


@dataclass(frozen=True)
class InputOpRow:
    name: str
    count: int
    total_ms: float  # including nested input ops
    total_percent: float  # of the total input op (self) time
    self_ms: float
    self_percent: float
    category: str

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.name,
            "count": self.count,
            "total_ms": round(self.total_ms, 6),
            "total_percent": round(self.total_percent, 3),
            "self_ms": round(self.self_ms, 6),
            "self_percent": round(self.self_percent, 3),
            "category": self.category,
        }


@dataclass(frozen=True)
class PipelineRow:
    name: str  # "Host:0"...
    root: str  # root iterator long name
    calls: int
    slow_calls: int  # calls over 50 us
    avg_latency_ms: float
    max_latency_ms: float
    bottleneck: str  # iterator long name of the slowest call's bottleneck ('' when none)
    bottleneck_self_ms: float
    advice: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "root": self.root,
            "calls": self.calls,
            "slow_calls": self.slow_calls,
            "avg_latency_ms": round(self.avg_latency_ms, 6),
            "max_latency_ms": round(self.max_latency_ms, 6),
            "bottleneck": self.bottleneck,
            "bottleneck_self_ms": round(self.bottleneck_self_ms, 6),
            "advice": self.advice,
        }


@dataclass(frozen=True)
class InputPipelineAnalysis:
    host: str
    step_source: str
    step_pairing: str  # several hosts: how their steps were paired, what was left out
    input_bound: InputBound
    step_time: StepStats
    input_time: StepStats  # per-step input wait
    steps: tuple[StepInput, ...]
    host_breakdown_ms: dict[str, float]  # input op self time per category, whole profile
    input_ops: tuple[InputOpRow, ...]  # most self time first
    pipelines: tuple[PipelineRow, ...]  # input pipelines, worst bottleneck first
    recommendations: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "step_source": self.step_source,
            "step_pairing": self.step_pairing,
            "input_bound": self.input_bound.to_json(),
            "step_time_ms": self.step_time.to_json(),
            "input_time_ms": self.input_time.to_json(),
            "steps": [s.to_json() for s in self.steps],
            "host_breakdown_ms": {k: round(v, 6) for k, v in self.host_breakdown_ms.items()},
            "input_ops": [r.to_json() for r in self.input_ops],
            "pipelines": [p.to_json() for p in self.pipelines],
            "recommendations": list(self.recommendations),
        }


def build(ctx: ToolContext) -> InputPipelineAnalysis:
    summary = analysis.steps(ctx)
    bound = classify_steps(summary)
    ops = input_ops(analysis.host_ops(ctx))
    total_self = float(ops.self_ns.sum())
    rows = tuple(
        InputOpRow(
            name,
            int(count),
            total / 1e6,
            100.0 * total / total_self if total_self else 0.0,
            own / 1e6,
            100.0 * own / total_self if total_self else 0.0,
            category,
        )
        for name, count, total, own, category in zip(
            ops.names,
            ops.count.tolist(),
            ops.total_ns.tolist(),
            ops.self_ns.tolist(),
            ops.categories,
            strict=True,
        )
    )
    per_category = ops.category_ns()
    pipelines = []
    for h in ctx.hosts:
        for p in analysis.tf_data(ctx, h):
            found = analysis.bottleneck_of(p)
            prefix = f"{h}:" if len(ctx.hosts) > 1 else ""
            pipelines.append(
                PipelineRow(
                    prefix + p.name,
                    p.root_long_name,
                    p.call_count,
                    p.slow_call_count,
                    p.avg_latency_ns / 1e6,
                    p.max_latency_ns / 1e6,
                    found[0] if found else "",
                    p.bottleneck_self_ns / 1e6,
                    advice_for(found[1], p.python_stages, has_prefetch(p.iterators))
                    if found
                    else "",
                )
            )
    pipelines.sort(key=lambda p: -p.bottleneck_self_ms)
    advice = [
        _CATEGORY_ADVICE[c]
        for c in sorted(per_category, key=lambda c: -per_category[c])
        if per_category[c] > 0
    ]
    if pipelines and pipelines[0].bottleneck:
        advice.insert(0, f"Bottleneck: {pipelines[0].bottleneck}. {pipelines[0].advice}")
    input_ns = summary.category_ns["input"]
    return InputPipelineAnalysis(
        host=ctx.host,
        step_source=summary.source,
        step_pairing=summary.pairing,
        input_bound=bound,
        step_time=summary.step_stats(),
        input_time=StepStats.of(input_ns),
        steps=tuple(
            StepInput(
                int(summary.step_num[k]), summary.names[k], int(summary.dur_ns[k]), int(input_ns[k])
            )
            for k in range(summary.n_steps)
        ),
        host_breakdown_ms={c: per_category[c] / 1e6 for c in INPUT_CATEGORIES},
        input_ops=rows,
        pipelines=tuple(pipelines),
        recommendations=tuple(advice),
    )


TOOL = ToolSpec(
    name="input_pipeline_analyzer",
    title="Input pipeline analyzer",
    description="Time waiting for input per step, input ops by category, tf.data bottleneck",
    build=build,
    options=(analysis.STEP_SOURCE,),
    order=20,
)
