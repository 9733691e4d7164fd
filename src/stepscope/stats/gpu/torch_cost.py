"""FLOPs and bytes of PyTorch ops estimated from their type and input shapes, for profiles
without a compiler's cost model: the data of op_profile and roofline_model on PyTorch traces.

Kineto records ``Input Dims`` and ``Input type`` of each CPU op when the profiler runs with
``record_shapes=True``. Each GPU kernel is charged to the innermost op enclosing its launch;
that op's cost is estimated once per call:

- matmuls (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``, ``linear``, ``_scaled_mm``):
  2 x M x N x K (x batch);
- convolutions: 2 x batch x output channels x (input channels / groups) x kernel window x
  output positions, with stride, padding and dilation from ``Concrete Inputs`` when recorded
  (else stride 1 and "same" output size);
- scaled-dot-product / flash attention: 4 x batch x heads x Lq x Lk x head dim (QK^T and PV);
- elementwise, activations, normalizations, softmax: one FLOP per output element;
- other ops: no FLOPs (copies, indexing, collectives).

Bytes = the input tensors read + the output written (the output shape of matmuls, convolutions
and attention follows from the inputs; otherwise the largest input).
"""

from __future__ import annotations

import json
import math

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.enclosing import innermost_enclosing
from stepscope.stats.gpu.kernels import kernel_events, launch_events, op_candidates
from stepscope.stats.xla.xla_metrics import HloMetrics, HloOpRow, device_work_mask, idle_and_busy_ns
from stepscope.stats.xla.xla_op import XlaOp

SOURCE = "estimated from PyTorch op types and input shapes (record_shapes)"
_ITEM_BYTES = {
    "double": 8,
    "long int": 8,
    "float": 4,
    "int": 4,
    "c10::BFloat16": 2,
    "c10::Half": 2,
    "short int": 2,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
}
_MATMUL = {
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::_scaled_mm",
}
_CONV = {
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
}
_ATTENTION = (
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::scaled_dot_product_attention",
    "aten::_flash_attention_forward",
    "aten::_efficient_attention_forward",
)
_ELEMENTWISE = (
    "add",
    "sub",
    "mul",
    "div",
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "pow",
    "sqrt",
    "rsqrt",
    "neg",
    "threshold",
    "clamp",
    "where",
    "softmax",
    "_softmax",
    "log_softmax",
    "layer_norm",
    "native_layer_norm",
    "batch_norm",
    "native_batch_norm",
    "group_norm",
    "rms_norm",
    "dropout",
    "hardtanh",
    "leaky_relu",
    "mean",
    "sum",
)


@record
class OpCost:
    family: str  # "matmul", "convolution", "attention", "elementwise", "other"
    flops: float
    bytes_accessed: float


def _tensors(dims: list[object], types: list[object]) -> list[tuple[list[int], int]]:
    out = []
    for i, d in enumerate(dims):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            t = types[i] if i < len(types) else ""
            out.append((list(d), _ITEM_BYTES.get(str(t), 4)))
    return out


def _size(shape: list[int], item: int) -> int:
    return math.prod(shape) * item


