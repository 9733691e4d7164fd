"""Graph viewer: the HLO graph around one instruction of an XLA program: its operands and
users to a chosen depth, with shapes, categories and framework ops. Fields:
docs/tools/graph_viewer.md."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping

from stepscope.model import Profile
from stepscope.model.hlo import HloModule, hlo_modules
from stepscope.records import record
from stepscope.stats.xla.hlo_cost import category
from stepscope.stats.xla.hlo_memory import program_memory
from stepscope.stats.xla.xla_op import expression
from stepscope.tools import _analysis as analysis
from stepscope.tools import _xla, output
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolEndpoint, ToolOption, ToolSpec, ToolUsageError
from stepscope.xspace.proto import hlo_pb2

MAX_NODES = 200
TOP_OPS = 8  # quick-start choices: the module's instructions with the most device time
MAX_MATCHES = 50  # instruction names a search answers
JSON_TYPE = "application/json"
MODULE = ToolOption(
    "module", "the program: name (jit_train_step) or id; default: the one with most time", ""
)
NODE = ToolOption("node", "the HLO instruction at the center; default: the one with most time", "")
DEPTH = ToolOption(
    "depth", "operand/user hops shown around the node", "2", ("1", "2", "3", "4", "5")
)


# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
HAS_HLO: Key[bool] = Key("xla.has_hlo")


def _users(module: HloModule, computation: int) -> dict[int, list[int]]:
    users: dict[int, list[int]] = {}
    for inst in module.computations[computation].instructions:
        for operand in inst.operand_ids:
            users.setdefault(operand, []).append(inst.id)
    return users


def neighbourhood(
    module: HloModule, center: hlo_pb2.HloInstructionProto, depth: int
) -> tuple[dict[int, int], list[tuple[int, int]], bool]:
    """(instruction id -> signed distance: operands negative, users positive; edges operand ->
    user among them; whether MAX_NODES cut the walk short)."""
    computation = module.computation_of[center.id]
    users = _users(module, computation)
    distance = {center.id: 0}
    cut = False
    for sign, step in (
        (-1, lambda i: list(module.by_id[i].operand_ids)),
        (1, lambda i: users.get(i, [])),
    ):
        queue = deque([(center.id, 0)])
        while queue:
            node, hops = queue.popleft()
            if hops == depth:
                continue
            for nxt in step(node):
                if nxt in distance or nxt not in module.by_id:
                    continue
                if len(distance) >= MAX_NODES:
                    cut = True
                    break
                distance[nxt] = sign * (hops + 1)
                queue.append((nxt, hops + 1))
    edges = [
        (operand, i)
        for i in distance
        for operand in module.by_id[i].operand_ids
        if operand in distance
    ]
    return distance, edges, cut


@record
class GraphNode:
    name: str = out("the HLO instruction")
    opcode: str = out("its opcode")
    category: str = out("its category, as hlo_stats")
    distance: int = out("hops from the center: operands negative, users positive")
    tf_op_name: str = out("its framework op")
    expression: str = out("its HLO text")
    time_us: float | None = out("device time; null when not measured", "us", 3)


@record
class GraphEdge:
    operand: str = out("the operand", key="from")
    user: str = out("the user", key="to")


@record
class ModuleChoice:
    name: str = out("the program's name")
    program_id: int = out("its id")
    time_us: float = out("device time in its instructions (0 on a CPU profile)", "us", 3)
    instructions: int = out("its instructions")


@record
class TopOp:
    name: str = out("the HLO instruction")
    category: str = out("its category, as hlo_stats")
    time_us: float = out("its device time", "us", 3)


@record
class GraphView:
    module: str = out("the program shown ('' when the profile has no HLO)")
    program_id: int | None = out("its id")
    node: str = out("the center instruction")
    depth: int = out("the hops shown")
    truncated: bool = out(f"the walk stopped at {MAX_NODES} nodes")
    nodes: tuple[GraphNode, ...] = out("instructions by distance from the center")
    edges: tuple[GraphEdge, ...] = out("operand -> user among the nodes")
    modules: tuple[ModuleChoice, ...] = out(
        "every program of the profile, most device time first (the module choices)"
    )
    top_ops: tuple[TopOp, ...] = out(
        f"the shown program's {TOP_OPS} instructions with the most device time (quick starts)"
    )


@record
class SearchAnswer:
    module: str = out("the program searched")
    query: str = out("the text searched for (any case)")
    total: int = out("instructions whose name holds it")
    matches: tuple[TopOp, ...] = out(
        f"the first {MAX_MATCHES}: those with device time first (most first), then by name"
    )


def _choices(
    profile: Profile, module: HloModule, time_ns: dict[tuple[int, str], int]
) -> tuple[tuple[ModuleChoice, ...], tuple[TopOp, ...]]:
    """The profile's programs (most device time first) and the shown one's top instructions."""
    per_program: dict[int, int] = {}
    for (program, _), ns in time_ns.items():
        per_program[program] = per_program.get(program, 0) + ns
    modules = sorted(
        hlo_modules(profile).values(),
        key=lambda m: (-per_program.get(m.program_id, 0), m.name, m.program_id),
    )
    choices = tuple(
        ModuleChoice(m.name, m.program_id, per_program.get(m.program_id, 0) / 1e3, len(m.by_id))
        for m in modules
    )
    return choices, tuple(_ranked(module, time_ns, "")[:TOP_OPS])


def _ranked(module: HloModule, time_ns: dict[tuple[int, str], int], query: str) -> list[TopOp]:
    """The module's instructions whose name holds ``query`` (every one for ''), with device
    time first (most first), then by name; '' matches only timed ones."""
    needle = query.lower()
    found = [
        (time_ns.get((module.program_id, inst.name), 0), inst)
        for inst in module.by_id.values()
        if (needle and needle in inst.name.lower())
        or (not needle and (module.program_id, inst.name) in time_ns)
    ]
    found.sort(key=lambda item: (-item[0], item[1].name))
    return [TopOp(inst.name, category(inst), ns / 1e3) for ns, inst in found]


def _view(
    module: HloModule,
    center: hlo_pb2.HloInstructionProto,
    depth: int,
    time_ns: dict[str, int],
    choices: tuple[tuple[ModuleChoice, ...], tuple[TopOp, ...]] = ((), ()),
) -> GraphView:
    distance, edges, cut = neighbourhood(module, center, depth)
    nodes = []
    for inst_id, dist in sorted(distance.items(), key=lambda kv: (kv[1], kv[0])):
        inst = module.by_id[inst_id]
        nodes.append(
            GraphNode(
                name=inst.name,
                opcode=inst.opcode,
                category=category(inst),
                distance=dist,
                tf_op_name=inst.metadata.op_name,
                expression=expression(module, inst),
                time_us=time_ns[inst.name] / 1e3 if inst.name in time_ns else None,
            )
        )
    by_id = module.by_id
    return GraphView(
        module=module.name,
        program_id=module.program_id,
        node=center.name,
        depth=depth,
        truncated=cut,
        nodes=tuple(nodes),
        edges=tuple(GraphEdge(by_id[a].name, by_id[b].name) for a, b in edges),
        modules=choices[0],
        top_ops=choices[1],
    )


def _pick_module(
    profile: Profile, wanted: str, time_ns: dict[tuple[int, str], int]
) -> HloModule | None:
    modules = hlo_modules(profile)
    if wanted:
        return _xla.pick_program([(m.name, m.program_id, m) for m in modules.values()], wanted)
    per_program: dict[int, int] = {}
    for (program, _), ns in time_ns.items():
        per_program[program] = per_program.get(program, 0) + ns

    # Most device time; without device events (CPU), the largest memory peak: the training
    # step rather than the helper programs that seed random numbers.
    def peak(m: HloModule) -> int:
        memory = program_memory(m)
        return memory.peak_bytes if memory is not None else 0

    return max(
        modules.values(),
        key=lambda m: (per_program.get(m.program_id, 0), peak(m), -m.program_id),
        default=None,
    )


def build(ctx: ToolContext) -> GraphView:
    host = ctx.hosts[0]
    rows = analysis.hlo_metrics(ctx, host).rows
    time_ns = {(r.op.program_id, r.op.name): r.total_ns for r in rows}
    module = _pick_module(ctx.profiles()[0], ctx.option("module", ""), time_ns)
    depth = int(ctx.option("depth", "2"))
    if module is None:
        return GraphView("", None, "", depth, False, (), (), (), ())
    mine = {name: ns for (program, name), ns in time_ns.items() if program == module.program_id}
    wanted = ctx.option("node", "")
    if wanted:
        center = module.instruction(wanted)
        if center is None:
            raise ToolUsageError(
                f"option node={wanted[:60]!r}: no instruction of that name in {module.name}"
            )
    elif mine:
        center = module.by_name[max(mine, key=lambda n: (mine[n], n))]
    else:  # no device time (a CPU profile): the entry computation's root
        entry = module.entry
        root = module.by_id.get(entry.root_id) if entry is not None else None
        center = root or next(iter(module.by_id.values()))
    return _view(module, center, depth, mine, _choices(ctx.profiles()[0], module, time_ns))


def search(ctx: ToolContext, params: Mapping[str, str]) -> tuple[bytes, str]:
    """``search?module=&q=``: the shown program's instructions whose name holds ``q``."""
    query = params.get("q", "").strip()
    if not query:
        raise ValueError("parameter 'q' (the text to search for) is empty")
    host = ctx.hosts[0]
    rows = analysis.hlo_metrics(ctx, host).rows
    time_ns = {(r.op.program_id, r.op.name): r.total_ns for r in rows}
    try:
        module = _pick_module(ctx.profiles()[0], params.get("module", ""), time_ns)
    except ToolUsageError as exc:
        raise ValueError(str(exc)) from None
    if module is None:
        raise ValueError("this profile has no HLO programs")
    found = _ranked(module, time_ns, query)
    answer = SearchAnswer(module.name, query, len(found), tuple(found[:MAX_MATCHES]))
    return json.dumps(output.to_json(answer), separators=(",", ":")).encode(), JSON_TYPE


def available(ctx: ToolContext) -> bool:
    return any(ctx.intermediate(h, HAS_HLO, lambda p: bool(hlo_modules(p))) for h in ctx.hosts)


TOOL = ToolSpec(
    name="graph_viewer",
    title="Graph viewer",
    description="The HLO graph around an op: operands and users to a depth, with shapes and time.",
    build=build,
    multi_host=False,
    options=(MODULE, NODE, DEPTH),
    available=available,
    order=65,
    endpoints=(
        ToolEndpoint(
            "search", search, "the shown program's instructions whose name holds q", SearchAnswer
        ),
    ),
)
