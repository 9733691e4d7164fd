"""The memory of one XLA program from its buffer assignment: peak, buffers live at the peak,
and the heap size over the program order (the data of memory_viewer).

XLA's buffer assignment (in the HloProto) lists logical buffers (one per value an instruction
defines), the allocations they are packed into, and the heap simulator's trace: ALLOC/FREE of
logical buffers in program order for the temporary allocation. Allocations the trace does not
cover (entry parameters, outputs, constants) live for the whole program: their size is the
floor of the heap ("indefinite" lifetimes). Thread-local allocations (scalars inside loops and
fusions on CPU) are left out, as XProf does.
"""

from __future__ import annotations

from stepscope.model.hlo import HloModule
from stepscope.records import record
from stepscope.stats.xla.hlo_shapes import shape_bytes
from stepscope.xspace.proto import hlo_pb2

_ALLOC = hlo_pb2.HeapSimulatorTrace.Event.ALLOC
_FREE = hlo_pb2.HeapSimulatorTrace.Event.FREE


@record
class Buffer:
    id: int  # logical buffer id
    size_bytes: int
    instruction: str
    shape: str
    tf_op_name: str
    kind: str  # "Parameter", "Output", "Constant", "Temporary"
    opcode: str


@record
class ProgramMemory:
    module: str
    program_id: int
    peak_bytes: int
    peak_position: int  # index into heap_bytes
    indefinite_bytes: int  # parameters, outputs, constants: live throughout
    heap_bytes: tuple[int, ...]  # total after each heap event (first: before any)
    event_instructions: tuple[str, ...]  # the instruction of each heap event ('' first)
    live_at_peak: tuple[Buffer, ...]  # largest first
    buffer_spans: dict[int, tuple[int, int]]  # buffer id -> [first, last) heap positions
    buffers: dict[int, Buffer]


def _shape_at(shape: hlo_pb2.ShapeProto, index: list[int]) -> hlo_pb2.ShapeProto:
    for i in index:
        if shape.element_type != hlo_pb2.TUPLE or i >= len(shape.tuple_shapes):
            break
        shape = shape.tuple_shapes[i]
    return shape


def _shape_text(shape: hlo_pb2.ShapeProto) -> str:
    if shape.element_type == hlo_pb2.TUPLE:
        return "(" + ", ".join(_shape_text(s) for s in shape.tuple_shapes) + ")"
    dtype = hlo_pb2.PrimitiveType.Name(shape.element_type).lower()
    return f"{dtype}[{','.join(str(d) for d in shape.dimensions)}]"


def _kind(allocation: hlo_pb2.BufferAllocationProto | None) -> str:
    if allocation is None:
        return "Temporary"
    if allocation.is_entry_computation_parameter:
        return "Parameter"
    if allocation.maybe_live_out:
        return "Output"
    if allocation.is_constant:
        return "Constant"
    return "Temporary"


def program_memory(module: HloModule) -> ProgramMemory | None:
    """None when the module carries no buffer assignment."""
    assignment = module.proto.buffer_assignment
    if not assignment.logical_buffers:
        return None
    allocation_of: dict[int, hlo_pb2.BufferAllocationProto] = {}
    for allocation in assignment.buffer_allocations:
        for assigned in allocation.assigned:
            allocation_of[assigned.logical_buffer_id] = allocation
    buffers: dict[int, Buffer] = {}
    for logical in assignment.logical_buffers:
        inst = module.by_id.get(logical.defined_at.instruction_id) or module.by_name.get(
            logical.defined_at.instruction_name
        )
        shape = _shape_at(inst.shape, list(logical.defined_at.shape_index)) if inst else None
        buffers[logical.id] = Buffer(
            id=logical.id,
            size_bytes=logical.size or (shape_bytes(shape) if shape is not None else 0),
            instruction=inst.name if inst else logical.defined_at.instruction_name,
            shape=_shape_text(shape) if shape is not None else "",
            tf_op_name=inst.metadata.op_name if inst else "",
            kind=_kind(allocation_of.get(logical.id)),
            opcode=inst.opcode if inst else "",
        )
    traced: set[int] = set()
    trace = max(assignment.heap_simulator_traces, key=lambda t: len(t.events), default=None)
    for t in assignment.heap_simulator_traces:
        traced.update(e.buffer_id for e in t.events)
    # Allocations live for the whole program: one buffer each (its largest), the floor.
    indefinite: list[Buffer] = []
    for allocation in assignment.buffer_allocations:
        ids = [a.logical_buffer_id for a in allocation.assigned]
        if allocation.is_thread_local or not ids or any(i in traced for i in ids):
            continue
        largest = max((buffers[i] for i in ids if i in buffers), key=lambda b: b.size_bytes)
        indefinite.append(
            Buffer(
                largest.id,
                int(allocation.size),
                largest.instruction,
                largest.shape,
                largest.tf_op_name,
                _kind(allocation),
                largest.opcode,
            )
        )
    floor = sum(b.size_bytes for b in indefinite)
    heap = [floor]
    names = [""]
    live: dict[int, int] = {}  # buffer id -> position allocated
    spans: dict[int, tuple[int, int]] = {}
    peak, peak_pos, peak_live = floor, 0, dict(live)
    holders: dict[int, set[int]] = {}  # canonical buffer id -> live buffers sharing its memory
    group_of: dict[int, int] = {}
    for event in trace.events if trace is not None else ():
        size = buffers[event.buffer_id].size_bytes if event.buffer_id in buffers else 0
        position = len(heap)
        delta = 0
        if event.kind == _FREE:
            start = live.pop(event.buffer_id, position)
            spans[event.buffer_id] = (start, position)
            group = group_of.pop(event.buffer_id, event.buffer_id)
            members = holders.get(group, set())
            members.discard(event.buffer_id)
            if not members:  # the last buffer using this memory
                holders.pop(group, None)
                delta = -buffers[group].size_bytes if group in buffers else -size
        else:
            # SHARE_WITH reuses the canonical buffer's memory while that is live; once it
            # was freed, the memory is taken again (as XLA's heap simulator does).
            group = event.buffer_id
            if event.kind != _ALLOC and event.share_with_canonical_id in holders:
                group = event.share_with_canonical_id
            if group not in holders:
                holders[group] = set()
                delta = size
            holders[group].add(event.buffer_id)
            group_of[event.buffer_id] = group
            live[event.buffer_id] = position
        heap.append(heap[-1] + delta)
        names.append(event.instruction_name)
        if heap[-1] > peak:
            peak, peak_pos, peak_live = heap[-1], position, dict(live)
    for buffer_id, start in live.items():
        spans[buffer_id] = (start, len(heap))
    at_peak = [buffers[i] for i in peak_live if i in buffers] + indefinite
    at_peak.sort(key=lambda b: (-b.size_bytes, b.instruction))
    return ProgramMemory(
        module=module.name,
        program_id=module.program_id,
        peak_bytes=peak,
        peak_position=peak_pos,
        indefinite_bytes=floor,
        heap_bytes=tuple(heap),
        event_instructions=tuple(names),
        live_at_peak=tuple(at_peak),
        buffer_spans=spans,
        buffers=buffers,
    )
