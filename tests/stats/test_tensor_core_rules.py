"""TensorCore eligibility of op names at the edges of its rules (stats/gpu/tensor_core.py).

Each case is an op name as a framework writes it and whether the kernel-stats table's "op is
TensorCore eligible" column says yes; issue #34's mutation run of the module showed which
rules no other test reached (the JAX einsum equation read from the name, the TensorFlow
"name:Type" split, the einsum types that need their equation).
"""

from __future__ import annotations

import pytest

from stepscope.stats.gpu.tensor_core import (
    is_einsum_tensor_core_eligible,
    is_op_tensor_core_eligible,
)


@pytest.mark.parametrize(
    ("op", "eligible"),
    [
        # JAX names carry an einsum's equation: two operands contract on TensorCores
        ("jit(f)/einsum(ab,bc->ac)/mul", True),
        ("jit(f)/Einsum(ab,bc->ac)/mul", True),  # the word in any case
        ("jit(f)/einsum(abc->ac)/reduce_sum", False),  # one operand: a reduction
        ("jit(f)/einsum(a,b,c->abc)/mul", False),  # three operands
        ("jit(f)/einsum(,b->b)/mul", True),  # a scalar times a vector: still two operands
        ("jit(f)/einsum(a,a->)/mul", True),  # a dot product to a scalar
        ("jit(f)/jvp(ab,bc->ac)/mul", False),  # an equation-like scope without "einsum"
        ("jit(f)/einsum/mul", False),  # "einsum" without an equation
        # JAX's matmul and convolution, numbered or not
        ("jit(f)/dot_general", True),
        ("jit(f)/dot_general.3", True),
        ("jit(f)/conv_general_dilated", True),
        ("jit(f)/add", False),
        # TensorFlow "scope/name:Type": the type alone, or the name alone, is enough
        ("model/dense:MatMul", True),
        ("model/conv2d/Conv2D:Identity", True),
        ("model/dense:Relu", False),
        # an einsum type needs its equation, even where the name would pass another rule
        ("model/dot_general:Einsum", False),
        ("model/dot_general:XlaEinsum", False),
        ("model/dot_general:XlaDotV2", True),  # other types fall through to the JAX names
        # PyTorch: the aten name is the part before a space
        ("aten::mm extra", True),
        ("aten::mmx", False),
    ],
)
def test_op_eligibility_at_the_rules_edges(op: str, eligible: bool) -> None:
    assert is_op_tensor_core_eligible(op) is eligible


def test_an_einsum_equation_given_beside_the_name() -> None:
    assert is_op_tensor_core_eligible("model/e:Einsum", equation="ab,bc->ac")
    assert not is_op_tensor_core_eligible("model/e:Einsum", equation="ab,bc")  # no arrow
    assert not is_einsum_tensor_core_eligible("ab,bc")
    assert is_einsum_tensor_core_eligible("a,a->")
