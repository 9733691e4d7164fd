"""HLO op stats: one row per HLO instruction that ran on a device, with its category, HLO
expression, framework op, time, FLOPs, bytes, rates and what bounds it; at ALL_HOSTS every
host's programs, each row naming its host. Fields: docs/tools/hlo_stats.md."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from stepscope.records import record
from stepscope.stats.gpu.device_caps import DeviceCaps
from stepscope.stats.xla.xla_metrics import HloOpRow, bound_by
from stepscope.tools import _analysis as analysis
from stepscope.tools import _xla
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec


@record
class Summary:
    hosts: tuple[str, ...] = out("the hosts whose programs the rows cover")
    hlo_ops: int = out("instructions with device time")
    total_time_us: float = out("device time in them", "us", 3)
    total_gflops: float = out(
        "FLOPs of all executions by XLA's GPU cost model (custom calls 0, as XProf)", "GFLOP", 3
    )
    total_bytes_accessed: int = out("bytes of all executions", "bytes")
    total_library_gflops: float = out("sum of `rows[].library_gflops`", "GFLOP", 3)
    device_idle_us: float = out(
        "time between each device's first and last event with no event, summed over hosts",
        "us",
        3,
    )


@record
class Row:
    rank: int = out("rank by total time")
    host: str = out("the host that ran it")
    program_id: int = out("the program's id")
    module: str = out("the program (`jit_loss_fn`)")
    category: str = out(
        "`<kind> fusion` (`loop`, `input`, `output`, `custom`) or the opcode "
        "(`custom-call`, `convolution`...)"
    )
    hlo_op_name: str = out("the HLO instruction")
    tf_op_name: str = out(
        "framework op from the HLO metadata (`jit(f)/jvp(...)/dot_general`), `''` if none"
    )
    occurrences: int = out("device events")
    executions: int = out("executions of the instruction")
    total_time_us: float = out("sum over events", "us", 3)
    avg_time_us: float = out("mean per event", "us", 3)
    self_time_percent: float = out("of the device time in HLO ops", "%", 3)
    cumulative_self_time_percent: float = out("this row and all above it", "%", 3)
    gflops: float = out("FLOPs of all executions (XLA's cost model)", "GFLOP", 6)
    flop_rate_gflops: float = out("FLOPs per second of its time", "GFLOP/s", 3)
    bytes_accessed: int = out("bytes of all executions", "bytes")
    library_gflops: float = out(
        "stepscope's estimate for cuBLAS/cuDNN custom calls (the GEMM or convolution they "
        "run), which `gflops`/`bytes_accessed` leave at 0 as XProf does; 0 for other ops",
        "GFLOP",
        6,
    )
    library_bytes_accessed: int = out("bytes of that estimate", "bytes")
    memory_bw_gbps: float = out("bytes per second of its time", "GB/s", 3)
    operational_intensity: float = out("FLOPs per byte", "FLOP/byte", 3)
    bound_by: str = out(
        "`Compute` (intensity at or right of the ridge point), `Memory`, or `Unknown` "
        "(no FLOPs or bytes known)"
    )
    expression: str = out("the instruction in HLO text (operands with shapes)")
    source: str = out("`file:line` from the HLO metadata")


COLUMNS = tuple(f.name for f in dataclasses.fields(Row))


@record
class HloStats:
    CSV_ROWS: ClassVar[str] = "rows"

    summary: Summary = out("totals")
    device: _xla.DeviceOut = out("peaks used for `bound_by` (see op_profile.md)")
    columns: tuple[str, ...] = out("the row keys in CSV order")
    rows: tuple[Row, ...] = out("one per HLO instruction with device time, by total time")


def _row(
    rank: int, host: str, row: HloOpRow, total_ns: int, cumulative_ns: int, caps: DeviceCaps
) -> Row:
    op = row.op
    return Row(
        rank=rank,
        host=host,
        program_id=op.program_id,
        module=op.module,
        category=op.category,
        hlo_op_name=op.name,
        tf_op_name=op.tf_op_name,
        occurrences=row.occurrences,
        executions=row.executions,
        total_time_us=row.total_ns / 1e3,
        avg_time_us=row.total_ns / 1e3 / max(row.occurrences, 1),
        self_time_percent=100.0 * row.total_ns / total_ns if total_ns else 0.0,
        cumulative_self_time_percent=100.0 * cumulative_ns / total_ns if total_ns else 0.0,
        gflops=row.flops / 1e9,
        flop_rate_gflops=row.flops_per_s / 1e9,
        bytes_accessed=int(row.bytes_accessed),
        library_gflops=row.library_flops / 1e9,
        library_bytes_accessed=int(row.library_bytes),
        memory_bw_gbps=row.bytes_per_s / 1e9,
        operational_intensity=row.intensity,
        bound_by=bound_by(row, caps.ridge_point),
        expression=op.expression,
        source=op.source,
    )


def build(ctx: ToolContext) -> HloStats:
    costs = _xla.host_costs(ctx, hlo_only=True)
    caps = _xla.caps_of(ctx, tuple(h for h, _ in costs))
    ranked = sorted(
        ((host, row) for host, metrics in costs for row in metrics.rows),
        key=lambda hr: (-hr[1].total_ns, hr[0], hr[1].op.program_id, hr[1].op.name),
    )
    total = sum(row.total_ns for _, row in ranked)
    rows, cumulative = [], 0
    for i, (host, row) in enumerate(ranked):
        cumulative += row.total_ns
        rows.append(_row(i + 1, host, row, total, cumulative, caps))
    summary = Summary(
        hosts=tuple(h for h, _ in costs),
        hlo_ops=len(ranked),
        total_time_us=total / 1e3,
        total_gflops=sum(r.flops for _, r in ranked) / 1e9,
        total_bytes_accessed=int(sum(r.bytes_accessed for _, r in ranked)),
        total_library_gflops=sum(r.library_flops for _, r in ranked) / 1e9,
        device_idle_us=sum(m.idle_ns for _, m in costs) / 1e3,
    )
    return HloStats(summary, _xla.device_out(caps), COLUMNS, tuple(rows))


TOOL = ToolSpec(
    name="hlo_stats",
    title="HLO op stats",
    description="Every HLO op that ran: category, expression, framework op, time, FLOPs, bytes.",
    build=build,
    formats=("json", "csv"),
    available=analysis.has_hlo_ops,
    order=62,
)
