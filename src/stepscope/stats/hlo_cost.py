"""Cost of one HLO instruction from its shapes: FLOPs and bytes accessed.

The model follows XLA's cost analysis where it matters for time: a dot is 2*M*N*K FLOPs, a
convolution 2 * output elements * (kernel elements per output feature); elementwise ops one
FLOP per output element, a reduce one per input element, data movement (copy, transpose,
bitcast, slicing, broadcast...) none. A fusion costs the sum of its fused instructions; a
cuBLAS/cuDNN custom call is costed as the dot or convolution it runs (XProf leaves those at 0:
see docs/decisions.md). Bytes accessed = the bytes of the operands read plus the output written,
the memory traffic of a kernel that keeps nothing between launches.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from stepscope.model.hlo import HloModule
from stepscope.xspace.proto import hlo_pb2

_P = hlo_pb2.PrimitiveType
_BITS = {
    _P.PRED: 8,
    _P.S1: 1,
    _P.S2: 2,
    _P.S4: 4,
    _P.S8: 8,
    _P.S16: 16,
    _P.S32: 32,
    _P.S64: 64,
    _P.U1: 1,
    _P.U2: 2,
    _P.U4: 4,
    _P.U8: 8,
    _P.U16: 16,
    _P.U32: 32,
    _P.U64: 64,
    _P.F16: 16,
    _P.BF16: 16,
    _P.F32: 32,
    _P.F64: 64,
    _P.F8E5M2: 8,
    _P.F8E4M3: 8,
    _P.F8E4M3FN: 8,
    _P.F8E4M3B11FNUZ: 8,
    _P.F8E3M4: 8,
    _P.F8E5M2FNUZ: 8,
    _P.F8E4M3FNUZ: 8,
    _P.F4E2M1FN: 4,
    _P.F8E8M0FNU: 8,
    _P.C64: 64,
    _P.C128: 128,
}

# Opcodes that only move or reinterpret data, or do no arithmetic.
_NO_FLOPS = frozenset(
    {
        "parameter",
        "constant",
        "bitcast",
        "reshape",
        "transpose",
        "copy",
        "copy-start",
        "copy-done",
        "broadcast",
        "slice",
        "dynamic-slice",
        "dynamic-update-slice",
        "concatenate",
        "pad",
        "gather",
        "scatter",
        "tuple",
        "get-tuple-element",
        "iota",
        "reverse",
        "bitcast-convert",
        "after-all",
        "partition-id",
        "replica-id",
        "rng-get-and-update-state",
        "send",
        "send-done",
        "recv",
        "recv-done",
        "infeed",
        "outfeed",
        "domain",
        "opt-barrier",
        "all-gather",
        "all-gather-start",
        "all-gather-done",
        "collective-permute",
        "collective-permute-start",
        "collective-permute-done",
        "all-to-all",
        "while",
        "conditional",
        "call",
        "async-start",
        "async-done",
        "async-update",
    }
)
_GEMM_CALLS = ("__cublas$gemm", "__cublas$lt$matmul", "__hipblaslt$matmul", "__cublas$lt$matmul$f8")
_CONV_CALLS = ("__cudnn$conv", "__miopen$conv")


def element_count(shape: hlo_pb2.ShapeProto) -> int:
    if shape.element_type == _P.TUPLE:
        return sum(element_count(s) for s in shape.tuple_shapes)
    return math.prod(shape.dimensions)


def shape_bytes(shape: hlo_pb2.ShapeProto) -> int:
    """Bytes of an array (or the sum over a tuple's elements); tokens and opaque are 0."""
    if shape.element_type == _P.TUPLE:
        return sum(shape_bytes(s) for s in shape.tuple_shapes)
    bits = _BITS.get(shape.element_type, 0)
    return (math.prod(shape.dimensions) * bits + 7) // 8


def first_array(shape: hlo_pb2.ShapeProto) -> hlo_pb2.ShapeProto:
    """The shape itself, or a tuple's first element (custom calls return (result, workspace))."""
    while shape.element_type == _P.TUPLE and shape.tuple_shapes:
        shape = shape.tuple_shapes[0]
    return shape


def _dot_flops(
    out: hlo_pb2.ShapeProto, lhs: hlo_pb2.ShapeProto, contracting: Iterable[int]
) -> float:
    k = math.prod(lhs.dimensions[d] for d in contracting if d < len(lhs.dimensions))
    return 2.0 * element_count(out) * k


def _conv_flops(
    out: hlo_pb2.ShapeProto, kernel: hlo_pb2.ShapeProto, output_feature_dim: int
) -> float:
    dims = list(kernel.dimensions)
    if not dims or output_feature_dim >= len(dims) or dims[output_feature_dim] == 0:
        return 0.0
    per_output = math.prod(dims) // dims[output_feature_dim]
    return 2.0 * element_count(out) * per_output


def _custom_call_flops(module: HloModule, inst: hlo_pb2.HloInstructionProto) -> float:
    target = inst.custom_call_target
    operands = module.operands(inst)
    if len(operands) < 2:
        return 0.0
    out = first_array(inst.shape)
    if target.startswith(_GEMM_CALLS):
        try:
            config = json.loads(inst.backend_config or b"{}")
            numbers = config.get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
            contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
        except (ValueError, AttributeError, TypeError):
            return 0.0
        return _dot_flops(out, operands[0].shape, contracting)
    if target.startswith(_CONV_CALLS):
        numbers = inst.convolution_dimension_numbers
        return _conv_flops(out, operands[1].shape, numbers.kernel_output_feature_dimension)
    return 0.0


def flops(module: HloModule, inst: hlo_pb2.HloInstructionProto, _depth: int = 0) -> float:
    """FLOPs of one execution of ``inst`` (fusions: their fused computations)."""
    op = inst.opcode
    if op == "fusion" and _depth < 8:
        return sum(
            flops(module, inner, _depth + 1)
            for comp_id in inst.called_computation_ids
            for inner in module.computations[comp_id].instructions
            if comp_id in module.computations
        )
    if op in _NO_FLOPS or op == "fusion":
        return 0.0
    if op == "dot":
        operands = module.operands(inst)
        if not operands:
            return 0.0
        contracting = inst.dot_dimension_numbers.lhs_contracting_dimensions
        return _dot_flops(inst.shape, operands[0].shape, contracting)
    if op == "convolution":
        operands = module.operands(inst)
        if len(operands) < 2:
            return 0.0
        numbers = inst.convolution_dimension_numbers
        return _conv_flops(inst.shape, operands[1].shape, numbers.kernel_output_feature_dimension)
    if op == "custom-call":
        return _custom_call_flops(module, inst)
    if op in ("reduce", "reduce-window", "select-and-scatter"):
        operands = module.operands(inst)
        half = len(operands) // 2 or 1  # reduce(inputs..., init values...)
        return float(sum(element_count(o.shape) for o in operands[:half]))
    return float(element_count(first_array(inst.shape)))


def bytes_accessed(module: HloModule, inst: hlo_pb2.HloInstructionProto) -> int:
    """Bytes read from the operands plus bytes written to the output."""
    if inst.opcode in ("parameter", "constant", "tuple", "get-tuple-element", "bitcast"):
        return 0
    read = sum(shape_bytes(o.shape) for o in module.operands(inst))
    return read + shape_bytes(inst.shape)


def category(inst: hlo_pb2.HloInstructionProto) -> str:
    """XProf's HLO category: "<kind> fusion" for fusions, else the opcode."""
    if inst.opcode == "fusion":
        kind = inst.fusion_kind[1:].lower() if inst.fusion_kind.startswith("k") else "loop"
        return f"{kind} fusion"
    return inst.opcode
