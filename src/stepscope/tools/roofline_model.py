"""Roofline model: every HLO op placed by operational intensity (FLOPs per byte) against the
device's compute roof and memory roof, for the whole run and per step; at ALL_HOSTS every
host's points, each naming its host. Fields: docs/tools/roofline_model.md."""

from __future__ import annotations

from collections.abc import Callable

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.gpu.device_caps import DeviceCaps
from stepscope.stats.xla.xla_metrics import HLO_SOURCE, HloMetrics, HloOpRow, bound_by, hlo_metrics
from stepscope.tools import _analysis as analysis
from stepscope.tools import _xla
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

MAX_STEPS = 50  # per-step rows for the first steps; the whole run is always there
ROUNDING = 1e-3  # rates within this share of the roof are at the roof


@record
class Point:
    step: str = out("`Total` (the whole run) or the step number")
    host: str = out("the host that ran it")
    operation: str = out("`Program` (all ops, idle gaps in its time) or the HLO op")
    category: str = out("the HLO category, `Program` for the program point")
    tf_op_name: str = out("the framework op, '' for the program point")
    occurrences: int = out("device events")
    time_us: float = out("time", "us", 3)
    gflops: float = out("FLOPs", "GFLOP", 6)
    bytes_accessed: int = out("bytes", "bytes")
    flop_rate_gflops: float = out("achieved FLOP rate", "GFLOP/s", 3)
    memory_bw_gbps: float = out("achieved bandwidth", "GB/s", 3)
    operational_intensity: float = out("FLOPs per byte", "FLOP/byte", 4)
    attainable_gflops: float = out("the roof at that intensity", "GFLOP/s", 3)
    roofline_efficiency_percent: float | None = out(
        "achieved / attainable, `null` without peaks", "%", 3
    )
    bound_by: str = out("`Compute`, `Memory` or `Unknown`")
    above_roof: bool = out(
        "the rate is above the roof by more than 0.1%: data served from cache, or the peak "
        "is understated"
    )


@record
class RooflineModel:
    device: _xla.DeviceOut = out("peaks, ridge point, `source` (see op_profile.md)")
    cost_source: str = out("where FLOPs and bytes come from (see op_profile.md)")
    hosts: tuple[str, ...] = out("the hosts whose points are shown")
    steps: tuple[str, ...] = out("`Total`, then step numbers")
    points_above_roof: int = out("points with `above_roof`")
    points: tuple[Point, ...] = out("per host and step: the program, then each op by time")


def _attainable(intensity: float, caps: DeviceCaps) -> float:
    """The roof at this intensity: min(peak FLOP/s, intensity x peak bandwidth)."""
    if caps.peak_flops_per_s <= 0 or caps.peak_bytes_per_s <= 0:
        return 0.0
    return min(caps.peak_flops_per_s, intensity * caps.peak_bytes_per_s)


def _point(
    step: str,
    host: str,
    rows: list[HloOpRow],
    caps: DeviceCaps,
    idle_ns: int = 0,
    program: bool = False,
) -> Point:
    time_ns = sum(r.total_ns for r in rows) + idle_ns
    flops = sum(r.flops for r in rows)
    moved = sum(r.bytes_accessed for r in rows)
    rate = flops / time_ns * 1e9 if time_ns else 0.0
    intensity = flops / moved if moved else 0.0
    roof = _attainable(intensity, caps)
    merged = HloOpRow(rows[0].op, 0, 0, time_ns, flops, moved)
    op = rows[0].op
    return Point(
        step=step,
        host=host,
        operation="Program" if program else op.name,
        category="Program" if program else op.category,
        tf_op_name="" if program else op.tf_op_name,
        occurrences=sum(r.occurrences for r in rows),
        time_us=time_ns / 1e3,
        gflops=flops / 1e9,
        bytes_accessed=int(moved),
        flop_rate_gflops=rate / 1e9,
        memory_bw_gbps=moved / time_ns if time_ns else 0.0,
        operational_intensity=intensity,
        attainable_gflops=roof / 1e9,
        roofline_efficiency_percent=100.0 * rate / roof if roof else None,
        bound_by=bound_by(merged, caps.ridge_point),
        above_roof=bool(roof) and rate > roof * (1 + ROUNDING),
    )


def _points(host: str, step: str, metrics: HloMetrics, caps: DeviceCaps) -> list[Point]:
    rows = [r for r in metrics.rows if r.total_ns]
    if not rows:
        return []
    # The program's rate over its run time, the device's idle gaps included.
    points = [_point(step, host, rows, caps, metrics.idle_ns, program=True)]
    points.extend(_point(step, host, [row], caps) for row in rows)
    return points


def _in_window(lo: int, hi: int) -> Callable[[Profile], HloMetrics]:
    return lambda profile: hlo_metrics(profile, (lo, hi))


def _steps(ctx: ToolContext, host: str, total: HloMetrics) -> list[tuple[str, HloMetrics]]:
    steps: list[tuple[str, HloMetrics]] = [("Total", total)]
    if total.source != HLO_SOURCE:  # PyTorch estimates are for the whole run
        return steps
    db = analysis.step_db(ctx, host)
    for i in range(min(db.n_steps, MAX_STEPS)):
        lo = int(db.start_ns[i])
        hi = lo + int(db.dur_ns[i])
        metrics = ctx.intermediate(host, analysis.HLO_METRICS.at(lo, hi), _in_window(lo, hi))
        steps.append((str(int(db.step_num[i])), metrics))
    return steps


def build(ctx: ToolContext) -> RooflineModel:
    costs = _xla.host_costs(ctx)
    hosts = tuple(h for h, _ in costs)
    caps = _xla.caps_of(ctx, hosts)
    points: list[Point] = []
    names: list[str] = []
    for host, total in costs:
        for step, metrics in _steps(ctx, host, total):
            points.extend(_points(host, step, metrics, caps))
            if step not in names:
                names.append(step)
    return RooflineModel(
        device=_xla.device_out(caps),
        cost_source=_xla.cost_source(costs),
        hosts=hosts,
        steps=tuple(names),
        points_above_roof=sum(1 for p in points if p.above_roof),
        points=tuple(points),
    )


TOOL = ToolSpec(
    name="roofline_model",
    title="Roofline model",
    description="Each HLO op by FLOPs per byte against the device's compute and memory roofs.",
    build=build,
    options=(analysis.STEP_SOURCE,),
    available=analysis.has_op_costs,
    order=63,
)
