"""Sizes of HLO shapes: element counts and bytes (sub-byte types packed, tuples summed)."""

from __future__ import annotations

import math

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
