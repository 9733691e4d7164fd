"""HLO op stats: one row per HLO instruction that ran on a device, with its category, HLO
expression, framework op, time, FLOPs, bytes, rates and what bounds it. Fields:
docs/tools/hlo_stats.md."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from stepscope.stats.device_caps import DeviceCaps
from stepscope.stats.xla_metrics import HloMetrics, HloOpRow, bound_by
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

COLUMNS = (
    "rank",
    "program_id",
    "module",
    "category",
    "hlo_op_name",
    "tf_op_name",
    "occurrences",
    "executions",
    "total_time_us",
    "avg_time_us",
    "self_time_percent",
    "cumulative_self_time_percent",
    "gflops",
    "flop_rate_gflops",
    "bytes_accessed",
    "library_gflops",
    "library_bytes_accessed",
    "memory_bw_gbps",
    "operational_intensity",
    "bound_by",
    "expression",
    "source",
)


def _row(
    rank: int, row: HloOpRow, total_ns: int, cumulative_ns: int, ridge: float
) -> dict[str, Any]:
    op = row.op
    return {
        "rank": rank,
        "program_id": op.program_id,
        "module": op.module,
        "category": op.category,
        "hlo_op_name": op.name,
        "tf_op_name": op.tf_op_name,
        "occurrences": row.occurrences,
        "executions": row.executions,
        "total_time_us": round(row.total_ns / 1e3, 3),
        "avg_time_us": round(row.total_ns / 1e3 / max(row.occurrences, 1), 3),
        "self_time_percent": round(100.0 * row.total_ns / total_ns, 3) if total_ns else 0.0,
        "cumulative_self_time_percent": round(100.0 * cumulative_ns / total_ns, 3)
        if total_ns
        else 0.0,
        "gflops": round(row.flops / 1e9, 6),
        "flop_rate_gflops": round(row.flops_per_s / 1e9, 3),
        "bytes_accessed": int(row.bytes_accessed),
        "library_gflops": round(row.library_flops / 1e9, 6),
        "library_bytes_accessed": int(row.library_bytes),
        "memory_bw_gbps": round(row.bytes_per_s / 1e9, 3),
        "operational_intensity": round(row.intensity, 3),
        "bound_by": bound_by(row, ridge),
        "expression": op.expression,
        "source": op.source,
    }


@dataclass(frozen=True)
class HloStats:
    metrics: HloMetrics
    caps: DeviceCaps

    def rows_json(self) -> list[dict[str, Any]]:
        total = self.metrics.total_ns
        out, cumulative = [], 0
        for i, row in enumerate(self.metrics.rows):
            cumulative += row.total_ns
            out.append(_row(i + 1, row, total, cumulative, self.caps.ridge_point))
        return out

    def to_json(self) -> dict[str, Any]:
        rows = self.metrics.rows
        return {
            "summary": {
                "hlo_ops": len(rows),
                "total_time_us": round(self.metrics.total_ns / 1e3, 3),
                "total_gflops": round(sum(r.flops for r in rows) / 1e9, 3),
                "total_bytes_accessed": int(sum(r.bytes_accessed for r in rows)),
                "total_library_gflops": round(sum(r.library_flops for r in rows) / 1e9, 3),
                "device_idle_us": round(self.metrics.idle_ns / 1e3, 3),
            },
            "device": self.caps.to_json(),
            "columns": list(COLUMNS),
            "rows": self.rows_json(),
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows_json())
        return out.getvalue()


def build(ctx: ToolContext) -> HloStats:
    host = ctx.hosts[0]
    return HloStats(analysis.hlo_metrics(ctx, host), analysis.device_caps(ctx, host))


TOOL = ToolSpec(
    name="hlo_stats",
    title="HLO op stats",
    description="Every HLO op that ran: category, expression, framework op, time, FLOPs, bytes.",
    build=build,
    formats=("json", "csv"),
    multi_host=False,
    available=analysis.has_hlo_ops,
    order=62,
)
