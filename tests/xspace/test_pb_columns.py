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


def _byte_by_byte(source: bytes, lo: list[int], hi: list[int], dst: list[int], size: int) -> bytes:
    out = bytearray(size)
    for a, b, at in zip(lo, hi, dst, strict=True):
        out[at : at + b - a] = source[a:b]
    return bytes(out)


def test_raw_and_blob_fields_copy_their_ranges_whichever_way_they_lie() -> None:
    """The bytes a raw or blob field copies are its source's ranges as they lie: end to end
    (one slice), apart in order (a mask), or anywhere and repeated (indices, or slices where
    they are long); written at the rows' positions, with empty ranges among them."""
    source = np.frombuffer(bytes(range(256)) * 4, np.uint8)
    layouts = {
        "end to end": [(0, 3), (3, 4), (4, 9), (9, 9), (9, 30)],
        "apart": [(1, 3), (5, 6), (6, 6), (7, 20), (100, 101)],
        "anywhere": [(50, 60), (0, 5), (50, 60), (3, 8), (1000, 1024)],
        # 32 bytes a range or more: gathered by slices, not by an index of every byte
        "anywhere, long": [(40, 140), (0, 64), (40, 140), (140, 140), (500, 1024)],
    }
    for name, ranges in layouts.items():
        lo = np.array([a for a, _ in ranges], np.int64)
        lengths = np.array([b - a for a, b in ranges], np.int64)
        fields = [pb.varint(1, np.arange(len(ranges))), pb.raw(source, lo, lengths)]
        encoded = pb.encode(fields, len(ranges))
        expected = b"".join(
            bytes([0x08, i]) + bytes(source[a:b]) for i, (a, b) in enumerate(ranges)
        )
        assert encoded.tobytes() == expected, name
        for gap in (0, 3):  # written end to end, and apart (the first from byte 0 or 3)
            dst = [int(lengths[:k].sum()) + gap * (k + 1) for k in range(len(ranges))]
            size = dst[-1] + int(lengths[-1]) + gap
            some = lengths > 0
            mask = pb._range_mask(size, np.array(dst)[some], lengths[some])
            out = np.zeros(size, np.uint8)
            out[mask] = pb._gather_ranges(source, lo[some], lengths[some])
            his = [b for _, b in ranges]
            wanted = _byte_by_byte(bytes(source), lo.tolist(), his, dst, size)
            assert out.tobytes() == wanted, (name, gap)