def _conv_out(spatial: list[int], window: list[int], concrete: list[object]) -> list[int]:
    def ints(i: int) -> list[int]:
        try:
            value = json.loads(str(concrete[i])) if i < len(concrete) and concrete[i] else []
        except ValueError:
            return []
        return value if isinstance(value, list) and all(isinstance(v, int) for v in value) else []

    stride, padding, dilation = ints(3), ints(4), ints(5)
    out = []
    for k, (size, win) in enumerate(zip(spatial, window, strict=False)):
        if not stride:
            out.append(size)  # not recorded: stride 1, "same" output size
            continue
        s = stride[k] if k < len(stride) else stride[0]
        p = padding[k] if k < len(padding) else (padding[0] if padding else 0)
        d = dilation[k] if k < len(dilation) else (dilation[0] if dilation else 1)
        out.append(max((size + 2 * p - d * (win - 1) - 1) // max(s, 1) + 1, 0))
    return out


def op_cost(name: str, dims: list[object], types: list[object], concrete: list[object]) -> OpCost:
    tensors = _tensors(dims, types)
    if not tensors:
        return OpCost("other", 0.0, 0.0)
    read = float(sum(_size(s, b) for s, b in tensors))
    item = tensors[0][1]
    if name in _MATMUL:
        mats = [s for s, _ in tensors if len(s) >= 2]
        if name in ("aten::addmm", "aten::baddbmm") and len(mats) >= 2:
            mats = mats[-2:]
        if len(mats) >= 2:
            a, b = mats[0], mats[1]
            if name == "aten::linear":  # weight is [out, in]
                m, k, n = math.prod(a[:-1]), a[-1], b[0]
                batch = 1
            else:
                m, k, n = a[-2], a[-1], b[-1]
                batch = math.prod(a[:-2]) if len(a) > 2 else 1
            return OpCost("matmul", 2.0 * batch * m * n * k, read + batch * m * n * item)
    if name in _CONV and len(tensors) >= 2:
        x, w = tensors[0][0], tensors[1][0]
        if len(x) >= 3 and len(w) == len(x):
            out_spatial = _conv_out(x[2:], w[2:], concrete)
            outputs = x[0] * w[0] * math.prod(out_spatial)
            return OpCost("convolution", 2.0 * outputs * math.prod(w[1:]), read + outputs * item)
    if name.startswith(_ATTENTION) and len(tensors) >= 3:
        q, keys = tensors[0][0], tensors[1][0]
        if len(q) == 4 and len(keys) == 4:
            # SDPA ops take [batch, heads, length, dim]; the flash/efficient kernels' own
            # entry points take [batch, length, heads, dim].
            if name.startswith(("aten::_flash_attention", "aten::_efficient_attention")):
                batch, lq, heads, dim, lk = q[0], q[1], q[2], q[3], keys[1]
            else:
                batch, heads, lq, dim, lk = q[0], q[1], q[2], q[3], keys[2]
            flops = 4.0 * batch * heads * lq * lk * dim
            return OpCost("attention", flops, read + _size(q, item))
    short = name.split("::", 1)[-1].rstrip("_")
    if short in _ELEMENTWISE:
        largest = max(tensors, key=lambda t: math.prod(t[0]))
        elements = math.prod(largest[0])
        return OpCost("elementwise", float(elements), read + elements * largest[1])
    return OpCost("other", 0.0, 0.0)


def _parse(text: object) -> list[object]:
    if not isinstance(text, str) or not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def torch_metrics(profile: Profile) -> HloMetrics:
    """Rows per PyTorch op name (the op enclosing each kernel's launch) with estimated FLOPs
    and bytes; empty when the trace has no ``Input Dims``."""
    events = np.flatnonzero(device_work_mask(profile))
    idle, device_ns = idle_and_busy_ns(profile, events)
    empty = HloMetrics((), idle, device_ns, SOURCE)
    if not profile.stat("Input Dims").present.any():
        return empty
    kernels = kernel_events(profile)
    launch = launch_events(profile, kernels)
    ok = launch >= 0
    if not ok.any():
        return empty
    kernels, launch = kernels[ok], launch[ok]
    unique, inverse = np.unique(launch, return_inverse=True)
    enclosing = innermost_enclosing(profile, unique, op_candidates(profile))
    op_event = enclosing[inverse.reshape(-1)]
    has_op = op_event >= 0
    kernels, op_event = kernels[has_op], op_event[has_op]
    dims = profile.stat("Input Dims").string_ids()
    types = profile.stat("Input type").string_ids()
    concrete = profile.stat("Concrete Inputs").string_ids()
    strings = profile.strings
    per_name: dict[str, list[float]] = {}  # name -> [time, flops, bytes, kernels, calls]
    costs: dict[int, tuple[str, OpCost]] = {}
    ops = distinct(op_event)  # the ops, ascending; ``at``: each kernel's
    at = np.searchsorted(ops, op_event)
    for event in ops.tolist():
        name = strings[int(profile.name[event])]

        def text(ids: np.ndarray, e: int = event) -> list[object]:
            return _parse(strings[int(ids[e])]) if ids[e] >= 0 else []

        costs[event] = (name, op_cost(name, text(dims), text(types), text(concrete)))
    durations = np.bincount(at, weights=profile.dur_ns[kernels])
    counts = np.bincount(at)
    family: dict[str, str] = {}
    for k, event in enumerate(ops.tolist()):
        name, cost = costs[event]
        row = per_name.setdefault(name, [0.0, 0.0, 0.0, 0.0, 0.0])
        row[0] += durations[k]
        row[1] += cost.flops
        row[2] += cost.bytes_accessed
        row[3] += counts[k]
        row[4] += 1
        if cost.family != "other" or name not in family:
            family[name] = cost.family
    rows = []
    for name, (time_ns, flops, moved, count, calls) in per_name.items():
        op = XlaOp(
            program_id=0,
            module="PyTorch ops",
            name=name,
            opcode=name,
            category=family[name],
            tf_op_name=name,
            op_type=family[name],
            flops=flops / calls,
            bytes_accessed=int(moved / calls),
            expression="",
            source=SOURCE,
        )
        rows.append(HloOpRow(op, int(count), int(calls), int(time_ns), flops, moved))
    rows.sort(key=lambda r: (-r.total_ns, r.op.name))
    return HloMetrics(tuple(rows), idle, device_ns, SOURCE)
