"""The intermediates the analysis tools share, computed once per (host file, name).

Every tool asks the `ToolContext` for them, so overview_page, input_pipeline_analyzer and
op_stats on the same run build the step database and the op metrics once between them (the
store keeps them for the life of a server or a CLI invocation). Tools never import one
another: what two of them share (the kernel db of kernel_stats and diagnostics, the findings
of diagnostics and the overview) lives here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from stepscope.model import ALL_HOSTS, Profile
from stepscope.stats import (
    SOURCES,
    OpMetrics,
    OpTable,
    StepDb,
    StepSummary,
    build_op_metrics,
    build_step_db,
    summarize_steps,
)
from stepscope.stats.collective_calls import CollectiveCalls
from stepscope.stats.collective_calls import collective_calls as build_calls
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.diagnostics.cores import steps_waited
from stepscope.stats.diagnostics.runner import combine_hosts, diagnose_host
from stepscope.stats.gpu.device import DeviceInfo, devices, framework_of, precision_ns, utilization
from stepscope.stats.gpu.kernels import KernelDb, build_kernel_db
from stepscope.stats.host.python_samples import PythonTime
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.runup_python import steps_thread_cpu
from stepscope.stats.stragglers_types import Rank
from stepscope.stats.summary import with_eager
from stepscope.stats.warmup import warmup_count
from stepscope.stats.xla.xla_ops import xla_events
from stepscope.tools.context import ALL_HOSTS_SHARE, Key, ToolContext
from stepscope.tools.registry import ToolOption
from stepscope.vocab.tensorflow import is_iterator

if TYPE_CHECKING:  # the XLA and PyTorch cost models load with the tools that show them
    from stepscope.stats.gpu.device_caps import DeviceCaps
    from stepscope.stats.input.loader_workers import LoaderWorkers
    from stepscope.stats.input.map_python import MapPython
    from stepscope.stats.input.producer import Producer
    from stepscope.stats.input.tf_data import PipelineStats
    from stepscope.stats.trace_index.tracks import Steps
    from stepscope.stats.xla.xla_metrics import HloMetrics

STEP_SOURCE = ToolOption(
    "step_source",
    "where steps come from: auto (first found) or one source",
    "auto",
    ("auto", *SOURCES),
)
DIAGNOSTIC_OPTIONS = (
    STEP_SOURCE,
    ToolOption(
        "link_bandwidth_gbps",
        "per-GPU interconnect bandwidth in GB/s for the collective check (default: by GPU model)",
        "",
    ),
    ToolOption(
        "parameter_bytes",
        "model parameter bytes: the all-reduce each step should move (collective check)",
        "",
    ),
)


# Per-host intermediates (ToolContext.intermediate): each name declared once, typed; all
# kept in the store for the next process (`stepscope.tools.kept`): each depends on the host
# file and the parameters in its name only.
STEP_DB: Key[StepDb] = Key("step_db", kept=True)  # .at(step source)
COLLECTIVE_CALLS: Key[CollectiveCalls] = Key("collective_calls", kept=True)  # .at(step source)
OP_METRICS: Key[OpMetrics] = Key("op_metrics", kept=True)
TF_DATA: Key[tuple[PipelineStats, ...]] = Key("tf_data_bottleneck", kept=True)
LOADER_WORKERS: Key[tuple[LoaderWorkers, ...]] = Key("loader_workers", kept=True)  # .at(source)
IN_PROCESS_LOADER: Key[str] = Key("in_process_loader", kept=True)  # .at(source)
WORKER_LOADER: Key[str] = Key("worker_loader", kept=True)  # .at(source)
WARMUP_PYTHON: Key[str] = Key("warmup_python", kept=True)  # .at(source)
STEADY_PYTHON: Key[PythonTime] = Key("steady_python", kept=True)  # .at(source)
QUEUE_PRODUCER: Key[Producer | None] = Key("queue_producer", kept=True)  # .at(source)
EAGER_BY_STEP: Key[np.ndarray] = Key("eager_by_step", kept=True)  # .at(source)
# the steps' thread's CPU readings (.at(step source)): its wait for a core (decisions 950, 1063)
STEPS_CPU: Key[ThreadCpu] = Key("compare.steps_cpu")
MAP_PYTHON: Key[MapPython | None] = Key("map_python", kept=True)
DEVICE_FACTS: Key[tuple[list[DeviceInfo], dict[str, int], str]] = Key("device_facts", kept=True)
UTILIZATION: Key[dict[str, float]] = Key("utilization", kept=True)  # .at(window)
KERNEL_DB: Key[KernelDb] = Key("kernel_stats.kernel_db", kept=True)
FINDINGS: Key[list[Finding]] = Key("diagnostics", kept=True)  # .at(the diagnostic options)
HLO_METRICS: Key[HloMetrics] = Key("xla.hlo_metrics", kept=True)  # .at(lo, hi): a time window
OP_COSTS: Key[HloMetrics] = Key("xla.op_costs", kept=True)
HAS_OP_COSTS: Key[bool] = Key("xla.has_op_costs", kept=True)
DEVICE_CAPS: Key[DeviceCaps] = Key("xla.device_caps", kept=True)
HAS_HLO_OPS: Key[bool] = Key("xla.has_ops", kept=True)
# The trace viewer's steps (a few arrays of the step database): a server reads them after the
# steps' child without the database's 29 arrays and 5,700 objects (decision 660).
TRACE_STEPS: Key[Steps] = Key("trace_steps", kept=True)  # .at(step source)


def step_db(ctx: ToolContext, host: str) -> StepDb:
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(host, STEP_DB.at(source), lambda p: build_step_db(p, source))


def trace_steps(ctx: ToolContext, host: str) -> Steps:
    """The steps the trace viewer draws: `find_steps` of the step database, kept on their own.
    Its module is imported here: the tools' commands do not load the trace viewer's index."""
    from stepscope.stats.trace_index.tracks import find_steps

    source = ctx.option("step_source", "auto")
    return ctx.intermediate(
        host, TRACE_STEPS.at(source), lambda p: find_steps(p, lambda: step_db(ctx, host))
    )


def collective_calls(ctx: ToolContext, host: str) -> CollectiveCalls:
    """The host's collective calls: arrivals, exits and run-ups (pod viewer, diagnostics)."""
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(
        host, COLLECTIVE_CALLS.at(source), lambda p: build_calls(p, step_db(ctx, host))
    )


