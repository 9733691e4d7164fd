"""One HLO instruction as the tools show it (`XlaOp`) and its HLO text form.

Made from the program's module (`stepscope.model.hlo`) for the device events that
`stepscope.stats.xla.xla_ops` ties to an instruction: only profiles with HLO import this module.
"""

from __future__ import annotations

from stepscope.model.hlo import HloModule
from stepscope.records import record

TYPE_CHECKING = False  # protobuf (hlo_pb2, hlo_cost) only once a profile carries HLO
if TYPE_CHECKING:
    from stepscope.xspace.proto import hlo_pb2


@record
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
    from stepscope.stats.xla import hlo_cost

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
