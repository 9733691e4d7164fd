"""Op profile: device time as a tree, by program -> HLO category -> op and by category -> op,
with FLOP rate and memory bandwidth against the device's peaks, and the device's idle time
(left out with ``exclude_idle=yes``); at ALL_HOSTS every host's programs. Fields:
docs/tools/op_profile.md."""

from __future__ import annotations

from collections.abc import Iterable

from stepscope.records import record
from stepscope.stats.gpu.device_caps import DeviceCaps
from stepscope.stats.xla.xla_metrics import HloMetrics, HloOpRow
from stepscope.tools import _analysis as analysis
from stepscope.tools import _xla
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolOption, ToolSpec

EXCLUDE_IDLE = ToolOption(
    "exclude_idle", "leave the device's idle time out of the totals", "no", ("no", "yes")
)


@record
class Node:
    name: str = out("program `module(id)` (`host: module(id)` at several hosts), category, op")
    kind: str = out("`root`, `program`, `category`, `op` or `idle`")
    time_us: float = out("device time (the root: ops + idle unless excluded)", "us", 3)
    time_percent: float = out("of the root's time", "%", 3)
    occurrences: int = out("device events")
    gflops: float = out(
        "over all executions, by XLA's cost model (custom calls 0, as XProf)", "GFLOP", 6
    )
    bytes_accessed: int = out("over all executions", "bytes")
    library_gflops: float = out(
        "stepscope's estimate for the node's cuBLAS/cuDNN custom calls (see hlo_stats.md)",
        "GFLOP",
        6,
    )
    flop_rate_gflops: float = out("FLOPs per second of the node's time", "GFLOP/s", 3)
    flop_utilization_percent: float | None = out("FLOP rate / peak; null without a peak", "%", 3)
    memory_bw_gbps: float = out("bytes per second of the node's time", "GB/s", 3)
    memory_bw_utilization_percent: float | None = out(
        "bandwidth / peak; null without a peak", "%", 3
    )
    children: tuple[Node, ...] = out("nodes below, by time; the root's `IDLE` node last")
    host: str = out("the host (programs and ops), '' above", default="")
    category: str = out("op nodes: the HLO category", default="")
    tf_op_name: str = out("op nodes: the framework op", default="")
    program_id: int | None = out("op nodes: the program id", default=None)
    expression: str = out("op nodes: the HLO text", default="")
    source: str = out("op nodes: `file:line`", default="")


@record
class OpProfile:
    device: _xla.DeviceOut = out("peaks (see above)")
    cost_source: str = out(
        "where FLOPs and bytes come from: XLA's HLO, or estimated from PyTorch op types "
        "and input shapes"
    )
    hosts: tuple[str, ...] = out("the hosts whose programs the tree covers")
    exclude_idle: bool = out("the option")
    idle_us: float = out("device idle time, summed over hosts", "us", 3)
    by_program: Node = out("root -> program -> category -> op")
    by_category: Node = out("root -> category -> op")


@record
class _Tree:
    caps: DeviceCaps
    total_ns: int

    def node(
        self, name: str, kind: str, rows: Iterable[HloOpRow], idle_ns: int = 0, **extra: object
    ) -> Node:
        rows = list(rows)
        time_ns = sum(r.total_ns for r in rows) + idle_ns
        flops = sum(r.flops for r in rows)
        moved = sum(r.bytes_accessed for r in rows)
        seconds = time_ns / 1e9
        flop_rate = flops / seconds if seconds else 0.0
        bw = moved / seconds if seconds else 0.0
        peak_f, peak_b = self.caps.peak_flops_per_s, self.caps.peak_bytes_per_s
        return Node(
            name=name,
            kind=kind,
            time_us=time_ns / 1e3,
            time_percent=100.0 * time_ns / self.total_ns if self.total_ns else 0.0,
            occurrences=sum(r.occurrences for r in rows),
            gflops=flops / 1e9,
            bytes_accessed=int(moved),
            library_gflops=sum(r.library_flops for r in rows) / 1e9,
            flop_rate_gflops=flop_rate / 1e9,
            flop_utilization_percent=100.0 * flop_rate / peak_f if peak_f else None,
            memory_bw_gbps=bw / 1e9,
            memory_bw_utilization_percent=100.0 * bw / peak_b if peak_b else None,
            children=(),
            **extra,  # type: ignore[arg-type]
        )

    def op(self, host: str, row: HloOpRow) -> Node:
        return self.node(
            row.op.name,
            "op",
            [row],
            host=host,
            category=row.op.category,
            tf_op_name=row.op.tf_op_name,
            program_id=row.op.program_id,
            expression=row.op.expression,
            source=row.op.source,
        )

    def by_category(self, rows: list[tuple[str, HloOpRow]]) -> tuple[Node, ...]:
        groups: dict[str, list[tuple[str, HloOpRow]]] = {}
        for host, row in rows:
            groups.setdefault(row.op.category, []).append((host, row))
        out_nodes = [
            _with_children(
                self.node(category, "category", [r for _, r in members]),
                [self.op(h, r) for h, r in members],
            )
            for category, members in groups.items()
        ]
        return tuple(sorted(out_nodes, key=lambda n: -n.time_us))


def _with_children(node: Node, children: Iterable[Node]) -> Node:
    return Node(**{**node.__dict__, "children": tuple(children)})


def build(ctx: ToolContext) -> OpProfile:
    costs = _xla.host_costs(ctx)
    hosts = tuple(h for h, _ in costs)
    caps = _xla.caps_of(ctx, hosts)
    exclude_idle = ctx.option("exclude_idle", "no") == "yes"
    return _profile(costs, caps, exclude_idle)


def _profile(
    costs: tuple[tuple[str, HloMetrics], ...], caps: DeviceCaps, exclude_idle: bool
) -> OpProfile:
    rows = [(host, row) for host, metrics in costs for row in metrics.rows]
    all_idle = sum(m.idle_ns for _, m in costs)
    idle = 0 if exclude_idle else all_idle
    tree = _Tree(caps, sum(r.total_ns for _, r in rows) + idle)
    several = len(costs) > 1
    programs: dict[tuple[str, int, str], list[tuple[str, HloOpRow]]] = {}
    for host, row in rows:
        programs.setdefault((host, row.op.program_id, row.op.module), []).append((host, row))
    program_nodes = []
    for (host, program_id, module), members in programs.items():
        name = f"{host}: {module}({program_id})" if several else f"{module}({program_id})"
        node = tree.node(name, "program", [r for _, r in members], host=host)
        program_nodes.append(_with_children(node, tree.by_category(members)))
    program_nodes.sort(key=lambda n: -n.time_us)
    category_nodes = list(tree.by_category(rows))
    if idle:
        program_nodes.append(tree.node("IDLE", "idle", [], idle))
        category_nodes.append(tree.node("IDLE", "idle", [], idle))
    plain = [r for _, r in rows]
    return OpProfile(
        device=_xla.device_out(caps),
        cost_source=_xla.cost_source(costs),
        hosts=tuple(h for h, _ in costs),
        exclude_idle=exclude_idle,
        idle_us=all_idle / 1e3,
        by_program=_with_children(tree.node("all programs", "root", plain, idle), program_nodes),
        by_category=_with_children(
            tree.node("all categories", "root", plain, idle), category_nodes
        ),
    )


TOOL = ToolSpec(
    name="op_profile",
    title="Op profile",
    description="Device time by program, HLO category and op, against the device's peaks.",
    build=build,
    options=(EXCLUDE_IDLE,),
    available=analysis.has_op_costs,
    order=61,
)