def ranks(ctx: ToolContext) -> list[Rank]:
    """Every selected host as the straggler analysis reads it."""
    return [
        Rank(h, step_db(ctx, h), collective_calls(ctx, h), device_caps(ctx, h).vendor)
        for h in ctx.hosts
    ]


def op_metrics(ctx: ToolContext, host: str) -> OpMetrics:
    return ctx.intermediate(host, OP_METRICS, build_op_metrics)


def op_metrics_beside(ctx: ToolContext) -> None:
    """With two analysis threads (`ProfileStore.threads`), starts one host's op metrics on the
    second thread, to build beside what the caller computes next (the step database). Not for
    ALL_HOSTS: their intermediates come from the per-host workers, and the driver never opens
    a profile."""
    if ctx.store.threads < 2 or ctx.host == ALL_HOSTS:
        return
    host = ctx.hosts[0]
    ctx.store.profile(ctx.run, host)  # opened here, once, before two threads ask for it
    ctx.store.in_background(lambda: op_metrics(ctx, host))


def loader_workers(ctx: ToolContext, host: str) -> tuple[LoaderWorkers, ...]:
    """The host's DataLoader worker processes, when captured (input_pipeline_analyzer)."""
    source = ctx.option("step_source", "auto")

    def once_warm(p: Profile) -> tuple[LoaderWorkers, ...]:
        db = step_db(ctx, host)
        return _loader_workers(p, db, warmup_count(db.dur_ns, mid_run=db.mid_run))

    return ctx.intermediate(host, LOADER_WORKERS.at(source), once_warm)


def in_process_loader(ctx: ToolContext, host: str) -> str:
    """Advice for a DataLoader with ``num_workers=0`` the steps wait on; "" if none."""
    from stepscope.stats.input.loader_verdict import in_process_loader as build

    source = ctx.option("step_source", "auto")

    def once_warm(p: Profile) -> str:
        db = step_db(ctx, host)
        return build(p, db, warmup_count(db.dur_ns, mid_run=db.mid_run))

    return ctx.intermediate(host, IN_PROCESS_LOADER.at(source), once_warm)


def worker_loader(ctx: ToolContext, host: str) -> str:
    """Advice for a DataLoader with uncaptured worker processes the steps wait on; "" if
    none (`stepscope.stats.input.worker_loader`)."""
    from stepscope.stats.input.worker_loader import worker_loader as build

    source = ctx.option("step_source", "auto")

    def once_warm(p: Profile) -> str:
        db = step_db(ctx, host)
        return build(p, db, warmup_count(db.dur_ns, mid_run=db.mid_run))

    return ctx.intermediate(host, WORKER_LOADER.at(source), once_warm)


