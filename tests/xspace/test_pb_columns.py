"""The columnar protobuf writer (`xspace/pb_columns`) read back by protobuf itself: varints of
every length, fields present in some rows, nested messages and strings."""

from __future__ import annotations

import numpy as np

from stepscope.xspace import pb_columns as pb
from stepscope.xspace.proto.xplane_pb2 import XEvent, XStat

# every varint length (1-10 bytes) at both of its ends, and int64 values as uint64 bits
EDGES = [0, 1, 127, 128, 300] + [v for k in range(2, 10) for v in (2 ** (7 * k) - 1, 2 ** (7 * k))]
SIGNED = np.array([*EDGES[:-1], 2**63 - 1, -1, -(2**63), -300], dtype=np.int64)


def _decode_varints(data: bytes) -> list[int]:
    values, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            values.append(value)
            value, shift = 0, 0
    assert shift == 0, "a varint left open"
    return values


def test_varints_of_every_length_decode_to_their_values() -> None:
    values = np.array([*EDGES, 2**64 - 1], dtype=np.uint64)
    order = np.random.default_rng(1).permutation(len(values))  # long and short mixed
    encoded = pb.encode_varints(values[order])
    assert _decode_varints(bytes(encoded)) == [int(v) for v in values[order]]
    assert pb.varint_len(values).tolist() == [len(pb.varint_bytes(int(v))) for v in values]


def test_messages_with_fields_in_some_rows_parse_as_protobuf_writes_them() -> None:
    n = len(SIGNED)
    rng = np.random.default_rng(2)
    durations = SIGNED[rng.permutation(n)]
    has_duration = rng.random(n) < 0.5
    names = pb.strings_column([f"s{i}" * (i % 3) for i in range(n)])
    text = (np.arange(n) % 2).astype(bool)
    stat = pb.nested(
        4,
        [
            pb.varint(1, np.arange(n)),
            pb.varint(4, SIGNED, ~text),  # int64_value, or str_value where `text`
            pb.Field(pb.tag(5, 2), pb.BLOB, names.start, text, names.buf, names.size),
        ],
    )
    fields = [
        pb.varint(1, SIGNED),
        pb.varint(2, np.zeros(n, np.int64)),  # a oneof member: written even when 0
        pb.varint(3, durations, has_duration),
        stat,
    ]
    encoded = pb.encode(fields, n)
    for i in range(n):
        message = bytes(encoded.buf[encoded.start[i] : encoded.start[i] + encoded.size[i]])
        expected = XEvent(metadata_id=int(SIGNED[i]), offset_ps=0)
        if has_duration[i]:
            expected.duration_ps = int(durations[i])
        if text[i]:
            expected.stats.append(XStat(metadata_id=i, str_value=f"s{i}" * (i % 3)))
        else:
            expected.stats.append(XStat(metadata_id=i, int64_value=int(SIGNED[i])))
        # (not byte-compared: protobuf leaves out zeros that this writer keeps)
        assert XEvent.FromString(message) == expected, i
