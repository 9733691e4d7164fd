"""input_pipeline_analyzer: how long steps wait for input, and which input ops cost the time.

Fields and units: docs/tools/input_pipeline_analyzer.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from stepscope.records import record
from stepscope.stats import StepStats
from stepscope.stats import rank_input as by_rank
from stepscope.stats.advice import InputBound, classify_steps
from stepscope.stats.input.ahead import PYTHON_ITERATOR_AHEAD, QUEUE_AHEAD
from stepscope.stats.input.input_pipeline import (
    INPUT_CATEGORIES,
    advice_for,
    has_prefetch,
    input_ops,
    is_parallel_map,
    py_function_map_advice,
)
from stepscope.stats.input.loader_workers import LoaderWorkers
from stepscope.stats.summary import StepSummary
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

if TYPE_CHECKING:  # its module loads with the pipelines' analysis
    from stepscope.stats.input.tf_data import PipelineStats

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


@record
class StepInput:
    step: int = out("step number")
    name: str = out("step name")
    duration_ns: int = out("step time", "ns")
    input_ns: int = out("time the step waited for input (the input category)", "ns")


@record
class InputOpRow:
    name: str = out("the op (`Iterator::Root::Batch::Map`...)", key="op")
    count: int = out("occurrences")
    total_ms: float = out("time including nested input ops", "ms", 6)
    total_percent: float = out("share of the total input-op self time", "%", 3)
    self_ms: float = out("time excluding nested input ops", "ms", 6)
    self_percent: float = out("share of the same total", "%", 3)
    category: str = out("one of the `host_breakdown_ms` categories")


@record
class PipelineRow:
    name: str = out("the pipeline (`Host:0`...)")
    root: str = out("the long name of its root iterator")
    calls: int = out("calls of the root iterator")
    slow_calls: int = out("calls over 50 us")
    avg_latency_ms: float = out("mean root-call latency", "ms", 6)
    max_latency_ms: float = out("slowest root call", "ms", 6)
    bottleneck: str = out(
        "in the slowest call, the blocking iterator with the most self time ('' when none)"
    )
    bottleneck_self_ms: float = out("its self time in that call", "ms", 6)
    advice: str = out("what to do for that iterator kind")


@record
class PythonIteratorRow:
    function: str = out("the iterator the loop got its batches from, `func (file)`")
    stack: str = out("its most common stack in the samples, outermost first, `;`-joined")
    samples: int = out("stack samples in the steps that saw the loop getting a batch there")
    ms_per_step: float = out(
        "untraced time counted as getting batches from it, average per step (0 when the "
        "fetch lies where the input limit already counts it: before the step's first model op)",
        "ms",
        6,
    )
    percent: float = out("the same time's share of the step time", "%", 3)
    timed_fetches: int = out(
        "the loop's first fetches the capture timed (its fetch probe), when they placed the "
        "fetch because too few samples saw it; 0 when the samples placed it"
    )


@record
class InputPipelineAnalysis:
    host: str = out("the host shown, or `ALL_HOSTS`")
    step_source: str = out("how steps were found (see overview_page)")
    step_pairing: str = out(
        "several hosts: how their steps were paired and which were left out (see overview_page); "
        "empty for one host"
    )
    input_bound: InputBound = out("how input-bound the steps are, as in overview_page")
    step_time: StepStats = out(
        "`avg`, `stddev` (n-1), `min`, `max` of the step time", "ms", key="step_time_ms"
    )
    input_time: StepStats = out(
        "the same statistics of each step's input time", "ms", key="input_time_ms"
    )
    steps: tuple[StepInput, ...] = out("per step")
    host_breakdown_ms: dict[str, float] = out(
        "self time of the input ops over the whole profile, per category: `enqueue` (infeed / "
        "host-to-device copies), `demanded_file_read` (iterators reading files on demand: "
        "`::TFRecord`, `::TextLine`, `::FixedLengthRecord`, `::SSTable`, `::RecordIO`), "
        "`advanced_file_read` (file reads ahead of use: the name also has `::MemoryReader`, "
        "`::Interleave`, `::Prefetch`, `::ParallelMap`, `::ParallelInterleave`), "
        "`preprocessing` (every other iterator), `other` (input waits without pipeline "
        "detail, e.g. a DataLoader `__next__`)",
        "ms",
        6,
    )
    input_ops: tuple[InputOpRow, ...] = out("input ops, most self time first")
    pipelines: tuple[PipelineRow, ...] = out(
        "input pipelines (`stepscope.stats.input.tf_data`: tf.data and `stepscope.data.instrument` "
        "pipelines), worst bottleneck first"
    )
    loader_workers: tuple[LoaderWorkers, ...] = out(
        "PyTorch DataLoader worker processes captured into the profile (a loader with "
        "`num_workers > 0` iterated while `stepscope.start` records, "
        "`stepscope.capture.loader_workers`): per loader, a row per worker, the slowest "
        "stage, the batches ready before the step asked (instrumented loaders), the "
        "functions the workers' samples saw and the verdict with its advice; empty when "
        "none were captured"
    )
    python_iterators: tuple[PythonIteratorRow, ...] = out(
        "the Python iterators (generators, `__next__`, `map`...) the training loop got its "
        "batches from, as the stack sampler saw it (`stepscope.stats.steps.fetch`); empty "
        "when fewer than 5 samples saw it; most samples first"
    )
    recommendations: tuple[str, ...] = out(
        "the bottleneck fix first, then advice per input category that has time"
    )


def build(ctx: ToolContext) -> InputPipelineAnalysis:
    summary = analysis.steps(ctx)
    bound = classify_steps(summary)
    if len(ctx.hosts) > 1 and summary.rank_hosts:  # the ranks' mean (decision 601)
        shares = by_rank.input_shares([(h, analysis.step_db(ctx, h)) for h in ctx.hosts])
        note = by_rank.verdict_note(*by_rank.apart(shares))
        bound = replace(bound, statement=bound.statement + note)
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
                    _pipeline_advice(ctx, summary, p, found[1]) if found else "",
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
    workers = tuple(w for h in ctx.hosts for w in analysis.loader_workers(ctx, h))
    # the DataLoader workers' verdict first (decision 353), then the instrumented loader's
    # ready/waited account when the steps waited for batches being made
    judged = [w for w in workers if w.verdict and w.verdict != "keeping_up"]
    loader = analysis.dataloader_advice(ctx)
    if any(w.verdict for w in workers) or loader:
        # the loader's own verdict says what to change: not the generic DataLoader advice
        # ("use more workers" to workers that keep up, decision 392)
        advice = [a for a in advice if a != _CATEGORY_ADVICE["other"]]
    waited = [w for w in workers if w.waited_batches > 1]  # the first batch is always awaited
    if waited:
        advice.insert(0, waited[0].summary)
    iterators = _python_iterators(summary)
    if iterators and iterators[0].percent > 0:
        first = iterators[0]
        if summary.fetched.from_queue():  # another thread's batch: its advice (decision 1024)
            producer = analysis.queue_producer(ctx)
            advice.insert(
                0,
                f"The loop waits in {first.function} for a queue another thread or process "
                f"fills ({first.percent:.1f}% of the step time): "
                + (f"{producer.describe()}; " if producer else "")
                + f"{QUEUE_AHEAD}.",
            )
        else:
            advice.insert(
                0,
                f"The loop waits on its Python iterator {first.function} ({first.percent:.1f}% "
                f"of the step time): {PYTHON_ITERATOR_AHEAD}; or make that function faster.",
            )
    if loader:
        advice.insert(0, loader)
    if judged:
        advice.insert(0, judged[0].advice)
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
        loader_workers=workers,
        python_iterators=iterators,
        recommendations=tuple(advice),
    )


def _pipeline_advice(ctx: ToolContext, summary: StepSummary, p: PipelineStats, kind: str) -> str:
    """The bottleneck's advice by its kind; a map whose function runs Python gets the GIL's
    (decision 1025), as on the overview."""
    python = analysis.map_python(ctx, summary, kind)
    if python is not None:
        return py_function_map_advice(python.describe(), python.at_once, is_parallel_map(kind))
    return advice_for(kind, p.python_stages, has_prefetch(p.iterators))


def _python_iterators(summary: StepSummary) -> tuple[PythonIteratorRow, ...]:
    fetched = summary.fetched
    if not fetched.counted or not summary.n_steps:
        return ()
    total = summary.total_ns()
    return tuple(
        PythonIteratorRow(
            fetched.function[k],
            fetched.stack[k],
            int(fetched.samples[k]),
            float(fetched.fetch_ns[k]) / summary.n_steps / 1e6,
            100.0 * float(fetched.fetch_ns[k]) / total if total else 0.0,
            int(fetched.timed[k]) if fetched.was_timed(k) else 0,
        )
        for k in range(len(fetched))
    )


TOOL = ToolSpec(
    name="input_pipeline_analyzer",
    title="Input pipeline analyzer",
    description="Time waiting for input per step, input ops by category, tf.data bottleneck",
    build=build,
    options=(analysis.STEP_SOURCE,),
    order=20,
)