def dataloader_advice(ctx: ToolContext) -> str:
    """The DataLoader advice of the selected hosts whose loaders were not captured: one making
    its batches in the training process (`in_process_loader`), or worker processes the
    trace does not hold (`worker_loader`; a host whose workers were captured gets their
    verdict instead). Of the host whose steps wait for input the longest share of their
    time, named when several hosts are selected (decision 486: each rank has its own loader,
    and the first host's advice can be another rank's than the one the job waits for); ""
    if none."""
    found: list[tuple[float, str, str]] = []
    for h in ctx.hosts:
        advice = in_process_loader(ctx, h)
        if not advice and not loader_workers(ctx, h):
            advice = worker_loader(ctx, h)
        if not advice:
            continue
        db = step_db(ctx, h)
        total = int(db.dur_ns.sum())
        share = float(db.limit_ns()["input"].sum()) / total if total else 0.0
        found.append((share, h, advice))
    if not found:
        return ""
    _, host, advice = max(found, key=lambda f: f[0])  # the first of equal shares
    return f"On {host}: {advice}" if len(ctx.hosts) > 1 else advice


def warmup_python(ctx: ToolContext) -> str:
    """What the stack sampler saw in the warm-up steps, for one host ('' for several: the
    pod's warm-up is the pacing rank's steps, not one host's samples)."""
    if len(ctx.hosts) != 1:
        return ""
    from stepscope.stats.warmup import warmup_python as build

    host = ctx.hosts[0]
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(host, WARMUP_PYTHON.at(source), lambda p: build(p, step_db(ctx, host)))


def steady_python(ctx: ToolContext) -> PythonTime | None:
    """What the stack sampler saw in the steps after the warm-up, for one host (None for
    several: their untraced picture is one host's over all its steps, decision 547)."""
    if len(ctx.hosts) != 1:
        return None
    from stepscope.stats.warmup import steady_python as build

    host = ctx.hosts[0]
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(host, STEADY_PYTHON.at(source), lambda p: build(p, step_db(ctx, host)))


def _loader_workers(profile: Profile, db: StepDb, first: int) -> tuple[LoaderWorkers, ...]:
    from stepscope.stats.input.loader_workers import loader_workers as build

    return build(profile, db, first)


def tf_data(ctx: ToolContext, host: str) -> tuple[PipelineStats, ...]:
    """Input pipelines and their bottlenecks (shared with tf_data_bottleneck_analysis)."""
    return ctx.intermediate(host, TF_DATA, _tf_data_stats)


def _tf_data_stats(profile: Profile) -> tuple[PipelineStats, ...]:
    # Pipelines are read from ``Iterator::`` events (`stepscope.stats.input.tf_data`): a profile
    # without any (PyTorch, JAX) does not import that analysis.
    if not len(profile.strings.ids_matching(is_iterator)):
        return ()
    from stepscope.stats.input.tf_data import build_tf_data_stats

    return build_tf_data_stats(profile)


def bottleneck_of(pipeline: PipelineStats) -> tuple[str, str, int] | None:
    """(iterator long name, kind, self ns) of a pipeline's bottleneck, if it has one."""
    for it in pipeline.iterators:
        if it.id == pipeline.bottleneck_id:
            return it.long_name, it.name, pipeline.bottleneck_self_ns
    return None


# the map's Python calls' time (at least one running) of the steps' time: less, and the Python
# is a small part of the map's work, which keeps the map's own advice (decision 1025)
MAP_PYTHON_SHARE = 0.1


def map_python(ctx: ToolContext, summary: StepSummary, kind: str) -> MapPython | None:
    """The Python a tf.data map bottleneck of ``kind`` calls (`stats.input.map_python`), for
    one host, when it is a map's and a tenth of the steps' time at least; else None."""
    if len(ctx.hosts) != 1 or "map" not in kind.lower():
        return None
    from stepscope.stats.input.map_python import map_python as find

    found = ctx.intermediate(ctx.hosts[0], MAP_PYTHON, find)
    total = float(summary.dur_ns.sum())
    if found is None or not total or found.wall_ns < MAP_PYTHON_SHARE * total:
        return None
    return found


def queue_producer(ctx: ToolContext) -> Producer | None:
    """What the capture traced of the thread filling the queue the loop waits on, for one
    host (None for several, or none: `stats.input.producer`); its `describe` is the advice's
    words, its `headline` the headline's (decision 1028)."""
    if len(ctx.hosts) != 1:
        return None
    from stepscope.stats.input.producer import queue_producer as find

    host = ctx.hosts[0]
    db = step_db(ctx, host)
    if not db.fetched.from_queue():  # no queue: the module's pass is not run
        return None
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(host, QUEUE_PRODUCER.at(source), lambda p: find(p, db))


