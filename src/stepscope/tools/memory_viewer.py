"""Memory viewer: an XLA program's buffer assignment: peak memory, the buffers live at the
peak (size, shape, op, kind) and the heap size over the program order. Fields:
docs/tools/memory_viewer.md."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.model.hlo import hlo_modules
from stepscope.records import record
from stepscope.stats.xla.hlo_memory import ProgramMemory, program_memory
from stepscope.tools import _xla
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolOption, ToolSpec

MODULE = ToolOption(
    "module",
    "the program: its name (jit_train_step) or program id; default: the largest peak",
    "",
)


# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
HAS_BUFFER_ASSIGNMENT: Key[bool] = Key("xla.has_buffer_assignment")


def _memories(profile: Profile) -> list[ProgramMemory]:
    out = []
    for module in hlo_modules(profile).values():
        memory = program_memory(module)
        if memory is not None:
            out.append(memory)
    return sorted(out, key=lambda m: (-m.peak_bytes, m.module, m.program_id))


_MIB = 2**20


@record
class ProgramOut:
    module: str = out("program name")
    program_id: int = out("program id")
    peak_mib: float = out("its peak heap size", "MiB", 6)


@record
class HeapPoint:
    position: int = out("index in the program order of heap events (0: the floor)")
    mib: float = out("heap size after the event", "MiB", 6)
    instruction: str = out("the instruction that caused it")


@record
class LiveBuffer:
    buffer_id: int = out("logical buffer id")
    size_mib: float = out("size", "MiB", 6)
    kind: str = out("`Parameter`, `Output`, `Constant` or `Temporary`")
    instruction: str = out("the instruction that defines it")
    opcode: str = out("its opcode")
    shape: str = out("its shape")
    tf_op_name: str = out("its framework op")
    span: tuple[int, int] = out("[first, last) heap positions it is live")


@record
class MemoryViewer:
    programs: tuple[ProgramOut, ...] = out(
        "every program with a buffer assignment, largest peak first"
    )
    module: str = out("the program shown")
    program_id: int | None = out("its id; null when the profile has no buffer assignment")
    peak_mib: float = out("peak heap size", "MiB", 6)
    peak_position: int = out("the peak's index in `heap`")
    indefinite_mib: float = out(
        "parameters, outputs and constants, live throughout (`heap[0]`)", "MiB", 6
    )
    heap: tuple[HeapPoint, ...] = out("heap size over the program order")
    live_at_peak: tuple[LiveBuffer, ...] = out("buffers live at the peak, largest first")


def _view(memories: list[ProgramMemory], m: ProgramMemory) -> MemoryViewer:
    span = len(m.heap_bytes)
    return MemoryViewer(
        programs=tuple(ProgramOut(p.module, p.program_id, p.peak_bytes / _MIB) for p in memories),
        module=m.module,
        program_id=m.program_id,
        peak_mib=m.peak_bytes / _MIB,
        peak_position=m.peak_position,
        indefinite_mib=m.indefinite_bytes / _MIB,
        heap=tuple(
            HeapPoint(i, size / _MIB, name)
            for i, (size, name) in enumerate(zip(m.heap_bytes, m.event_instructions, strict=True))
        ),
        live_at_peak=tuple(
            LiveBuffer(
                buffer_id=b.id,
                size_mib=b.size_bytes / _MIB,
                kind=b.kind,
                instruction=b.instruction,
                opcode=b.opcode,
                shape=b.shape,
                tf_op_name=b.tf_op_name,
                span=m.buffer_spans.get(b.id, (0, span)),
            )
            for b in m.live_at_peak
        ),
    )


_EMPTY = MemoryViewer((), "", None, 0.0, 0, 0.0, (), ())


def build(ctx: ToolContext) -> MemoryViewer:
    memories = _memories(ctx.profiles()[0])
    if not memories:  # listed only where there is one (``available``)
        return _EMPTY
    wanted = ctx.option("module", "")
    chosen = (
        _xla.pick_program([(m.module, m.program_id, m) for m in memories], wanted)
        if wanted
        else memories[0]
    )
    return _view(memories, chosen)


def available(ctx: ToolContext) -> bool:
    return any(
        ctx.intermediate(h, HAS_BUFFER_ASSIGNMENT, lambda p: bool(_memories(p))) for h in ctx.hosts
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
