"""op_stats (TensorFlow's "TensorFlow Stats"): every op on the host and on the devices.

Fields and units: docs/tools/op_stats.md. CSV: one line per row, the JSON row keys as header.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from stepscope.records import record
from stepscope.stats import OpTable
from stepscope.stats.op_metrics import ranked
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolOption, ToolSpec

IDLE = "IDLE"


@record
class OpRow:
    rank: int = out(
        "rank by self time within its side; annotations that hold ops (type `Annotation`: "
        "PyTorch's record_function labels, stepscope.trace spans) after the ops"
    )
    side: str = out("`host` or `device`")
    type: str = out("op type")
    name: str = out("op name")
    occurrences: int = out("times the op ran (kernels of one device op each count)")
    total_time_us: float = out("time including nested ops", "us", 3)
    avg_time_us: float = out("total time per occurrence", "us", 3)
    self_time_us: float = out("time excluding nested ops", "us", 3)
    avg_self_time_us: float = out("self time per occurrence", "us", 3)
    self_time_percent: float = out(
        "share of the side's total self time (idle included when asked)", "%", 3
    )
    cumulative_self_time_percent: float = out("running sum of the above down the side", "%", 3)
    eager_percent: float = out("share of the op's self time that ran eagerly (`is_eager`)", "%", 3)
    flop_rate_gflops: float | None = out(
        "`flops` stat / self time, `null` where the trace has no flops", "GFLOP/s", 3
    )


@record
class PieSlice:
    label: str = out("op name, or op type")
    self_time_us: float = out("self time", "us", 3)
    percent: float = out("share of the side's self time", "%", 3)


@record
class OpStats:
    CSV_ROWS: ClassVar[str] = "rows"

    host: str = out("the host shown, or `ALL_HOSTS`")
    include_idle: bool = out("whether `IDLE` rows are in the table and the percentages")
    host_idle_us: float = out("host time with no op running", "us", 3)
    device_idle_us: float = out("device time with no op running", "us", 3)
    rows: tuple[OpRow, ...] = out("device rows first, then host rows, each side by self time")
    pies: dict[str, tuple[PieSlice, ...]] = out(
        "`host_op`, `host_op_type`, `device_op`, `device_op_type`: slices "
        "`{label, self_time_us, percent}` of self time by op and by op type, largest first",
        "us / %",
        key="pie_charts",
    )


def _rows(table: OpTable, include_idle: bool) -> list[OpRow]:
    names, types = list(table.names), list(table.types)
    occurrences = table.occurrences.tolist()
    total, own = table.total_ns.astype(float), table.self_ns.astype(float)
    eager, flops = table.eager_self_ns.astype(float), table.flops
    if include_idle and table.idle_ns > 0:
        names.append(IDLE)
        types.append(IDLE)
        occurrences.append(0)
        total, own = np.r_[total, table.idle_ns], np.r_[own, table.idle_ns]
        eager, flops = np.r_[eager, 0.0], np.r_[flops, 0.0]
    whole = float(own.sum())
    order = ranked(tuple(types), total, own)  # annotations holding ops after the ops
    rows, cumulative = [], 0.0
    for rank, i in enumerate(order.tolist(), start=1):
        share = 100.0 * own[i] / whole if whole else 0.0
        cumulative += share
        n = occurrences[i]
        rows.append(
            OpRow(
                rank,
                table.side,
                types[i],
                names[i],
                n,
                total[i] / 1e3,
                total[i] / 1e3 / n if n else 0.0,
                own[i] / 1e3,
                own[i] / 1e3 / n if n else 0.0,
                share,
                cumulative,
                100.0 * eager[i] / own[i] if own[i] else 0.0,
                round(flops[i] / own[i], 3) if flops[i] > 0 and own[i] > 0 else None,
            )
        )
    return rows


def _pie(rows: list[OpRow], by_type: bool) -> tuple[PieSlice, ...]:
    sums: dict[str, float] = {}
    for row in rows:
        key = row.type if by_type else row.name
        sums[key] = sums.get(key, 0.0) + row.self_time_us
    whole = sum(sums.values())
    ordered = sorted(sums.items(), key=lambda kv: -kv[1])
    return tuple(PieSlice(k, v, 100.0 * v / whole if whole else 0.0) for k, v in ordered)


def build(ctx: ToolContext) -> OpStats:
    include_idle = ctx.option("include_idle", "false").lower() in ("1", "true", "yes")
    host, device = analysis.host_ops(ctx), analysis.device_ops(ctx)
    host_rows, device_rows = _rows(host, include_idle), _rows(device, include_idle)
    return OpStats(
        host=ctx.host,
        include_idle=include_idle,
        host_idle_us=host.idle_ns / 1e3,
        device_idle_us=device.idle_ns / 1e3,
        rows=tuple(device_rows + host_rows),
        pies={
            "host_op": _pie(host_rows, by_type=False),
            "host_op_type": _pie(host_rows, by_type=True),
            "device_op": _pie(device_rows, by_type=False),
            "device_op_type": _pie(device_rows, by_type=True),
        },
    )


TOOL = ToolSpec(
    name="op_stats",
    title="Op stats",
    description="Per-op occurrences, total and self time on the host and the devices",
    build=build,
    formats=("json", "csv"),
    options=(
        ToolOption(
            "include_idle",
            "add an IDLE row per side (time with no op running)",
            "false",
            ("false", "true"),
        ),
    ),
    order=30,
)
