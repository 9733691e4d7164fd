"""XLA's GPU cost model on small hand-built HLO: elementwise cycles, reduce counts, fusion
utilization, slices, concatenates and custom calls (XProf's figures for the same rules are
checked on the JAX GPU fixture in tests/tools/test_xla_tools.py)."""

from __future__ import annotations

from stepscope.model.hlo import HloModule, module_from_proto
from stepscope.stats.xla import hlo_cost
from stepscope.xspace.proto import hlo_pb2

F32, BF16, S32 = hlo_pb2.F32, hlo_pb2.BF16, hlo_pb2.S32


class _Hlo:
    """A module with one entry computation; `add` appends instructions to a computation."""

    def __init__(self) -> None:
        self.proto = hlo_pb2.HloProto()
        self.next_id = 1
        self.comps: dict[str, hlo_pb2.HloComputationProto] = {}

    def comp(self, name: str) -> hlo_pb2.HloComputationProto:
        if name not in self.comps:
            comp = self.proto.hlo_module.computations.add(name=name, id=len(self.comps) + 100)
            self.comps[name] = comp
        return self.comps[name]

    def add(
        self,
        comp: str,
        name: str,
        opcode: str,
        dtype: int,
        dims: list[int],
        operands: tuple[hlo_pb2.HloInstructionProto, ...] = (),
        calls: tuple[str, ...] = (),
        root: bool = False,
    ) -> hlo_pb2.HloInstructionProto:
        c = self.comp(comp)
        inst = c.instructions.add(name=name, opcode=opcode, id=self.next_id)
        self.next_id += 1
        inst.shape.element_type = dtype
        inst.shape.dimensions.extend(dims)
        inst.operand_ids.extend(o.id for o in operands)
        inst.called_computation_ids.extend(self.comp(n).id for n in calls)
        if root:
            c.root_id = inst.id
        return inst

    def module(self) -> HloModule:
        return module_from_proto(1, self.proto)

    def scalar_add(self) -> str:
        a = self.add("sum", "a", "parameter", F32, [])
        b = self.add("sum", "b", "parameter", F32, [])
        self.add("sum", "s", "add", F32, [], (a, b), root=True)
        return "sum"


def test_elementwise_ops_cost_their_cycles_per_element() -> None:
    hlo = _Hlo()
    x = hlo.add("main", "x", "parameter", F32, [1000])
    add = hlo.add("main", "add", "add", F32, [1000], (x, x))
    exp = hlo.add("main", "exp", "exponential", F32, [1000], (x,))
    div = hlo.add("main", "div", "divide", hlo_pb2.F64, [10], (x, x))
    module = hlo.module()
    assert hlo_cost.flops(module, add) == 3 * 1000  # not in the profile: 3 cycles
    assert hlo_cost.flops(module, exp) == 86 * 1000  # f32 exp: 86 cycles on the default GPU
    assert hlo_cost.flops(module, div) == 2016 * 10
    assert hlo_cost.bytes_accessed(module, add) == 3 * 4000


def test_reduce_applies_its_computation_input_minus_output_times() -> None:
    hlo = _Hlo()
    total = hlo.scalar_add()
    x = hlo.add("main", "x", "parameter", F32, [64, 128])
    zero = hlo.add("main", "zero", "constant", F32, [])
    reduce = hlo.add("main", "r", "reduce", F32, [64], (x, zero), calls=(total,))
    assert hlo_cost.flops(hlo.module(), reduce) == (64 * 128 - 64) * 3


def test_fusion_counts_an_elementwise_value_once_per_reduction_that_reads_it() -> None:
    hlo = _Hlo()
    total = hlo.scalar_add()
    p = hlo.add("fused", "p", "parameter", F32, [256, 16])
    e = hlo.add("fused", "e", "exponential", F32, [256, 16], (p,))
    zero = hlo.add("fused", "zero", "constant", F32, [])
    r1 = hlo.add("fused", "r1", "reduce", F32, [256], (e, zero), calls=(total,))
    r2 = hlo.add("fused", "r2", "reduce", F32, [256], (e, zero), calls=(total,))
    out = hlo.add("fused", "out", "add", F32, [256], (r1, r2), root=True)
    x = hlo.add("main", "x", "parameter", F32, [256, 16])
    fusion = hlo.add("main", "f", "fusion", F32, [256], (x,), calls=("fused",))
    fusion.fusion_kind = "kInput"
    module = hlo.module()
    reduces = 2 * (256 * 16 - 256) * 3
    exps = 2 * 256 * 16 * 86  # evaluated for each reduce
    assert hlo_cost.flops(module, fusion) == 256 * 3 + reduces + exps
    # the parameter is read once although two reductions use it
    assert hlo_cost.bytes_accessed(module, fusion) == 256 * 16 * 4 + 256 * 4
    assert out.opcode == "add"


def test_a_fused_slice_reads_only_what_it_returns() -> None:
    hlo = _Hlo()
    p = hlo.add("fused", "p", "parameter", F32, [1000])
    s = hlo.add("fused", "s", "slice", F32, [100], (p,))
    hlo.add("fused", "neg", "negate", F32, [100], (s,), root=True)
    x = hlo.add("main", "x", "parameter", F32, [1000])
    fusion = hlo.add("main", "f", "fusion", F32, [100], (x,), calls=("fused",))
    module = hlo.module()
    assert hlo_cost.bytes_accessed(module, fusion) == 100 * 4 + 100 * 4
    assert hlo_cost.flops(module, fusion) == 100 * 3


def test_concatenate_costs_more_when_warps_straddle_operands() -> None:
    hlo = _Hlo()
    a = hlo.add("main", "a", "parameter", S32, [4, 64])
    b = hlo.add("main", "b", "parameter", S32, [4, 30])
    rows = hlo.add("main", "rows", "concatenate", S32, [8, 64], (a, a))
    rows.dimensions.append(0)
    cols = hlo.add("main", "cols", "concatenate", S32, [4, 94], (a, b))
    cols.dimensions.append(1)
    module = hlo.module()
    assert hlo_cost.flops(module, rows) == 6 * 8 * 64
    assert hlo_cost.flops(module, cols) == 400 * 4 * 94


def test_custom_calls_cost_nothing_but_cublas_has_a_library_estimate() -> None:
    hlo = _Hlo()
    a = hlo.add("main", "a", "parameter", BF16, [128, 64])
    b = hlo.add("main", "b", "parameter", BF16, [32, 64])
    gemm = hlo.add("main", "gemm", "custom-call", hlo_pb2.TUPLE, [], (a, b))
    gemm.shape.tuple_shapes.add(element_type=BF16, dimensions=[128, 32])
    gemm.shape.tuple_shapes.add(element_type=hlo_pb2.S8, dimensions=[1 << 20])
    gemm.custom_call_target = "__cublas$gemm"
    gemm.backend_config = (
        b'{"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"]}}}'
    )
    ffi = hlo.add("main", "te", "custom-call", BF16, [128, 32], (a, b))
    ffi.custom_call_target = "te_fused_attn_forward_ffi"
    module = hlo.module()
    assert hlo_cost.flops(module, gemm) == 0 == hlo_cost.bytes_accessed(module, gemm)
    assert hlo_cost.library_flops(module, gemm) == 2 * 128 * 32 * 64
    assert hlo_cost.library_bytes(module, gemm) == (128 * 64 + 32 * 64 + 128 * 32) * 2
    assert hlo_cost.library_flops(module, ffi) == 0 == hlo_cost.library_bytes(module, ffi)
