"""A run's `RunSummary` from the shared intermediates of a `ToolContext` (step db, op metrics,
kernel db, memory), for `stepscope summary`, `stepscope diff` and the Compare page. Not a
tool itself (it compares runs, tools show one); the intermediates are those the tools use,
so a server that already showed a run's overview reuses its step db here.
"""

from __future__ import annotations

from stepscope.stats.compare import RunSummary, build_run_summary, memory_peak_bytes
from stepscope.stats.gpu.kernels import KernelDb, kernel_events, merge_kernel_dbs
from stepscope.tools._analysis import device_facts, device_ops, host_ops, kernel_db, steps
from stepscope.tools.context import Key, ToolContext

# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
HAS_KERNELS: Key[bool] = Key("compare.has_kernels")
MEMORY_PEAK: Key[int | None] = Key("compare.memory_peak")


def _kernels(ctx: ToolContext) -> KernelDb | None:
    has = [ctx.intermediate(h, HAS_KERNELS, lambda p: len(kernel_events(p)) > 0) for h in ctx.hosts]
    if not any(has):
        return None
    return merge_kernel_dbs([kernel_db(ctx, h) for h in ctx.hosts])  # shared with kernel_stats


def _memory_peak(ctx: ToolContext) -> int | None:
    peaks = [ctx.intermediate(h, MEMORY_PEAK, memory_peak_bytes) for h in ctx.hosts]
    known = [p for p in peaks if p is not None]
    return max(known) if known else None


def run_summary(ctx: ToolContext, label: str | None = None) -> RunSummary:
    """The summary of the context's run and host (ALL_HOSTS: steps matched by number)."""
    frameworks = sorted({device_facts(ctx, h)[2] for h in ctx.hosts} - {""})
    return build_run_summary(
        label if label is not None else ctx.run.name,
        ctx.host,
        steps(ctx),
        host_ops(ctx),
        device_ops(ctx),
        _kernels(ctx),
        _memory_peak(ctx),
        "+".join(frameworks),
    )
