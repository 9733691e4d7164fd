"""Device events tied to their HLO instruction: framework op name, category, FLOPs, bytes.

An XLA device event (JAX, TensorFlow with XLA) carries ``program_id`` and ``hlo_op`` stats; the
program's module from the ``/host:metadata`` plane (`stepscope.model.hlo`) gives the
instruction, whose ``metadata.op_name`` is the framework op (``jit(f)/jvp(...)/dot_general``) —
the name XProf shows in op stats and kernel stats, instead of the ``XlaModule:`` placeholder
the events carry in ``tf_op``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.model import Profile
from stepscope.model.hlo import HloModule, hlo_modules

TYPE_CHECKING = False  # protobuf (hlo_pb2, hlo_cost) only once a profile carries HLO
if TYPE_CHECKING:
    from stepscope.xspace.proto import hlo_pb2


@dataclass(frozen=True)
class XlaOp:
    """One HLO instruction of one program, as the tools show it."""

    program_id: int
    module: str
    name: str  # HLO instruction name ("gemm_fusion_dot.3")
    opcode: str
    category: str  # "loop fusion", "custom-call", "convolution"...
    tf_op_name: str  # framework op from the metadata ('' when XLA made the instruction up)
    op_type: str  # last path component of tf_op_name, or the category
    flops: float  # per execution
    bytes_accessed: int  # per execution
    expression: str  # "%name = f32[2,4096]{1,0} fusion(bf16[...] %a, ...), kind=kCustom"
    source: str  # "file.py:12" from the metadata, or ''
    # stepscope's estimate for cuBLAS/cuDNN custom calls, which XLA's cost model (and so
    # `flops`/`bytes_accessed`, XProf's figures) leaves at 0; per execution
    library_flops: float = 0.0
    library_bytes: int = 0


def _shape_text(shape: hlo_pb2.ShapeProto) -> str:
    from stepscope.xspace.proto import hlo_pb2

    if shape.element_type == hlo_pb2.TUPLE:
        return "(" + ", ".join(_shape_text(s) for s in shape.tuple_shapes) + ")"
    dtype = hlo_pb2.PrimitiveType.Name(shape.element_type).lower()
    dims = ",".join(str(d) for d in shape.dimensions)
    layout = ",".join(str(d) for d in shape.layout.minor_to_major)
    return f"{dtype}[{dims}]" + (f"{{{layout}}}" if shape.layout.minor_to_major else "")


def expression(module: HloModule, inst: hlo_pb2.HloInstructionProto) -> str:
    """The instruction in HLO text form (operands with their shapes)."""
    operands = ", ".join(f"{_shape_text(o.shape)} %{o.name}" for o in module.operands(inst))
    extra = ""
    if inst.opcode == "fusion" and inst.fusion_kind:
        extra = f", kind={inst.fusion_kind}"
    elif inst.opcode == "custom-call":
        extra = f', custom_call_target="{inst.custom_call_target}"'
    return f"%{inst.name} = {_shape_text(inst.shape)} {inst.opcode}({operands}){extra}"


def xla_op(module: HloModule, inst: hlo_pb2.HloInstructionProto) -> XlaOp:
    from stepscope.stats import hlo_cost

    op_name = inst.metadata.op_name
    category = hlo_cost.category(inst)
    tail = op_name.rstrip("/").rsplit("/", 1)[-1].split("[", 1)[0] if op_name else ""
    source = ""
    if inst.metadata.source_file:
        source = f"{inst.metadata.source_file}:{inst.metadata.source_line}"
    return XlaOp(
        program_id=module.program_id,
        module=module.name,
        name=inst.name,
        opcode=inst.opcode,
        category=category,
        tf_op_name=op_name,
        op_type=tail or category,
        flops=hlo_cost.flops(module, inst),
        bytes_accessed=hlo_cost.bytes_accessed(module, inst),
        expression=expression(module, inst),
        source=source,
        library_flops=hlo_cost.library_flops(module, inst),
        library_bytes=hlo_cost.library_bytes(module, inst),
    )


@dataclass(frozen=True)
class XlaEvents:
    """Per device event: index into `ops` of its HLO instruction, or -1."""

    op_index: np.ndarray  # int64, one per profile event
    ops: tuple[XlaOp, ...]
    # Per op: string id of the name tools show: the framework op, else the HLO instruction.
    # These strings are added to the profile's table when first needed (XLA names that no
    # event carries, e.g. metadata op names of instructions without a ``name`` stat).
    name_ids: np.ndarray

    # Per op: string id of its framework op, '' when XLA made the instruction up (XProf's
    # kernel stats name those kernels' op '').
    framework_ids: np.ndarray

    def op_name_ids(self, events: np.ndarray, framework_only: bool = False) -> np.ndarray:
        """Per event: string id of its op's display name (with ``framework_only``: its
        framework op, '' for instructions without one), -1 when not an XLA op."""
        index = self.op_index[events]
        if not self.ops:
            return np.full(len(index), -1, dtype=np.int64)
        ids = self.framework_ids if framework_only else self.name_ids
        return np.where(index >= 0, ids[np.maximum(index, 0)], -1)

    def __bool__(self) -> bool:
        return bool(self.ops)


_NO_IDS = np.zeros(0, dtype=np.int64)


def xla_events(profile: Profile) -> XlaEvents:
    """Every event with ``program_id`` + ``hlo_op`` whose instruction the profile's HLO has."""
    return profile.derived("xla_events", lambda: _build(profile))


def _build(profile: Profile) -> XlaEvents:
    out = np.full(profile.n_events, -1, dtype=np.int64)
    modules = hlo_modules(profile)
    if not modules:
        return XlaEvents(out, (), _NO_IDS, _NO_IDS)
    program = profile.stat("program_id")
    hlo_op = profile.stat("hlo_op")
    events = np.flatnonzero(program.present & hlo_op.present)
    if not events.size:
        return XlaEvents(out, (), _NO_IDS, _NO_IDS)
    programs = program.as_int()[events]
    names = hlo_op.string_ids()[events]
    pairs, inverse = np.unique(np.stack([programs, names]), axis=1, return_inverse=True)
    ops: list[XlaOp] = []
    index_of_pair = np.full(pairs.shape[1], -1, dtype=np.int64)
    for k in range(pairs.shape[1]):
        module = modules.get(int(pairs[0, k]))
        if module is None or pairs[1, k] < 0:
            continue
        text = profile.strings[int(pairs[1, k])]
        inst = module.instruction(text) or module.instruction(text.split(",")[-1].strip())
        if inst is None:
            continue
        index_of_pair[k] = len(ops)
        ops.append(xla_op(module, inst))
    out[events] = index_of_pair[inverse.reshape(-1)]
    name_ids = np.array(
        [profile.strings.intern(op.tf_op_name or op.name) for op in ops], dtype=np.int64
    )
    framework_ids = np.array([profile.strings.intern(op.tf_op_name) for op in ops], dtype=np.int64)
    return XlaEvents(out, tuple(ops), name_ids, framework_ids)
