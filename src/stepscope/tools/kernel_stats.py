"""GPU kernel stats: every (kernel, op) pair with launch configuration, TensorCore use and time.

Durations are reported in microseconds (float), like XProf's table; shared memory in bytes.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from stepscope.model import Profile
from stepscope.stats.kernels import (
    KernelDb,
    KernelRow,
    kernel_events,
    merge_kernel_dbs,
)
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

TOP_KERNELS = 10  # slices of the pie chart before "Other"

COLUMNS = (
    "rank",
    "kernel_name",
    "registers_per_thread",
    "shared_memory_bytes",
    "static_shmem_bytes",
    "dynamic_shmem_bytes",
    "block_dim",
    "grid_dim",
    "op_tensor_core_eligible",
    "uses_tensor_core",
    "op_name",
    "occurrences",
    "total_duration_us",
    "avg_duration_us",
    "min_duration_us",
    "max_duration_us",
    "occupancy_pct",
    "launch_configs",
)


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def _row_json(rank: int, row: KernelRow) -> dict[str, Any]:
    d = row.details
    return {
        "rank": rank,
        "kernel_name": row.kernel_name,
        "registers_per_thread": d.registers_per_thread,
        "shared_memory_bytes": d.static_shmem_bytes + d.dynamic_shmem_bytes,
        "static_shmem_bytes": d.static_shmem_bytes,
        "dynamic_shmem_bytes": d.dynamic_shmem_bytes,
        "block_dim": ",".join(map(str, d.block)),
        "grid_dim": ",".join(map(str, d.grid)),
        "op_tensor_core_eligible": row.op_tensor_core_eligible,
        "uses_tensor_core": row.uses_tensor_core,
        "op_name": row.op_name,
        "occurrences": row.occurrences,
        "total_duration_us": _us(row.total_ns),
        "avg_duration_us": _us(row.total_ns / max(1, row.occurrences)),
        "min_duration_us": _us(row.min_ns),
        "max_duration_us": _us(row.max_ns),
        "occupancy_pct": None if row.occupancy_pct is None else round(row.occupancy_pct, 2),
        "launch_configs": row.launch_configs,
    }


@dataclass(frozen=True)
class KernelStats:
    db: KernelDb

    def summary(self) -> dict[str, Any]:
        rows = self.db.rows
        total = sum(r.total_ns for r in rows)
        tc = sum(r.total_ns for r in rows if r.uses_tensor_core)
        eligible = sum(r.total_ns for r in rows if r.op_tensor_core_eligible)
        missed = sum(
            r.total_ns for r in rows if r.op_tensor_core_eligible and not r.uses_tensor_core
        )
        return {
            "kernel_count": self.db.kernel_count,
            "unique_kernel_op_pairs": len(rows) + self.db.truncated_rows,
            "rows_left_out": self.db.truncated_rows,
            "device_count": self.db.device_count,
            "total_kernel_time_us": _us(self.db.total_ns),
            "tensor_core_time_pct": round(100.0 * tc / total, 2) if total else 0.0,
            "eligible_op_time_pct": round(100.0 * eligible / total, 2) if total else 0.0,
            "eligible_without_tensor_core_us": _us(missed),
        }

    def top_kernels(self) -> list[dict[str, Any]]:
        """Total time per kernel name (all its ops), largest first: the pie chart."""
        by_kernel: dict[str, int] = {}
        for row in self.db.rows:
            by_kernel[row.kernel_name] = by_kernel.get(row.kernel_name, 0) + row.total_ns
        total = sum(by_kernel.values()) or 1
        ranked = sorted(by_kernel.items(), key=lambda kv: (-kv[1], kv[0]))
        out = [
            {
                "kernel_name": name,
                "total_duration_us": _us(ns),
                "fraction_pct": round(100.0 * ns / total, 2),
            }
            for name, ns in ranked[:TOP_KERNELS]
        ]
        rest = sum(ns for _, ns in ranked[TOP_KERNELS:])
        if rest:
            out.append(
                {
                    "kernel_name": "Other",
                    "total_duration_us": _us(rest),
                    "fraction_pct": round(100.0 * rest / total, 2),
                }
            )
        return out

    def rows_json(self) -> list[dict[str, Any]]:
        return [_row_json(i + 1, row) for i, row in enumerate(self.db.rows)]

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "devices": list(self.db.devices),
            "top_kernels": self.top_kernels(),
            "columns": list(COLUMNS),
            "rows": self.rows_json(),
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in self.rows_json():
            writer.writerow(row)
        return out.getvalue()


def build(ctx: ToolContext) -> KernelStats:
    return KernelStats(merge_kernel_dbs([analysis.kernel_db(ctx, host) for host in ctx.hosts]))


def _has_kernels(profile: Profile) -> bool:
    return len(kernel_events(profile)) > 0


def available(ctx: ToolContext) -> bool:
    # Cheap: listing tools must not aggregate the kernels.
    return any(ctx.intermediate(h, "kernel_stats.has_kernels", _has_kernels) for h in ctx.hosts)


TOOL = ToolSpec(
    name="kernel_stats",
    title="GPU kernel stats",
    description="Every GPU kernel per op: launch configuration, TensorCore use, time.",
    build=build,
    formats=("json", "csv"),
    available=available,
    order=60,
)
