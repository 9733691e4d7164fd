"""A run's `RunSummary` from the shared intermediates of a `ToolContext` (step db, op metrics,
kernel db, memory), for `stepscope summary`, `stepscope diff` and the Compare page. Not a
tool itself (it compares runs, tools show one); the intermediates are those the tools use,
so a server that already showed a run's overview reuses its step db here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from stepscope.limits import TIME_LIMIT_NS
from stepscope.stats.compare import RunSummary, build_run_summary, memory_peak_bytes
from stepscope.stats.compare.run_summary import warmup_from
from stepscope.stats.diagnostics.cores import waiting_first
from stepscope.stats.gpu.kernels import KernelDb, build_kernel_db, kernel_events, merge_kernel_dbs
from stepscope.stats.op_metrics import OpMetrics, OpTable, build_op_metrics
from stepscope.tools._analysis import (
    cores_waited,
    device_facts,
    device_ops,
    host_ops,
    kernel_db,
    step_db,
    steps_cpu,
    told_steps,
)
from stepscope.tools.context import Key, ToolContext

# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
HAS_KERNELS: Key[bool] = Key("compare.has_kernels")
MEMORY_PEAK: Key[int | None] = Key("compare.memory_peak")
# the op metrics and kernels of the events from a time on (.at(from_ns)): the steps after a
# warm-up
OP_METRICS_FROM: Key[OpMetrics] = Key("compare.op_metrics_from")
KERNEL_DB_FROM: Key[KernelDb] = Key("compare.kernel_db_from")


def _kernels(ctx: ToolContext) -> KernelDb | None:
    has = [ctx.intermediate(h, HAS_KERNELS, lambda p: len(kernel_events(p)) > 0) for h in ctx.hosts]
    if not any(has):
        return None
    return merge_kernel_dbs([kernel_db(ctx, h) for h in ctx.hosts])  # shared with kernel_stats


def _memory_peak(ctx: ToolContext) -> int | None:
    peaks = [ctx.intermediate(h, MEMORY_PEAK, memory_peak_bytes) for h in ctx.hosts]
    known = [p for p in peaks if p is not None]
    return max(known) if known else None


def _once_warm(ctx: ToolContext, first: int) -> tuple[OpTable, OpTable, KernelDb | None]:
    """Host ops, device ops and kernels of the events from step ``first`` on, per host from
    its own start of that step (a host without it counts nothing)."""
    metrics, kernels = [], []
    has = [ctx.intermediate(h, HAS_KERNELS, lambda p: len(kernel_events(p)) > 0) for h in ctx.hosts]
    for host, with_kernels in zip(ctx.hosts, has, strict=True):
        db = step_db(ctx, host)
        later = db.start_ns[db.step_num >= first]
        from_ns = int(later.min()) if len(later) else TIME_LIMIT_NS
        ops = partial(build_op_metrics, from_ns=from_ns)
        metrics.append(ctx.intermediate(host, OP_METRICS_FROM.at(from_ns), ops))
        if with_kernels:
            kerns = partial(build_kernel_db, from_ns=from_ns)
            kernels.append(ctx.intermediate(host, KERNEL_DB_FROM.at(from_ns), kerns))
    return (
        OpTable.merge("host", [m.host for m in metrics]),
        OpTable.merge("device", [m.device for m in metrics]),
        merge_kernel_dbs(kernels) if kernels else None,
    )


def run_summary(ctx: ToolContext, label: str | None = None) -> RunSummary:
    """The summary of the context's run and host (ALL_HOSTS: steps matched by number); after
    a warm-up, also the rows of the steps after it (decision 386)."""
    frameworks = sorted({device_facts(ctx, h)[2] for h in ctx.hosts} - {""})
    hosts = host_ops(ctx)
    summary = told_steps(ctx, hosts)  # its headlines the overview's (decision 1060)
    first = warmup_from(summary)
    built = build_run_summary(
        label if label is not None else ctx.run.name,
        ctx.host,
        summary,
        hosts,
        device_ops(ctx),
        _kernels(ctx),
        _memory_peak(ctx),
        "+".join(frameworks),
        _once_warm(ctx, first) if first is not None else None,
        partial(steps_cpu, ctx),
    )
    # one host's steps' thread waiting for a core: said first, as the overview says it
    runnable = cores_waited(ctx, summary)
    if runnable is None:
        return built
    return replace(built, bound_by=waiting_first(built.bound_by, runnable))
