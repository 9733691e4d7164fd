"""Protocol-buffer encoding of many messages at once, from numpy columns.

A message type is a list of fields; every field gives one value per message (a row), so one
call encodes a whole column of messages into one byte buffer with numpy operations only — the
cost per message is a few array passes, not Python code per message. This is what lets the
Perfetto export write millions of events per second in Python.

Field kinds: ``varint`` (uint64 bits; int64 values are written as their two's complement, as
protobuf does), ``fixed64`` (8 bytes little endian), ``blob`` (a length-delimited submessage or
string whose bytes are a range of another buffer) and ``raw`` (a range of another buffer copied
as is: already-encoded repeated fields) and ``nested`` (a submessage given as its own fields,
written in place: nothing is encoded twice). A ``present`` mask leaves a field out of some rows.
"""

from __future__ import annotations

import numpy as np

from stepscope.records import record

VARINT, FIXED64, BLOB, RAW, NESTED, CONST = "varint", "fixed64", "blob", "raw", "nested", "const"
_U7 = np.uint64(0x7F)
# Ranges this long on average are gathered by slices, shorter ones by a byte index (below).
_JOIN_MIN_MEAN_BYTES = 32


def ranges_to_indices(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[k], hi[k])`` for all k (empty ranges allowed)."""
    lo = np.asarray(lo, dtype=np.int64)
    counts = np.maximum(np.asarray(hi, dtype=np.int64) - lo, 0)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = counts > 0
    lo, counts = lo[keep], counts[keep]
    # Each output position = its range's start + its rank within the range.
    ends = np.cumsum(counts)
    out = np.ones(total, dtype=np.int64)
    out[0] = lo[0]
    out[ends[:-1]] = lo[1:] - (lo[:-1] + counts[:-1] - 1)
    return np.cumsum(out)


def _range_mask(size: int, lo: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A boolean mask of ``size`` bytes, True in the ranges ``[lo[k], lo[k] + lengths[k])``,
    which ascend and do not overlap (lengths > 0): runs of False and True repeated, one byte
    a byte, against `ranges_to_indices`' 16 (int64 indices and their running sum), which a
    capture's stop paid for every event's stats (5-10 MB)."""
    runs = np.empty(2 * len(lo) + 1, np.int64)
    runs[1:-1:2] = lengths  # True
    runs[0] = lo[0]  # False: before the first range, between two, after the last
    np.subtract(lo[1:], lo[:-1] + lengths[:-1], out=runs[2:-1:2])
    runs[-1] = size - (lo[-1] + lengths[-1])
    pattern = np.zeros(len(runs), bool)
    pattern[1::2] = True
    return np.repeat(pattern, runs)


