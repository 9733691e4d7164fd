"""Op profile: device time as a tree, by program -> HLO category -> op and by category -> op,
with FLOP rate and memory bandwidth against the device's peaks, and the device's idle time
(left out with ``exclude_idle=yes``). Fields: docs/tools/op_profile.md."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stepscope.stats.device_caps import DeviceCaps
from stepscope.stats.xla_metrics import HloMetrics, HloOpRow
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolOption, ToolSpec

EXCLUDE_IDLE = ToolOption(
    "exclude_idle", "leave the device's idle time out of the totals", "no", ("no", "yes")
)


@dataclass(frozen=True)
class OpProfile:
    metrics: HloMetrics
    caps: DeviceCaps
    exclude_idle: bool

    def _node(
        self, name: str, kind: str, rows: Iterable[HloOpRow], total_ns: int, idle_ns: int = 0
    ) -> dict[str, Any]:
        rows = list(rows)
        time_ns = sum(r.total_ns for r in rows) + idle_ns
        flops = sum(r.flops for r in rows)
        moved = sum(r.bytes_accessed for r in rows)
        seconds = time_ns / 1e9
        flop_rate = flops / seconds if seconds else 0.0
        bw = moved / seconds if seconds else 0.0
        peak_f, peak_b = self.caps.peak_flops_per_s, self.caps.peak_bytes_per_s
        return {
            "name": name,
            "kind": kind,
            "time_us": round(time_ns / 1e3, 3),
            "time_percent": round(100.0 * time_ns / total_ns, 3) if total_ns else 0.0,
            "occurrences": sum(r.occurrences for r in rows),
            "gflops": round(flops / 1e9, 6),
            "bytes_accessed": int(moved),
            "library_gflops": round(sum(r.library_flops for r in rows) / 1e9, 6),
            "flop_rate_gflops": round(flop_rate / 1e9, 3),
            "flop_utilization_percent": round(100.0 * flop_rate / peak_f, 3) if peak_f else None,
            "memory_bw_gbps": round(bw / 1e9, 3),
            "memory_bw_utilization_percent": round(100.0 * bw / peak_b, 3) if peak_b else None,
            "children": [],
        }

    def _op(self, row: HloOpRow, total_ns: int) -> dict[str, Any]:
        node = self._node(row.op.name, "op", [row], total_ns)
        node.update(
            category=row.op.category,
            tf_op_name=row.op.tf_op_name,
            program_id=row.op.program_id,
            expression=row.op.expression,
            source=row.op.source,
        )
        return node

    def _by_category(self, rows: list[HloOpRow], total_ns: int) -> list[dict[str, Any]]:
        groups: dict[str, list[HloOpRow]] = {}
        for row in rows:
            groups.setdefault(row.op.category, []).append(row)
        out = []
        for category, members in groups.items():
            node = self._node(category, "category", members, total_ns)
            node["children"] = [self._op(r, total_ns) for r in members]
            out.append(node)
        return sorted(out, key=lambda n: -n["time_us"])

    def to_json(self) -> dict[str, Any]:
        rows = list(self.metrics.rows)
        idle = 0 if self.exclude_idle else self.metrics.idle_ns
        total = sum(r.total_ns for r in rows) + idle
        by_program = self._node("all programs", "root", rows, total, idle)
        programs: dict[tuple[int, str], list[HloOpRow]] = {}
        for row in rows:
            programs.setdefault((row.op.program_id, row.op.module), []).append(row)
        for (program_id, module), members in programs.items():
            node = self._node(f"{module}({program_id})", "program", members, total)
            node["children"] = self._by_category(members, total)
            by_program["children"].append(node)
        by_program["children"].sort(key=lambda n: -n["time_us"])
        by_category = self._node("all categories", "root", rows, total, idle)
        by_category["children"] = self._by_category(rows, total)
        if idle:
            for root in (by_program, by_category):
                root["children"].append(self._node("IDLE", "idle", [], total, idle))
        return {
            "device": self.caps.to_json(),
            "cost_source": self.metrics.source,
            "exclude_idle": self.exclude_idle,
            "idle_us": round(self.metrics.idle_ns / 1e3, 3),
            "by_program": by_program,
            "by_category": by_category,
        }


def build(ctx: ToolContext) -> OpProfile:
    host = ctx.hosts[0]
    return OpProfile(
        analysis.op_costs(ctx, host),
        analysis.device_caps(ctx, host),
        ctx.option("exclude_idle", "no") == "yes",
    )


TOOL = ToolSpec(
    name="op_profile",
    title="Op profile",
    description="Device time by program, HLO category and op, against the device's peaks.",
    build=build,
    multi_host=False,
    options=(EXCLUDE_IDLE,),
    available=analysis.has_op_costs,
    order=61,
)
