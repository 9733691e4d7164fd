"""Memory viewer: an XLA program's buffer assignment: peak memory, the buffers live at the
peak (size, shape, op, kind) and the heap size over the program order. Fields:
docs/tools/memory_viewer.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.model import Profile
from stepscope.model.hlo import hlo_modules
from stepscope.stats.hlo_memory import ProgramMemory, program_memory
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolOption, ToolSpec, ToolUsageError

MODULE = ToolOption(
    "module",
    "the program: its name (jit_train_step) or program id; default: the largest peak",
    "",
)


def _memories(profile: Profile) -> list[ProgramMemory]:
    out = []
    for module in hlo_modules(profile).values():
        memory = program_memory(module)
        if memory is not None:
            out.append(memory)
    return sorted(out, key=lambda m: (-m.peak_bytes, m.module, m.program_id))


def _mib(n: float) -> float:
    return round(n / 2**20, 6)


@dataclass(frozen=True)
class MemoryViewer:
    programs: tuple[ProgramMemory, ...]
    selected: ProgramMemory | None  # None: the profile has no buffer assignment

    def to_json(self) -> dict[str, Any]:
        m = self.selected
        if m is None:
            return {
                "programs": [],
                "module": "",
                "program_id": None,
                "peak_mib": 0.0,
                "peak_position": 0,
                "indefinite_mib": 0.0,
                "heap": [],
                "live_at_peak": [],
            }
        return {
            "programs": [
                {"module": p.module, "program_id": p.program_id, "peak_mib": _mib(p.peak_bytes)}
                for p in self.programs
            ],
            "module": m.module,
            "program_id": m.program_id,
            "peak_mib": _mib(m.peak_bytes),
            "peak_position": m.peak_position,
            "indefinite_mib": _mib(m.indefinite_bytes),
            "heap": [
                {"position": i, "mib": _mib(size), "instruction": name}
                for i, (size, name) in enumerate(
                    zip(m.heap_bytes, m.event_instructions, strict=True)
                )
            ],
            "live_at_peak": [
                {
                    "buffer_id": b.id,
                    "size_mib": _mib(b.size_bytes),
                    "kind": b.kind,
                    "instruction": b.instruction,
                    "opcode": b.opcode,
                    "shape": b.shape,
                    "tf_op_name": b.tf_op_name,
                    "span": list(m.buffer_spans.get(b.id, (0, len(m.heap_bytes)))),
                }
                for b in m.live_at_peak
            ],
        }


def build(ctx: ToolContext) -> MemoryViewer:
    memories = _memories(ctx.profiles()[0])
    if not memories:  # listed only where there is one (``available``)
        return MemoryViewer((), None)
    wanted = ctx.option("module", "")
    if not wanted:
        return MemoryViewer(tuple(memories), memories[0])
    for m in memories:
        if wanted in (m.module, str(m.program_id), f"{m.module}({m.program_id})"):
            return MemoryViewer(tuple(memories), m)
    names = ", ".join(sorted({m.module for m in memories}))
    raise ToolUsageError(f"option module={wanted[:60]!r}: no such program; programs: {names}")


def available(ctx: ToolContext) -> bool:
    return any(
        ctx.intermediate(h, "xla.has_buffer_assignment", lambda p: bool(_memories(p)))
        for h in ctx.hosts
    )


TOOL = ToolSpec(
    name="memory_viewer",
    title="Memory viewer",
    description="An XLA program's memory: peak, buffers live at the peak, heap over time.",
    build=build,
    multi_host=False,
    options=(MODULE,),
    available=available,
    order=64,
)