def _eager_by_step(ctx: ToolContext, host: str) -> np.ndarray:
    """Per step of ``host``'s step database, the self time of its host ops run eagerly that
    start in it (`op_metrics.eager_ns_by_step`)."""
    from stepscope.stats.op_metrics import eager_ns_by_step

    db = step_db(ctx, host)
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(
        host, EAGER_BY_STEP.at(source), lambda p: eager_ns_by_step(p, db.start_ns, db.dur_ns)
    )


def with_eager_steps(ctx: ToolContext, summary: StepSummary) -> StepSummary:
    """``summary`` with its eager host ops' time per step (`op_metrics.eager_ns_by_step`;
    decision 1029), where its ops ran eagerly (`with_eager`); else unchanged. Several hosts:
    the job's, each rank's eager time in each job step counted as the job's step counts its
    parts, the ranks' mean stretched to the job's step (`StepSummary.job_part_ns`, decision
    1061)."""
    if summary.eager_percent <= 0 or not summary.n_steps:
        return summary
    if len(summary.rank_hosts) > 1:  # the job's steps: each rank's own step in each
        rows = []
        for row, host in enumerate(summary.rank_hosts):
            db, mine = step_db(ctx, host), summary.rank_start_ns[row]
            # the rank's steps in its database, by their starts
            order = np.argsort(db.start_ns, kind="stable")
            at = np.minimum(np.searchsorted(db.start_ns[order], mine), max(db.n_steps - 1, 0))
            if not db.n_steps or (db.start_ns[order[at]] != mine).any():
                return summary
            rows.append(_eager_by_step(ctx, host)[order[at]])
        return replace(summary, eager_ns=summary.job_part_ns(np.stack(rows)))
    if len(ctx.hosts) != 1:
        return summary
    ns = _eager_by_step(ctx, ctx.hosts[0])
    return replace(summary, eager_ns=ns) if len(ns) == summary.n_steps else summary


def told_steps(ctx: ToolContext, host_table: OpTable) -> StepSummary:
    """The steps as every headline tells them: the overview's and the report's, `stepscope
    summary`'s and the compare page's (one source, decision 1060): `steps` with the share of
    the host ops' time run eagerly (``host_table``: `host_ops`; decision 1026) and that time
    per step (1029, 1061), and the thread filling the queue the steps wait on (1028)."""
    summary = with_eager_steps(ctx, with_eager(steps(ctx), host_table))
    producer = queue_producer(ctx)
    return replace(summary, producer=producer.headline()) if producer is not None else summary


def steps_cpu(ctx: ToolContext, host: str) -> ThreadCpu:
    """A host's steps' thread's CPU readings (of each rank, for a job's wait: decision 991)."""
    db = step_db(ctx, host)
    source = ctx.option("step_source", "auto")
    return ctx.intermediate(host, STEPS_CPU.at(source), lambda p: steps_thread_cpu(p, db))


def cores_waited(ctx: ToolContext, summary: StepSummary) -> float | None:
    """The share of the steps' time the steps' thread was runnable but off its core, when one
    host's steps are the headline's (no job) and it waited `stats.diagnostics.cores`'
    `CORE_WAIT` at least (`steps_waited`, as its `cores_wait` finding): the headline says it
    first (`waiting_first`; decision 1063); else None."""
    if len(summary.rank_hosts) > 1:
        return None
    hosts = [h for h in ctx.hosts if step_db(ctx, h).n_steps]
    if len(hosts) != 1:
        return None
    found = steps_waited(steps_cpu(ctx, hosts[0]), step_db(ctx, hosts[0]))
    return found[0] if found is not None else None


def steps(ctx: ToolContext) -> StepSummary:
    """The selected host's steps, or all hosts' matched by step number."""
    return summarize_steps({h: step_db(ctx, h) for h in ctx.hosts})


def host_ops(ctx: ToolContext) -> OpTable:
    return OpTable.merge("host", [op_metrics(ctx, h).host for h in ctx.hosts])


def device_ops(ctx: ToolContext) -> OpTable:
    return OpTable.merge("device", [op_metrics(ctx, h).device for h in ctx.hosts])


def _device_facts(profile: Profile) -> tuple[list[DeviceInfo], dict[str, int], str]:
    return devices(profile), precision_ns(profile), framework_of(profile)


