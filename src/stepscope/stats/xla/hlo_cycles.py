"""Per-element cost of XLA's elementwise ops in XLA's GPU cost model, the figures XProf's
FLOPs come from.

XLA's GPU cost analysis counts an elementwise op as (clock cycles per element) x (output
elements). The cycles come from measured op profiles per GPU; XProf runs the analysis without
a device, so XLA falls back to its default profile (the ``sm_86`` entries below, read from
XLA's ``hlo_op_profiles`` data as XProf 2.24.2 ships it) and to 3 cycles for every op and type
that profile does not list (additions, multiplies, compares, converts and selects in 16 and
32 bits among them). Compares, converts, clamps and selects are costed the same way.
"""

from __future__ import annotations

from stepscope.xspace.proto import hlo_pb2

_P = hlo_pb2.PrimitiveType

DEFAULT_CYCLES = 3  # XLA: "elementwise instructions typically take at least a few clock cycles"

# Ops XLA's HloInstruction::IsElementwise() accepts that the cost analysis prices per element.
ELEMENTWISE = frozenset(
    {
        "abs",
        "add",
        "and",
        "atan2",
        "cbrt",
        "ceil",
        "clamp",
        "clz",
        "compare",
        "complex",
        "convert",
        "cosine",
        "divide",
        "erf",
        "exponential",
        "exponential-minus-one",
        "floor",
        "imag",
        "is-finite",
        "log",
        "log-plus-one",
        "logistic",
        "maximum",
        "minimum",
        "multiply",
        "negate",
        "not",
        "or",
        "popcnt",
        "power",
        "real",
        "reduce-precision",
        "remainder",
        "round-nearest-afz",
        "round-nearest-even",
        "rsqrt",
        "select",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "sign",
        "sine",
        "sqrt",
        "stochastic-convert",
        "subtract",
        "tan",
        "tanh",
        "xor",
    }
)

_F16, _F32, _F64, _C64, _C128 = _P.F16, _P.F32, _P.F64, _P.C64, _P.C128
_S8, _S16, _S32, _S64 = _P.S8, _P.S16, _P.S32, _P.S64
_U8, _U16, _U32, _U64 = _P.U8, _P.U16, _P.U32, _P.U64

# opcode -> element type -> clock cycles per element (XLA's default GPU profile, sm_86).
CYCLES: dict[str, dict[int, int]] = {
    "divide": {
        _S8: 370,
        _S16: 367,
        _S32: 306,
        _S64: 918,
        _U8: 306,
        _U16: 302,
        _U32: 115,
        _U64: 838,
        _F64: 2016,
        _C64: 687,
        _C128: 7941,
    },
    "power": {
        _S8: 392,
        _S16: 396,
        _S64: 601,
        _U8: 388,
        _U16: 399,
        _U64: 604,
        _F16: 975,
        _F32: 925,
        _F64: 5511,
        _C64: 3351,
        _C128: 18205,
    },
    "cbrt": {_F16: 925, _F32: 867, _F64: 6339},
    "cosine": {_F16: 691, _F32: 662, _F64: 1717, _C128: 6613},
    "exponential": {_F16: 108, _F32: 86, _F64: 1652, _C64: 1360, _C128: 4028},
    "exponential-minus-one": {_F16: 396, _F32: 381, _F64: 1900, _C64: 1400, _C128: 4161},
    "log": {_F16: 266, _F32: 244, _F64: 608, _C64: 950, _C128: 7599},
    "log-plus-one": {_F16: 284, _F32: 262, _F64: 2073, _C64: 842, _C128: 6962},
    "logistic": {_F16: 226, _F32: 176, _F64: 2412},
    "rsqrt": {_F16: 97, _F32: 75, _F64: 698, _C64: 2383, _C128: 11318},
    "sqrt": {_F16: 97, _F32: 75, _F64: 986, _C64: 3193, _C128: 15606},
    "tanh": {_F16: 212, _F32: 190, _F64: 1609, _C128: 9939},
    "atan2": {_F16: 482, _F32: 486, _F64: 3747, _C64: 5353, _C128: 39027},
    "sine": {_F32: 662, _F64: 1789, _C128: 5878},
    "add": {_F64: 97, _C128: 97},
    "multiply": {_F64: 97, _C128: 270},
    "subtract": {_F64: 97, _C128: 97},
}


def cycles_per_element(opcode: str, element_type: int) -> int:
    """XLA's GPU cost of one output element of an elementwise op."""
    return CYCLES.get(opcode, {}).get(element_type, DEFAULT_CYCLES)
