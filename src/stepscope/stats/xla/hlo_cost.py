"""Cost of one HLO instruction: FLOPs and bytes accessed, as XLA's GPU cost analysis (the
one XProf runs on GPU profiles) computes them, so op_profile, hlo_stats and roofline_model
show XProf's figures.

FLOPs: a dot is 2*M*N*K, a convolution 2 per multiply-add at valid window positions; an
elementwise op costs its clock cycles per output element (`stepscope.stats.xla.hlo_cycles`: 3
for most, tens to thousands for transcendentals and divides); a reduce applies its
computation (input - output elements) times; a concatenate costs 6 per element. A fusion
sums its fused instructions, each weighted by how many times the fusion evaluates it
(XLA's operand utilization: an elementwise value read by two reductions is computed twice).
Custom calls cost 0 FLOPs and 0 bytes, as in XProf: XLA cannot see into them. stepscope's
own estimate for cuBLAS/cuDNN calls is separate (`library_flops`, see docs/decisions.md).

Bytes accessed: operands read plus output written, with XLA's exceptions: slices read only
what they return, bitcasts and parameters move nothing, a fusion reads each parameter once
(or the fraction its slices use).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from stepscope.model.hlo import HloModule
from stepscope.stats.xla.hlo_cycles import ELEMENTWISE, cycles_per_element
from stepscope.stats.xla.hlo_shapes import element_count, first_array, shape_bytes
from stepscope.xspace.proto import hlo_pb2

Inst = hlo_pb2.HloInstructionProto

# Users through which a fusion's elementwise evaluation passes unchanged (XLA
# IsElementwise() plus tuples): their operands are evaluated once per use of the user.
_PASS_THROUGH = ELEMENTWISE | {"copy", "bitcast-convert", "tuple", "get-tuple-element"}
_NO_BYTES = frozenset({"parameter", "constant", "get-tuple-element", "bitcast", "after-all"})
_POINTER_BYTES = 8  # XLA sizes a tuple as its table of pointers
_WARP = 32
_GEMM_CALLS = ("__cublas$gemm", "__cublas$lt$matmul", "__hipblaslt$matmul")
_CONV_CALLS = ("__cudnn$conv", "__miopen$conv")


def _xla_size(shape: hlo_pb2.ShapeProto) -> int:
    if shape.element_type == hlo_pb2.TUPLE:
        return _POINTER_BYTES * len(shape.tuple_shapes)
    return shape_bytes(shape)


def _dot_flops(
    out: hlo_pb2.ShapeProto, lhs: hlo_pb2.ShapeProto, contracting: Iterable[int]
) -> float:
    k = math.prod(lhs.dimensions[d] for d in contracting if d < len(lhs.dimensions))
    return 2.0 * element_count(out) * k


def _valid_positions(out_size: int, in_size: int, kernel: int, dim: hlo_pb2.WindowDimension) -> int:
    """Kernel x output positions of one spatial dimension that read an input element."""
    stride, dilation = dim.stride or 1, dim.window_dilation or 1
    base = dim.base_dilation or 1
    count = 0
    for k in range(kernel):
        for o in range(out_size):
            index = o * stride - dim.padding_low + k * dilation
            if index % base == 0 and 0 <= index // base < in_size:
                count += 1
    return count


def _conv_flops(inst: Inst, lhs: hlo_pb2.ShapeProto, rhs: hlo_pb2.ShapeProto) -> float:
    out = first_array(inst.shape)
    n = inst.convolution_dimension_numbers
    try:
        in_feature = lhs.dimensions[n.input_feature_dimension]
        out_feature = out.dimensions[n.output_feature_dimension]
        batch = lhs.dimensions[n.input_batch_dimension]
        positions = 1
        for i, dim in enumerate(inst.window.dimensions):
            positions *= _valid_positions(
                out.dimensions[n.output_spatial_dimensions[i]],
                lhs.dimensions[n.input_spatial_dimensions[i]],
                rhs.dimensions[n.kernel_spatial_dimensions[i]],
                dim,
            )
    except IndexError:
        return 0.0
    groups, batch_groups = inst.feature_group_count or 1, inst.batch_group_count or 1
    return 2.0 * (in_feature // groups) * out_feature * (batch // batch_groups) * positions


def _computation_flops(module: HloModule, comp_id: int) -> float:
    comp = module.computations.get(comp_id)
    return sum(_flops(module, i) for i in comp.instructions) if comp else 0.0


def _called(module: HloModule, inst: Inst, k: int = 0) -> float:
    ids = inst.called_computation_ids
    return _computation_flops(module, ids[k]) if len(ids) > k else 0.0


def _reduce_window_count(inst: Inst, operand: hlo_pb2.ShapeProto) -> int:
    dims = inst.window.dimensions
    window = math.prod(d.size for d in dims)
    out = element_count(first_array(inst.shape))
    count = (window - 1) * out
    # XLA counts a padded one-dimension window that spans the whole dimension (a reduce
    # broadcast back) as one reduction per output row.
    reduced = [d for d in dims if d.size != 1]
    padded = [d for d in dims if d.padding_low or d.padding_high]
    if len(reduced) == 1 == len(padded) and inst.shape.element_type != hlo_pb2.TUPLE:
        d = reduced[0]
        axis = list(dims).index(d)
        if d.padding_low == d.padding_high == inst.shape.dimensions[axis] - 1 > 0 and (
            d.size == 2 * d.padding_low + 1
        ):
            span = inst.shape.dimensions[axis]
            count = out // span + span - 1
    return count


def _flops(module: HloModule, inst: Inst) -> float:
    """XLA GPU cost analysis FLOPs of one execution of ``inst``."""
    op = inst.opcode
    if op in ELEMENTWISE:
        cycles = cycles_per_element(op, first_array(inst.shape).element_type)
        return float(cycles * element_count(inst.shape))
    operands = module.operands(inst)
    if op == "fusion":
        return _fusion(module, inst)[0]
    if op == "dot" and operands:
        return _dot_flops(
            inst.shape, operands[0].shape, inst.dot_dimension_numbers.lhs_contracting_dimensions
        )
    if op == "convolution" and len(operands) >= 2:
        return _conv_flops(inst, operands[0].shape, operands[1].shape)
    if op == "concatenate":
        n = element_count(inst.shape)
        dim = inst.dimensions[0] if inst.dimensions else 0
        if dim and any(o.shape.dimensions[dim] % _WARP for o in operands):
            return 400.0 * n  # XLA's penalty for warps that straddle two operands
        return 6.0 * n
    if op == "reduce" and operands:
        count = element_count(operands[0].shape) - element_count(first_array(inst.shape))
        return count * _called(module, inst)
    if op == "reduce-window" and operands:
        return _reduce_window_count(inst, operands[0].shape) * _called(module, inst)
    if op == "select-and-scatter" and len(operands) >= 2:
        source = element_count(operands[1].shape)
        window = math.prod(d.size for d in inst.window.dimensions)
        return source * (window - 1) * _called(module, inst, 0) + source * _called(module, inst, 1)
    if op == "map":
        return element_count(inst.shape) * _called(module, inst)
    if op == "scatter" and len(operands) >= 3:
        return element_count(operands[-1].shape) * _called(module, inst)
    if op == "sort" and operands:
        n = element_count(operands[0].shape)
        return float(n * max(n - 1, 0).bit_length())
    if op in ("all-reduce", "all-reduce-start") and inst.called_computation_ids:
        comp = module.computations.get(inst.called_computation_ids[0])
        root = module.by_id.get(comp.root_id) if comp else None
        if root is not None:
            return float(
                cycles_per_element(root.opcode, first_array(inst.shape).element_type)
                * element_count(inst.shape)
            )
    return 0.0


def _operand_utilization(inst: Inst, k: int, operands: list[Inst]) -> float:
    """Fraction of operand ``k`` that one evaluation of ``inst`` reads (XLA's handlers)."""
    op, operand = inst.opcode, operands[k]
    n = element_count(operand.shape)
    if not n:
        return 0.0
    if op == "slice" or (op == "dynamic-slice" and k == 0):
        return element_count(inst.shape) / n
    if op == "dynamic-update-slice" and k == 0 and len(operands) > 1:
        return (n - element_count(operands[1].shape)) / n
    if op == "concatenate" and inst.dimensions and inst.dimensions[0]:
        size = operand.shape.dimensions[inst.dimensions[0]]
        return -(-size // _WARP) * _WARP / size if size else 1.0
    return 1.0


def _post_order(module: HloModule, comp: hlo_pb2.HloComputationProto) -> list[Inst]:
    """Instructions of ``comp``, each after all its operands."""
    seen: set[int] = set()
    order: list[Inst] = []
    for start in comp.instructions:
        stack = [(start, False)]
        while stack:
            inst, done = stack.pop()
            if done:
                order.append(inst)
                continue
            if inst.id in seen:
                continue
            seen.add(inst.id)
            stack.append((inst, True))
            stack.extend((o, False) for o in module.operands(inst) if o.id not in seen)
    return order


def _fusion(module: HloModule, fusion: Inst) -> tuple[float, dict[int, float]]:
    """(FLOPs, utilization per fused instruction id): XLA's GPU fusion analysis, where an
    instruction counts once per evaluation its non-elementwise users ask of it."""
    if not fusion.called_computation_ids:
        return 0.0, {}
    comp = module.computations.get(fusion.called_computation_ids[0])
    if comp is None:
        return 0.0, {}
    roots: dict[int, set[int]] = {comp.root_id: {comp.root_id}}
    root_use: dict[int, float] = {comp.root_id: 1.0}
    use: dict[int, float] = {}
    total = 0.0
    for inst in reversed(_post_order(module, comp)):
        u = sum(root_use.get(r, 0.0) for r in roots.get(inst.id, ()))
        use[inst.id] = u
        if u:
            total += u * _flops(module, inst)
        operands = module.operands(inst)
        for k, operand in enumerate(operands):
            mine = roots.setdefault(operand.id, set())
            if inst.opcode in _PASS_THROUGH:
                mine |= roots.get(inst.id, set())
                continue
            mine.add(operand.id)
            n = element_count(operand.shape)
            part = u * _operand_utilization(inst, k, operands)
            root_use[operand.id] = root_use.get(operand.id, 0.0) + (
                math.ceil(part * n) / n if n else 0.0
            )
    return total, use


def _fusion_bytes(module: HloModule, fusion: Inst) -> int:
    comp = module.computations.get(fusion.called_computation_ids[0])
    if comp is None:
        return 0
    _, use = _fusion(module, fusion)
    root = module.by_id.get(comp.root_id)
    outputs = module.operands(root) if root is not None and root.opcode == "tuple" else [root]
    written = 0
    for out in outputs:
        if out is None:
            continue
        in_place = out.opcode == "dynamic-update-slice" and len(out.operand_ids) > 1
        written += (
            shape_bytes(module.operands(out)[1].shape) if in_place else shape_bytes(out.shape)
        )
    read = 0.0
    for inst in comp.instructions:
        if inst.opcode == "parameter":
            read += shape_bytes(inst.shape) * min(use.get(inst.id, 0.0), 1.0)
    return int(written + read)


def bytes_accessed(module: HloModule, inst: Inst) -> int:
    """Bytes one execution reads and writes, by XLA's cost analysis (0 for custom calls)."""
    op = inst.opcode
    if op in _NO_BYTES or op == "custom-call":
        return 0
    if op == "fusion":
        return _fusion_bytes(module, inst)
    operands = module.operands(inst)
    if op == "slice":
        return 2 * _xla_size(inst.shape)
    if op == "dynamic-slice" and len(operands) > 1:
        return 2 * _xla_size(inst.shape) + _xla_size(operands[1].shape)
    if op == "dynamic-update-slice" and len(operands) > 2:
        return 2 * _xla_size(operands[1].shape) + _xla_size(operands[2].shape)
    if op == "tuple":
        return _xla_size(inst.shape)
    return _xla_size(inst.shape) + sum(_xla_size(o.shape) for o in operands)


def flops(module: HloModule, inst: Inst) -> float:
    """FLOPs of one execution of ``inst`` by XLA's GPU cost model (0 for custom calls)."""
    return _flops(module, inst)


def library_flops(module: HloModule, inst: Inst) -> float:
    """stepscope's estimate for a cuBLAS/cuDNN custom call: the FLOPs of the dot or
    convolution it runs (XLA's cost model and XProf count 0); 0 for anything else."""
    if inst.opcode != "custom-call":
        return 0.0
    operands = module.operands(inst)
    if len(operands) < 2:
        return 0.0
    target = inst.custom_call_target
    if target.startswith(_GEMM_CALLS):
        try:
            config = json.loads(inst.backend_config or b"{}")
            numbers = config.get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
            contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
        except (ValueError, AttributeError, TypeError):
            return 0.0
        return _dot_flops(first_array(inst.shape), operands[0].shape, contracting)
    if target.startswith(_CONV_CALLS):
        return _conv_flops(inst, operands[0].shape, operands[1].shape)
    return 0.0


def library_bytes(module: HloModule, inst: Inst) -> int:
    """Bytes a costed cuBLAS/cuDNN call reads and writes (its result, not its workspace)."""
    if not library_flops(module, inst):
        return 0
    read = sum(shape_bytes(o.shape) for o in module.operands(inst))
    return read + shape_bytes(first_array(inst.shape))


def category(inst: Inst) -> str:
    """XProf's HLO category: "<kind> fusion" for fusions, else the opcode."""
    if inst.opcode == "fusion":
        kind = inst.fusion_kind[1:].lower() if inst.fusion_kind.startswith("k") else "loop"
        return f"{kind} fusion"
    return inst.opcode