def device_facts(ctx: ToolContext, host: str) -> tuple[list[DeviceInfo], dict[str, int], str]:
    """(devices, device compute ns by precision, framework) of one host."""
    return ctx.intermediate(host, DEVICE_FACTS, _device_facts)


def gpu_utilization(
    ctx: ToolContext, host: str, window: tuple[int, int] | None
) -> dict[str, float]:
    return ctx.intermediate(host, UTILIZATION.at(window), lambda p: utilization(p, window))


def kernel_db(ctx: ToolContext, host: str) -> KernelDb:
    """GPU kernels with their ops and launch facts (kernel_stats, diagnostics)."""
    return ctx.intermediate(host, KERNEL_DB, build_kernel_db)


def _host_data(ctx: ToolContext, host: str) -> HostData:
    return HostData(
        host, ctx.store.profile(ctx.run, host), step_db(ctx, host), kernel_db(ctx, host)
    )


def findings(ctx: ToolContext) -> list[Finding]:
    """All diagnostic findings for the selected host(s), most severe first (the diagnostics
    tool, and the overview's recommendations).

    Per-host findings are intermediates of each host (computed where the host is analyzed:
    a worker, for ALL_HOSTS); the findings across hosts reduce the hosts' step databases."""
    options = {o.name: ctx.option(o.name, o.default) for o in DIAGNOSTIC_OPTIONS}
    key = FINDINGS.at(",".join(f"{k}={v}" for k, v in sorted(options.items())))
    hosts = ctx.hosts

    def per_host(h: str) -> list[Finding]:
        return ctx.intermediate(h, key, lambda _p: diagnose_host(_host_data(ctx, h), options))

    def whole_run() -> list[Finding]:
        found = [f for h in hosts for f in per_host(h)]
        return combine_hosts(found, ranks(ctx), options)

    if len(hosts) == 1:
        # One host of several: its share of the run's straggler analysis (the calls), made
        # while its profile is open. A run of one host has no stragglers to find.
        if len(ctx.run.hosts) > 1 or ctx.option(ALL_HOSTS_SHARE):
            collective_calls(ctx, hosts[0])
            device_caps(ctx, hosts[0])  # its vendor, for the straggler finding's fix
        return per_host(hosts[0])
    # Cached per (run, hosts, options) without opening a profile: the overview and the
    # diagnostics tool share the reduction.
    return ctx.store.reduction((ctx.run.name, key.name, *hosts), whole_run)


def hlo_metrics(ctx: ToolContext, host: str) -> HloMetrics:
    """Time, FLOPs and bytes per HLO instruction (hlo_stats, op_profile, roofline_model)."""
    from stepscope.stats.xla.xla_metrics import hlo_metrics as build_hlo_metrics

    return ctx.intermediate(host, HLO_METRICS, build_hlo_metrics)


def _op_costs(profile: Profile) -> HloMetrics:
    from stepscope.stats.xla.xla_metrics import hlo_metrics as build_hlo_metrics

    if xla_events(profile):
        return build_hlo_metrics(profile)
    from stepscope.stats.gpu.torch_cost import torch_metrics

    return torch_metrics(profile)


def op_costs(ctx: ToolContext, host: str) -> HloMetrics:
    """Per op time, FLOPs and bytes: from the HLO for XLA programs, else estimated from PyTorch
    op shapes (op_profile, roofline_model)."""
    return ctx.intermediate(host, OP_COSTS, _op_costs)


def has_op_costs(ctx: ToolContext) -> bool:
    return any(
        ctx.intermediate(h, HAS_OP_COSTS, lambda p: any(r.flops for r in _op_costs(p).rows))
        for h in ctx.hosts
    )


def device_caps(ctx: ToolContext, host: str) -> DeviceCaps:
    from stepscope.stats.gpu.device_caps import device_caps as build_device_caps

    return ctx.intermediate(host, DEVICE_CAPS, build_device_caps)


def _device_hlo_ops(profile: Profile) -> bool:
    """Whether device work events are tied to HLO instructions: a JAX CPU profile's HLO ops
    run on host threads, where hlo_stats has no row for them (a page of zeros)."""
    xla = xla_events(profile)
    if not xla:
        return False
    from stepscope.stats.xla.xla_metrics import device_work_mask

    return bool((xla.op_index[device_work_mask(profile)] >= 0).any())


def has_hlo_ops(ctx: ToolContext) -> bool:
    """Whether a selected host has device events tied to HLO instructions (cheap to list)."""
    return any(ctx.intermediate(h, HAS_HLO_OPS, _device_hlo_ops) for h in ctx.hosts)
