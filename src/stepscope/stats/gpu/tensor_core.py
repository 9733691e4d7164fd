"""TensorCore rules (XProf's ``xprof/utils/kernel_stats_utils.cc``), plus the same idea for PyTorch
and JAX op names.

A kernel uses TensorCores when a rule of `stepscope.stats.kernel_rules` says so (XProf's
markers plus today's NVIDIA and AMD library names). An op is
TensorCore-eligible when XProf's TensorFlow rules say so; stepscope adds the matrix-multiply
and convolution ops of PyTorch (``aten::mm``...) and JAX (``dot_general``...), which XProf
never sees, so that PyTorch and JAX traces get the same column. A JAX/TF einsum is eligible
when its equation has exactly two inputs (``bsd,de->bse``).
"""

from __future__ import annotations

import re

from stepscope.stats.kernel_rules import kernel_on_matrix_units

# TensorFlow op names XProf counts as TensorCore-eligible: suffixes, and a substring.
_TF_SUFFIXES = (
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "Conv3D",
    "/MatMul",
    "FusedMatMul",
    "/CudnnRNN",
    "XlaDot",
)
_TF_DEPTHWISE = "DepthwiseConv2dNative"
_TF_CONTAINS = "BatchMatMul"

# stepscope's additions for frameworks XProf does not read.
_ATEN_ELIGIBLE = frozenset(
    {
        "aten::mm",
        "aten::bmm",
        "aten::addmm",
        "aten::addbmm",
        "aten::baddbmm",
        "aten::matmul",
        "aten::linear",
        "aten::_scaled_mm",
        "aten::conv1d",
        "aten::conv2d",
        "aten::conv3d",
        "aten::convolution",
        "aten::_convolution",
        "aten::cudnn_convolution",
        "aten::cudnn_convolution_transpose",
        "aten::convolution_backward",
        "aten::conv_transpose2d",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_flash_attention_forward",
        "aten::_flash_attention_backward",
        "aten::_efficient_attention_forward",
        "aten::_efficient_attention_backward",
    }
)
_JAX_ELIGIBLE = ("dot_general", "conv_general_dilated")
_TF_FULLNAME = re.compile(r"^([^:]+):([A-Za-z_][A-Za-z0-9_]*)$")
_EQUATION = re.compile(r"\(([a-zA-Z.]*(?:,[a-zA-Z.]*)*)->[a-zA-Z.]*\)")


def kernel_uses_tensor_core(kernel_name: str) -> bool:
    """Whether the kernel runs on matrix units (NVIDIA TensorCores, AMD Matrix Cores): the
    rule table in `stepscope.stats.kernel_rules`."""
    return kernel_on_matrix_units(kernel_name)


def is_einsum_tensor_core_eligible(equation: str) -> bool:
    """An einsum runs on TensorCores when it contracts exactly two operands."""
    inputs, arrow, _ = equation.partition("->")
    return bool(arrow) and len(inputs.split(",")) == 2


def _tf_rules(name: str) -> bool:
    if name.endswith(_TF_SUFFIXES) or _TF_CONTAINS in name:
        return True
    last = name.rsplit("/", 1)[-1]
    return last.startswith(_TF_DEPTHWISE)


def is_op_tensor_core_eligible(op_name: str, equation: str = "") -> bool:
    """Whether the op could run on TensorCores (its math is a matmul or a convolution)."""
    if not op_name:
        return False
    if equation and is_einsum_tensor_core_eligible(equation):
        return True
    if "::" in op_name:  # PyTorch: aten::mm and friends
        return op_name.split(" ")[0] in _ATEN_ELIGIBLE
    match = _TF_FULLNAME.match(op_name)
    if match:  # TensorFlow "scope/name:Type": the rules apply to the name and the type
        name, op_type = match.groups()
        if _tf_rules(name) or _tf_rules(f"/{op_type}"):
            return True
        if op_type in ("Einsum", "XlaEinsum"):
            return False  # the equation is needed and was not given
    elif _tf_rules(op_name):
        return True
    # JAX: "jit(f)/jvp(bsd,de->bse)/dot_general" carries its einsum equation in the name.
    last = op_name.rsplit("/", 1)[-1]
    if last in _JAX_ELIGIBLE or last.startswith(_JAX_ELIGIBLE):
        return True
    found = _EQUATION.search(op_name)
    if found is None or "einsum" not in op_name.lower():
        return False
    return is_einsum_tensor_core_eligible(found.group(0)[1:-1])
