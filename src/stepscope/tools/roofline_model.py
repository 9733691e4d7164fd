"""Roofline model: every HLO op placed by operational intensity (FLOPs per byte) against the
device's compute roof and memory roof, for the whole run and per step. Fields:
docs/tools/roofline_model.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepscope.model import Profile
from stepscope.stats.device_caps import DeviceCaps
from stepscope.stats.xla_metrics import HLO_SOURCE, HloMetrics, HloOpRow, bound_by, hlo_metrics
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

MAX_STEPS = 50  # per-step rows for the first steps; the whole run is always there
ROUNDING = 1e-3  # rates within this share of the roof are at the roof


def _attainable(intensity: float, caps: DeviceCaps) -> float:
    """The roof at this intensity: min(peak FLOP/s, intensity x peak bandwidth)."""
    if caps.peak_flops_per_s <= 0 or caps.peak_bytes_per_s <= 0:
        return 0.0
    return min(caps.peak_flops_per_s, intensity * caps.peak_bytes_per_s)


def _point(
    step: str, name: str, category: str, rows: list[HloOpRow], caps: DeviceCaps, idle_ns: int = 0
) -> dict[str, Any]:
    time_ns = sum(r.total_ns for r in rows) + idle_ns
    flops = sum(r.flops for r in rows)
    moved = sum(r.bytes_accessed for r in rows)
    rate = flops / time_ns * 1e9 if time_ns else 0.0
    intensity = flops / moved if moved else 0.0
    roof = _attainable(intensity, caps)
    merged = HloOpRow(rows[0].op, 0, 0, time_ns, flops, moved) if rows else None
    return {
        "step": step,
        "operation": name,
        "category": category,
        "occurrences": sum(r.occurrences for r in rows),
        "time_us": round(time_ns / 1e3, 3),
        "gflops": round(flops / 1e9, 6),
        "bytes_accessed": int(moved),
        "flop_rate_gflops": round(rate / 1e9, 3),
        "memory_bw_gbps": round(moved / time_ns, 3) if time_ns else 0.0,
        "operational_intensity": round(intensity, 4),
        "attainable_gflops": round(roof / 1e9, 3),
        "roofline_efficiency_percent": round(100.0 * rate / roof, 3) if roof else None,
        "bound_by": bound_by(merged, caps.ridge_point) if merged else "Unknown",
        # Above the roof: more bytes per second than the device's memory can move, so the
        # data came from cache, or the peak is understated.
        "above_roof": bool(roof) and rate > roof * (1 + ROUNDING),
    }


@dataclass(frozen=True)
class RooflineModel:
    caps: DeviceCaps
    steps: tuple[tuple[str, HloMetrics], ...]  # ("Total", whole run), then ("<n>", step n)

    def to_json(self) -> dict[str, Any]:
        points = []
        for step, metrics in self.steps:
            rows = [r for r in metrics.rows if r.total_ns]
            if not rows:
                continue
            # The program's rate over its run time, the device's idle gaps included.
            points.append(_point(step, "Program", "Program", rows, self.caps, metrics.idle_ns))
            for row in rows:
                point = _point(step, row.op.name, row.op.category, [row], self.caps)
                point["tf_op_name"] = row.op.tf_op_name
                points.append(point)
        return {
            "device": self.caps.to_json(),
            "cost_source": self.steps[0][1].source if self.steps else "",
            "steps": [s for s, _ in self.steps],
            "points_above_roof": sum(1 for p in points if p["above_roof"]),
            "points": points,
        }


def _in_window(lo: int, hi: int) -> Callable[[Profile], HloMetrics]:
    return lambda profile: hlo_metrics(profile, (lo, hi))


def build(ctx: ToolContext) -> RooflineModel:
    host = ctx.hosts[0]
    caps = analysis.device_caps(ctx, host)
    total = analysis.op_costs(ctx, host)
    steps: list[tuple[str, HloMetrics]] = [("Total", total)]
    db = analysis.step_db(ctx, host)
    # Per step only from the HLO; PyTorch estimates are for the whole run.
    per_step = min(db.n_steps, MAX_STEPS) if total.source == HLO_SOURCE else 0
    for i in range(per_step):
        lo = int(db.start_ns[i])
        hi = lo + int(db.dur_ns[i])
        metrics = ctx.intermediate(host, f"xla.hlo_metrics:{lo}:{hi}", _in_window(lo, hi))
        steps.append((str(int(db.step_num[i])), metrics))
    return RooflineModel(caps, tuple(steps))


TOOL = ToolSpec(
    name="roofline_model",
    title="Roofline model",
    description="Each HLO op by FLOPs per byte against the device's compute and memory roofs.",
    build=build,
    multi_host=False,
    options=(analysis.STEP_SOURCE,),
    available=analysis.has_op_costs,
    order=63,
)