def _gather_ranges(source: np.ndarray, lo: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``source``'s bytes in the ranges ``[lo[k], lo[k] + lengths[k])`` (lengths > 0), in
    order: one slice where each range begins where the last ended (the events' encoded stats),
    a mask where they ascend apart, else every byte's index (strings used by many rows)."""
    ends = lo + lengths
    if np.array_equal(lo[1:], ends[:-1]):
        return source[int(lo[0]) : int(ends[-1])]
    if bool(np.all(lo[1:] > ends[:-1])):
        return source[_range_mask(len(source), lo, lengths)]
    if int(lengths.sum()) >= len(lo) * _JOIN_MIN_MEAN_BYTES:
        # Long ranges read again and again (a few stat strings, each written by thousands of
        # events): one slice a range, joined, against an int64 index and its running sum
        # for every byte (16 bytes of temporaries a byte copied: 230 MB for the 14 MB of
        # a 1 MB Kineto trace's stats, 0.7-2 s of page faults; decision 760).
        data = source.tobytes()
        joined = b"".join([data[a:b] for a, b in zip(lo.tolist(), ends.tolist(), strict=True)])
        return np.frombuffer(joined, dtype=np.uint8)
    return source[ranges_to_indices(lo, ends)]


def varint_bytes(value: int) -> bytes:
    """One varint, for the few scalars written beside the columns (an int64 as its two's
    complement, as protobuf writes it)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    """The encoded key of a field: varint of (field << 3 | wire type)."""
    return bytes(encode_varints(np.array([(field << 3) | wire_type], dtype=np.uint64)))


_LIMITS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


# Few and small temporaries below: a capture's stop encodes ~100k events a column, and each
# 0.7 MB temporary NumPy gets fresh from the system is ~180 page faults (decision 252).


def varint_len(values: np.ndarray) -> np.ndarray:
    """Encoded size of each uint64 value (1-10 bytes)."""
    v = values.astype(np.uint64, copy=False)
    lens = np.searchsorted(_LIMITS, v, side="right").astype(np.int64, copy=False)
    lens += 1
    return lens


def put_varints(buf: np.ndarray, pos: np.ndarray, values: np.ndarray, lens: np.ndarray) -> None:
    """Writes each value as a varint at ``buf[pos:]`` (``lens`` from `varint_len`)."""
    v = values.astype(np.uint64, copy=False)
    for k in range(int(lens.max()) if len(lens) else 0):
        if k:  # the rows with a k-th byte: a subset of those with a (k-1)-th
            more = lens > k
            if not more.all():
                v, pos, lens = v[more], pos[more], lens[more]
        part = v >> np.uint64(7 * k)
        part &= _U7
        byte = part.astype(np.uint8)
        byte |= (lens > k + 1).view(np.uint8) << np.uint8(7)  # the continuation bit
        buf[pos + k if k else pos] = byte


def encode_varints(values: np.ndarray) -> np.ndarray:
    lens = varint_len(values)
    buf = np.zeros(int(lens.sum()), dtype=np.uint8)
    put_varints(buf, np.cumsum(lens) - lens, values, lens)
    return buf


@record(frozen=False)
class Field:
    """One field of a message column. ``values``: varint/fixed64 values, or for blob/raw the
    start offsets into ``source`` with ``lengths``."""

    key: bytes
    kind: str
    values: np.ndarray
    present: np.ndarray | None = None
    source: np.ndarray | None = None
    lengths: np.ndarray | None = None
    sub: list[Field] | None = None  # NESTED: the submessage's fields
    sub_sizes: list[np.ndarray] | None = None  # NESTED: their sizes (set while encoding)


def varint(number: int, values: np.ndarray, present: np.ndarray | None = None) -> Field:
    return Field(tag(number, 0), VARINT, values.astype(np.int64).view(np.uint64), present)


def fixed64(number: int, values: np.ndarray, present: np.ndarray | None = None) -> Field:
    return Field(tag(number, 1), FIXED64, values.astype(np.int64), present)


def blob(number: int, encoded: Encoded, rows: np.ndarray | None = None) -> Field:
    """A length-delimited field holding message ``rows`` (default: all) of ``encoded``."""
    pick = slice(None) if rows is None else rows
    return Field(tag(number, 2), BLOB, encoded.start[pick], None, encoded.buf, encoded.size[pick])


def raw(source: np.ndarray, start: np.ndarray, lengths: np.ndarray) -> Field:
    return Field(b"", RAW, start, None, source, lengths)


def const(number: int, value: int) -> Field:
    """A varint field with the same value in every row (written as fixed bytes)."""
    return Field(
        tag(number, 0) + bytes(encode_varints(np.array([value], np.uint64))),
        CONST,
        np.zeros(0, np.int64),
    )


def nested(number: int, fields: list[Field]) -> Field:
    """A submessage field (every row), encoded in place from its own fields."""
    return Field(tag(number, 2), NESTED, np.zeros(0, np.int64), None, sub=fields)


@record(frozen=False)
class Encoded:
    """Messages laid end to end in ``buf``: message i is ``buf[start[i]:start[i] + size[i]]``."""

    buf: np.ndarray  # uint8
    start: np.ndarray  # int64
    size: np.ndarray  # int64

    def tobytes(self) -> bytes:
        return self.buf.tobytes()


def _sizes(fields: list[Field], n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Encoded size of each field in each row (0 where absent), and of each message."""
    sizes = []
    total = np.zeros(n, dtype=np.int64)
    for f in fields:
        if f.kind == CONST:
            size = np.zeros(n, dtype=np.int64)
        elif f.kind == VARINT:
            if f.present is None:
                size = varint_len(f.values)
            else:  # only the rows that have the field
                size = np.zeros(n, dtype=np.int64)
                size[f.present] = varint_len(f.values[f.present])
        elif f.kind == FIXED64:
            size = np.full(n, 8, dtype=np.int64)
        elif f.kind == NESTED:
            assert f.sub is not None
            f.sub_sizes, f.lengths = _sizes(f.sub, n)
            size = f.lengths + varint_len(f.lengths)
        else:
            assert f.lengths is not None
            size = f.lengths.astype(np.int64)
            if f.kind == BLOB:
                size = size + varint_len(size)
        # `size` is this field's own array from here: changed in place
        size += len(f.key)
        if f.present is not None:
            np.multiply(size, f.present, out=size)
        sizes.append(size)
        total += size
    return sizes, total


def _write(
    buf: np.ndarray, cursor: np.ndarray, fields: list[Field], sizes: list[np.ndarray]
) -> None:
    n = len(cursor)
    cursor = cursor.copy()
    for f, size in zip(fields, sizes, strict=True):
        # every row: views, not copies gathered through an index of all rows
        rows: np.ndarray | slice = (
            np.flatnonzero(f.present) if f.present is not None else slice(None)
        )
        pos = cursor[rows]
        for j, byte in enumerate(f.key):
            buf[pos + j if j else pos] = byte
        pos = pos + len(f.key)
        if f.kind == CONST:
            pass  # the key holds the value
        elif f.kind == VARINT:
            values = f.values[rows]
            put_varints(buf, pos, values, varint_len(values))
        elif f.kind == FIXED64:
            little = f.values[rows].astype("<i8", copy=False).view(np.uint8).reshape(-1, 8)
            buf[(pos[:, None] + np.arange(8)).ravel()] = little.ravel()
        elif f.kind == NESTED:
            assert f.sub is not None and f.sub_sizes is not None and f.lengths is not None
            lengths = f.lengths[rows]
            lens = varint_len(lengths)
            put_varints(buf, pos, lengths, lens)
            inner_cursor = np.zeros(n, dtype=np.int64)
            inner_cursor[rows] = pos + lens
            _write(buf, inner_cursor, f.sub, f.sub_sizes)
        else:
            assert f.lengths is not None and f.source is not None
            lengths = f.lengths[rows].astype(np.int64, copy=False)
            if f.kind == BLOB:
                lens = varint_len(lengths)
                put_varints(buf, pos, lengths, lens)
                pos = pos + lens
            nonempty = np.flatnonzero(lengths > 0)
            if len(nonempty):
                lengths = lengths.take(nonempty)
                copied = _gather_ranges(f.source, f.values[rows].take(nonempty), lengths)
                # the rows' ranges of buf ascend and never overlap (messages end to end)
                buf[_range_mask(len(buf), pos.take(nonempty), lengths)] = copied
        cursor += size


def encode(fields: list[Field], n: int) -> Encoded:
    """``n`` messages, each with the given fields in order (absent ones skipped)."""
    sizes, total = _sizes(fields, n)
    start = np.cumsum(total) - total
    buf = np.zeros(int(total.sum()), dtype=np.uint8)
    _write(buf, start, fields, sizes)
    return Encoded(buf, start, total)


def strings_column(texts: list[str]) -> Encoded:
    """UTF-8 strings as an Encoded column (to be used as blob fields)."""
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    size = np.fromiter((len(d) for d in data), dtype=np.int64, count=len(data))
    buf = np.frombuffer(b"".join(data), dtype=np.uint8)
    return Encoded(buf, np.cumsum(size) - size, size)
