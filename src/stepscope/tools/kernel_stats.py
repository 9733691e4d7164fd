"""GPU kernel stats: every (kernel, op) pair with launch configuration, TensorCore use and time.

Durations are reported in microseconds (float), like XProf's table; shared memory in bytes.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.gpu.kernels import (
    KernelDb,
    KernelRow,
    kernel_events,
    merge_kernel_dbs,
)
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

TOP_KERNELS = 10  # slices of the pie chart before "Other"


# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
HAS_KERNELS: Key[bool] = Key("kernel_stats.has_kernels", kept=True)


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


@record
class Summary:
    kernel_count: int = out("kernel executions")
    unique_kernel_op_pairs: int = out("distinct (kernel, op) pairs, including left-out ones")
    rows_left_out: int = out("pairs beyond the top 1000")
    device_count: int = out("device planes with events")
    total_kernel_time_us: float = out("sum of kernel durations", "us", 3)
    tensor_core_time_pct: float = out("share of kernel time in kernels using TensorCores", "%", 2)
    eligible_op_time_pct: float = out("share of kernel time in TensorCore-eligible ops", "%", 2)
    eligible_without_tensor_core_us: float = out(
        "time of eligible ops' kernels not using TensorCores", "us", 3
    )


@record
class TopKernel:
    kernel_name: str = out("kernel name, or `Other` for the rest")
    total_duration_us: float = out("total time of the kernel (all its ops)", "us", 3)
    fraction_pct: float = out("share of all kernel time", "%", 2)


@record
class KernelRowOut:
    rank: int = out("rank by total time")
    kernel_name: str = out("the kernel of the (kernel, op) pair")
    registers_per_thread: int = out("registers per thread")
    shared_memory_bytes: int = out("static + dynamic shared memory per block", "bytes")
    static_shmem_bytes: int = out("static shared memory per block", "bytes")
    dynamic_shmem_bytes: int = out("dynamic shared memory per block", "bytes")
    block_dim: str = out("block dimensions `x,y,z`")
    grid_dim: str = out("grid dimensions `x,y,z`")
    op_tensor_core_eligible: bool = out("the op could use TensorCores (see above)")
    uses_tensor_core: bool = out("the kernel uses TensorCores (see above)")
    op_name: str = out(
        "the op of the (kernel, op) pair: the framework op; for XLA kernels of instructions "
        "XLA made up (no framework op in the HLO metadata) '', as XProf"
    )
    hlo_ops: str = out("HLO instructions the row's kernels ran for (XLA programs), comma-separated")
    occurrences: int = out("executions")
    total_duration_us: float = out("total duration", "us", 3)
    avg_duration_us: float = out("mean duration", "us", 3)
    min_duration_us: float = out("shortest duration", "us", 3)
    max_duration_us: float = out("longest duration", "us", 3)
    occupancy_pct: float | None = out(
        "duration-weighted mean achieved occupancy where measured, else null", "%", 2
    )
    launch_configs: int = out("distinct launch configurations of the pair")


def _row(rank: int, row: KernelRow) -> KernelRowOut:
    d = row.details
    return KernelRowOut(
        rank=rank,
        kernel_name=row.kernel_name,
        registers_per_thread=d.registers_per_thread,
        shared_memory_bytes=d.static_shmem_bytes + d.dynamic_shmem_bytes,
        static_shmem_bytes=d.static_shmem_bytes,
        dynamic_shmem_bytes=d.dynamic_shmem_bytes,
        block_dim=",".join(map(str, d.block)),
        grid_dim=",".join(map(str, d.grid)),
        op_tensor_core_eligible=row.op_tensor_core_eligible,
        uses_tensor_core=row.uses_tensor_core,
        op_name=row.op_name,
        hlo_ops=", ".join(row.hlo_ops),
        occurrences=row.occurrences,
        total_duration_us=_us(row.total_ns),
        avg_duration_us=_us(row.total_ns / max(1, row.occurrences)),
        min_duration_us=_us(row.min_ns),
        max_duration_us=_us(row.max_ns),
        occupancy_pct=None if row.occupancy_pct is None else round(row.occupancy_pct, 2),
        launch_configs=row.launch_configs,
    )


COLUMNS = tuple(f.name for f in dataclasses.fields(KernelRowOut))


@record
class KernelStats:
    CSV_ROWS: ClassVar[str] = "rows"

    summary: Summary = out("totals over all kernels")
    devices: tuple[str, ...] = out("device plane names")
    top_kernels: tuple[TopKernel, ...] = out(
        "the pie: total time per kernel name, top 10, then `Other`"
    )
    columns: tuple[str, ...] = out("the `rows[]` keys in table order (the CSV header)")
    rows: tuple[KernelRowOut, ...] = out("one per (kernel, op) pair, by total time")


def _summary(db: KernelDb) -> Summary:
    rows = db.rows
    total = sum(r.total_ns for r in rows)
    tc = sum(r.total_ns for r in rows if r.uses_tensor_core)
    eligible = sum(r.total_ns for r in rows if r.op_tensor_core_eligible)
    missed = sum(r.total_ns for r in rows if r.op_tensor_core_eligible and not r.uses_tensor_core)
    return Summary(
        kernel_count=db.kernel_count,
        unique_kernel_op_pairs=len(rows) + db.truncated_rows,
        rows_left_out=db.truncated_rows,
        device_count=db.device_count,
        total_kernel_time_us=_us(db.total_ns),
        tensor_core_time_pct=_pct(tc, total),
        eligible_op_time_pct=_pct(eligible, total),
        eligible_without_tensor_core_us=_us(missed),
    )


def _top_kernels(db: KernelDb) -> tuple[TopKernel, ...]:
    """Total time per kernel name (all its ops), largest first: the pie chart."""
    by_kernel: dict[str, int] = {}
    for row in db.rows:
        by_kernel[row.kernel_name] = by_kernel.get(row.kernel_name, 0) + row.total_ns
    total = sum(by_kernel.values()) or 1
    ranked = sorted(by_kernel.items(), key=lambda kv: (-kv[1], kv[0]))
    top = [TopKernel(name, _us(ns), _pct(ns, total)) for name, ns in ranked[:TOP_KERNELS]]
    rest = sum(ns for _, ns in ranked[TOP_KERNELS:])
    if rest:
        top.append(TopKernel("Other", _us(rest), _pct(rest, total)))
    return tuple(top)


def build(ctx: ToolContext) -> KernelStats:
    db = merge_kernel_dbs([analysis.kernel_db(ctx, host) for host in ctx.hosts])
    return KernelStats(
        summary=_summary(db),
        devices=tuple(db.devices),
        top_kernels=_top_kernels(db),
        columns=COLUMNS,
        rows=tuple(_row(i + 1, row) for i, row in enumerate(db.rows)),
    )


def _has_kernels(profile: Profile) -> bool:
    return len(kernel_events(profile)) > 0


def available(ctx: ToolContext) -> bool:
    # Cheap: listing tools must not aggregate the kernels.
    return any(ctx.intermediate(h, HAS_KERNELS, _has_kernels) for h in ctx.hosts)


TOOL = ToolSpec(
    name="kernel_stats",
    title="GPU kernel stats",
    description="Every GPU kernel per op: launch configuration, TensorCore use, time.",
    build=build,
    formats=("json", "csv"),
    available=available,
    needs="GPU kernels; profile a run on a GPU with device tracing on",
    order=60,
)
