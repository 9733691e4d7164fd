"""tf.data bottleneck analysis: the slowest input pipeline, its graph, the bottleneck and a fix.

Works for tf.data and for Python pipelines recorded with ``stepscope.data.instrument``.
Times are microseconds (float). Pipelines are listed slowest first (by their slowest call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.input.input_pipeline import (
    GENERATOR_ADVICE,
    has_generator,
    is_parallel_map,
    py_function_map_advice,
)
from stepscope.stats.input.tf_data import (
    SLOW_CALL_NS,
    IteratorStat,
    PipelineStats,
    build_tf_data_stats,
    explain_long_name,
)
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec
from stepscope.vocab.tensorflow import is_root_iterator

_SOURCES = ("TFRecord", "TextLine", "FixedLengthRecord", "SSTable", "Generator", "FlatMap")
_MAPS = ("Map", "ParallelMap", "ParallelMapV2", "MapAndBatch", "Interleave", "ParallelInterleave")
_GUIDE = "https://www.tensorflow.org/guide/data_performance_analysis"
NEGLIGIBLE_STEP_SHARE = 0.05  # a slowest call under 5% of a step needs no pipeline change


# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
PIPELINES: Key[tuple[PipelineStats, ...]] = Key("tf_data.pipelines", kept=True)
HAS_ROOT_ITERATORS: Key[bool] = Key("tf_data.has_root_iterators", kept=True)


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def suggestion(it: IteratorStat, python_stages: bool, generator: bool = False) -> str:
    """A concrete fix for a bottleneck iterator, by its kind (XProf's advice in
    ``xprof/convert/xplane_to_tf_data_stats.cc``); ``generator``: the pipeline reads a Python
    generator (Keras's PyDataset, from_generator), which no tf.data setting parallelizes."""
    name = it.name
    # a pipeline stepscope recorded (no tf.data dataset) gets the Python advice first
    if (
        generator
        and not python_stages
        and (name.startswith(("Prefetch", "FlatMap")) or name.endswith("Generator"))
    ):
        return f"'{name}' waits on the pipeline's Python source. {GENERATOR_ADVICE}"
    if python_stages:
        return (
            f"The Python stage '{name}' is the slowest step of the pipeline. Run it in parallel "
            "(torch DataLoader(num_workers=N, persistent_workers=True), a "
            "concurrent.futures process pool, or multiprocessing), cache its results if they "
            "do not change between epochs, vectorize it over a batch, and prefetch batches "
            "on a background thread (DataLoader prefetch_factor, pin_memory=True) so it "
            "overlaps the training step."
        )
    if name.startswith(_SOURCES) or it.dataset.startswith(("TFRecord", "TextLine", "FixedLength")):
        return (
            f"'{name}' reads the source data. Read files in parallel with "
            "interleave(..., num_parallel_calls=tf.data.AUTOTUNE, deterministic=False), use "
            "larger or more files, and cache() the dataset if it fits in memory or on local "
            f"disk. See {_GUIDE}#source_datasets."
        )
    if name.startswith(_MAPS) or "Map" in name:
        return (
            f"'{name}' transforms elements too slowly. Use num_parallel_calls=tf.data.AUTOTUNE "
            "in map()/interleave(), vectorize the function (batch before map), avoid "
            "tf.py_function / Python code inside it, and cache() after expensive, "
            f"deterministic transformations. See {_GUIDE}#transformation_datasets."
        )
    if name.startswith("Prefetch"):
        return (
            "The consumer waits on an empty prefetch buffer: the stages before Prefetch "
            "produce elements too slowly. Parallelize them (num_parallel_calls=AUTOTUNE), "
            f"cache() their output, or raise the prefetch buffer size. See {_GUIDE}."
        )
    return (
        f"'{name}' ({it.dataset or 'stage'}) is the slowest stage. Add parallelism upstream "
        "(num_parallel_calls=tf.data.AUTOTUNE on the map/interleave feeding it), use a "
        "parallel batch (batch(..., num_parallel_calls=AUTOTUNE)), and prefetch(AUTOTUNE) at "
        f"the end of the pipeline. See {_GUIDE}."
    )


@record
class GraphNode:
    id: str = out("the iterator's id (a string: 64-bit ids stay exact in JavaScript)")
    parent_id: str | None = out("the iterator reading this one, null for the root")
    name: str = out("e.g. `Map`")
    long_name: str = out("its path from the root, e.g. `Iterator::Root::BatchV2::Map`")
    long_name_explained: str = out(
        "the path in words (`Map, read by BatchV2, read by Root (the pipeline's output)`)"
    )
    dataset: str = out("the tf.data op, e.g. `MapDataset:1`; empty for Python stages")
    is_async: bool = out("it runs on its own threads (prefetch, parallel map...)")
    start_time_us: float = out("first start, from the call's start", "us", 3)
    total_duration_us: float = out("wall time it was busy inside the slowest call", "us", 3)
    self_time_us: float = out("time not in the iterators it reads (at most its total)", "us", 3)
    calls: int = out("times it was called in the slowest call")
    on_critical_path: bool = out("the consumer waited on it")
    is_bottleneck: bool = out("the pipeline's bottleneck")


def _node(it: IteratorStat, bottleneck: int | None) -> GraphNode:
    return GraphNode(
        id=str(it.id),
        parent_id=None if it.parent_id is None else str(it.parent_id),
        name=it.name,
        long_name=it.long_name,
        long_name_explained=explain_long_name(it.long_name),
        dataset=it.dataset,
        is_async=it.is_async,
        start_time_us=_us(it.start_offset_ns),
        total_duration_us=_us(it.duration_ns),
        self_time_us=_us(it.self_ns),
        calls=it.calls,
        on_critical_path=it.blocking,
        is_bottleneck=it.id == bottleneck,
    )


@record
class PipelineSummary:
    host: str = out("the host")
    host_input_percent: float | None = out(
        "with several hosts: the host's input share of step time (null without steps)", "%"
    )
    input_pipeline: str = out("the pipeline's name")
    root: str = out("the long name of its root iterator")
    calls: int = out("calls of the pipeline (elements asked for)")
    avg_latency_us: float = out("mean call latency", "us", 3)
    min_latency_us: float = out("shortest call", "us", 3)
    max_latency_us: float = out("slowest call", "us", 3)
    slow_calls: int = out("calls over the slow-call threshold")
    bottleneck_iterator: str = out("name of the bottleneck iterator of the slowest call")
    bottleneck_long_name: str = out("its long name")
    bottleneck_self_us: float = out("its self time in that call", "us", 3)


@record
class PipelineAnalysis(PipelineSummary):
    slowest_call_start_us: float = out("start of the slowest call (profile clock)", "us", 3)
    suggestion: str = out(
        "a concrete fix for the bottleneck, by its kind (a map whose function runs Python "
        "through tf.py_function: the input pipeline page's GIL advice, naming the function); "
        '"Not a bottleneck: ..." when the slowest call is under 5% of the host\'s median step '
        "(no change needed)"
    )
    python_stages: bool = out("the pipeline was recorded by stepscope.data (Python stages)")
    graph: tuple[GraphNode, ...] = out("iterators of the slowest call in order of first start")


@record
class TfDataBottleneck:
    CSV_ROWS: ClassVar[str] = "summary"

    conclusion: str = out(
        "one paragraph: the most input-bound host, its slowest pipeline, the bottleneck"
    )
    slow_call_threshold_us: float = out("a call slower than this is slow (50)", "us")
    summary: tuple[PipelineSummary, ...] = out("per pipeline, slowest first")
    analyses: tuple[PipelineAnalysis, ...] = out("per pipeline: the summary and its analysis")


def _bottleneck(p: PipelineStats) -> IteratorStat | None:
    return next((it for it in p.iterators if it.id == p.bottleneck_id), None)


def _summary_fields(host: str, p: PipelineStats, percent: float | None) -> dict[str, Any]:
    b = _bottleneck(p)
    return {
        "host": host,
        "host_input_percent": percent,
        "input_pipeline": p.name,
        "root": p.root_long_name,
        "calls": p.call_count,
        "avg_latency_us": _us(p.avg_latency_ns),
        "min_latency_us": _us(p.min_latency_ns),
        "max_latency_us": _us(p.max_latency_ns),
        "slow_calls": p.slow_call_count,
        "bottleneck_iterator": b.name if b else "",
        "bottleneck_long_name": b.long_name if b else "",
        "bottleneck_self_us": _us(p.bottleneck_self_ns) if b else 0.0,
    }


def _conclusion(analyses: list[PipelineAnalysis], several_hosts: bool) -> str:
    if not analyses:
        return "No input pipeline events (Iterator::*) in this profile."
    top = analyses[0]
    pct = top.host_input_percent
    bound = (
        f"The most input-bound host is {top.host} ({pct:.1f}% of its step time waits for input). "
        if pct is not None and several_hosts
        else ""
    )
    conclusion = bound + (
        f"Slowest input pipeline: {top.input_pipeline} on host {top.host} "
        f"(slowest call {_duration(top.max_latency_us)}, {top.slow_calls} of "
        f"{top.calls} calls over {SLOW_CALL_NS // 1000} µs)."
    )
    if top.bottleneck_iterator:
        conclusion += (
            f" Its bottleneck is '{top.bottleneck_iterator}' "
            f"({top.bottleneck_long_name}), {_duration(top.bottleneck_self_us)} of self "
            "time in that call."
        )
    return conclusion


def _duration(us: float) -> str:
    """A duration in the unit a reader expects (``4.36 ms``, not ``4364.1 µs``)."""
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def not_a_bottleneck(p: PipelineStats, step_ns: float | None) -> str:
    """Why a pipeline needs no change ("" when it may): its slowest call is a small part of a
    step (`NEGLIGIBLE_STEP_SHARE`), so a few µs over the 50 µs slow-call mark are no reason
    to add parallelism."""
    if not step_ns or p.max_latency_ns >= NEGLIGIBLE_STEP_SHARE * step_ns:
        return ""
    return (
        f"Not a bottleneck: the slowest call ({_duration(_us(p.max_latency_ns))}) is "
        f"{100.0 * p.max_latency_ns / step_ns:.1f}% of a step ({_duration(_us(step_ns))} "
        "median); nothing to change in this pipeline."
    )


def result_of(
    pipelines: list[tuple[str, PipelineStats]],
    input_percent: dict[str, float | None],
    step_ns: dict[str, float | None] | None = None,
    map_fix: Callable[[IteratorStat], str] | None = None,
) -> TfDataBottleneck:
    """The result for (host, pipeline) pairs in display order; ``step_ns``: each host's
    median step time (None without steps); ``map_fix``: the fix for a bottleneck whose map
    runs Python (`map_python_fix`), "" for any other."""
    summary, analyses = [], []
    for host, p in pipelines:
        fields = _summary_fields(host, p, input_percent.get(host))
        b = _bottleneck(p)
        summary.append(PipelineSummary(**fields))
        fine = not_a_bottleneck(p, (step_ns or {}).get(host))
        python = map_fix(b) if map_fix and b else ""
        analyses.append(
            PipelineAnalysis(
                **fields,
                slowest_call_start_us=_us(p.slowest_call_start_ns),
                suggestion=fine
                or python
                or (suggestion(b, p.python_stages, has_generator(p.iterators)) if b else ""),
                python_stages=p.python_stages,
                graph=tuple(_node(it, p.bottleneck_id) for it in p.iterators),
            )
        )
    return TfDataBottleneck(
        conclusion=_conclusion(analyses, len(input_percent) > 1),
        slow_call_threshold_us=SLOW_CALL_NS / 1000,
        summary=tuple(summary),
        analyses=tuple(analyses),
    )


def host_pipelines(ctx: ToolContext, host: str) -> tuple[PipelineStats, ...]:
    return ctx.intermediate(host, PIPELINES, build_tf_data_stats)


def _input_percent(ctx: ToolContext, host: str) -> float | None:
    """Share of the host's step time spent waiting for input (None without steps)."""
    db = analysis.step_db(ctx, host)
    total = int(db.dur_ns.sum())
    return round(100.0 * float(db.category_ns()["input"].sum()) / total, 3) if total else None


def build(ctx: ToolContext) -> TfDataBottleneck:
    """The most input-bound host's pipelines first, each host's slowest pipeline first."""
    found = [(host, p) for host in ctx.hosts for p in host_pipelines(ctx, host)]
    hosts = sorted({host for host, _ in found})
    percent = {host: _input_percent(ctx, host) for host in hosts} if len(hosts) > 1 else {}
    found.sort(key=lambda hp: (-(percent.get(hp[0]) or -1.0), -hp[1].max_latency_ns))
    steps = {host: median_step_ns(ctx, host) for host in hosts}
    return result_of(found, percent, steps, map_python_fix(ctx) if found else None)


def map_python_fix(ctx: ToolContext) -> Callable[[IteratorStat], str]:
    """The fix for a map bottleneck whose function runs Python (`_analysis.map_python`: one
    host, its calls a tenth of the steps' time at least): the input pipeline page's and the
    overview's words for it (decision 1025), after the iterator's name; "" for any other
    bottleneck, which keeps the fix of its kind (decision 1027)."""
    summary = analysis.steps(ctx) if len(ctx.hosts) == 1 else None

    def fix(it: IteratorStat) -> str:
        python = analysis.map_python(ctx, summary, it.name) if summary else None
        if python is None:
            return ""
        advice = py_function_map_advice(python.describe(), python.at_once, is_parallel_map(it.name))
        return f"'{it.name}' transforms elements too slowly. {advice}"

    return fix


def median_step_ns(ctx: ToolContext, host: str) -> float | None:
    """The host's median step time (None without steps)."""
    db = analysis.step_db(ctx, host)
    return float(np.median(db.dur_ns)) if db.n_steps else None


def _has_root_iterators(profile: Profile) -> bool:
    ids = profile.strings.ids_matching(is_root_iterator)
    return bool(len(ids)) and bool(np.isin(profile.name, ids).any())


def available(ctx: ToolContext) -> bool:
    # Cheap: listing tools must not run the analysis.
    return any(ctx.intermediate(h, HAS_ROOT_ITERATORS, _has_root_iterators) for h in ctx.hosts)


TOOL = ToolSpec(
    name="tf_data_bottleneck_analysis",
    title="tf.data bottleneck analysis",
    description="The slowest input pipeline, its iterator graph, the bottleneck stage and a fix.",
    build=build,
    formats=("json", "csv"),
    available=available,
    needs="tf.data iterator events; a TensorFlow run whose input is a tf.data pipeline has them",
    order=80,
)
