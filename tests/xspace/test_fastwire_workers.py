"""The C decoder's event chunks: any number of workers and any chunk size give the protobuf
fallback's columns, strings in first-appearance order included."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from stepscope import accelerators
from stepscope.xspace import Ref, XSpaceBuilder, wire
from stepscope.xspace.proto.xplane_pb2 import XLine, XPlane, XSpace
from tests.support.native import c_on


@pytest.fixture(autouse=True)
def _c_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_fastwire")


# every array column of the decoded file
COLUMNS = tuple(f.name for f in fields(wire.RawColumns) if f.name[:3] in ("ev_", "st_"))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _mixed_space() -> bytes:
    """Three planes; string, bytes, ref, double and huge stats repeating across lines; one
    line of 500 events (many chunks), an empty line, aggregated events."""
    builder = XSpaceBuilder(hostname="h")
    host = builder.plane("/host:CPU")
    long_line = host.line(1, "main", timestamp_ns=10)
    for i in range(500):
        stats = {"n": i, "s": f"name{i % 7}", "b": bytes([i % 3]), "r": Ref(f"ref{i % 2}")}
        if i % 5 == 0:
            stats["x"] = i / 3
            stats["u"] = (1 << 64) - 1 - i
        long_line.event(f"op{i % 11}", 100 + i, 3, stats if i % 4 else None)
    host.line(2, "empty")
    other = host.line(3, "other")
    for i in range(40):
        other.event("late", 5_000 + i, 1, {"s": f"name{(i * 3) % 9}", "t": "only here"})
    builder.plane("/device:GPU:0").line(7, "stream").event("k", 0, 2, {"s": "name8"})
    space = builder.build()
    agg = space.planes[0].lines[2].events
    for event in agg[:5]:
        event.num_occurrences = 4  # oneof: clears the offset
    agg[5].num_occurrences = 2
    agg[5].offset_ps = 77  # the offset set last wins
    return space.SerializeToString()


def _interleaved_space() -> bytes:
    """A line whose own fields sit between its events (legal protobuf, merged on parse)."""
    events = XLine()
    for i in range(9):
        event = events.events.add(metadata_id=1 + i % 2, offset_ps=i * 1000, duration_ps=5)
        event.stats.add(metadata_id=1, str_value=f"v{i % 4}")
    raw = events.SerializeToString()
    cut = len(raw) // 2
    while True:  # the cut must fall on an event boundary: find where the 5th event starts
        try:
            XLine.FromString(raw[:cut])
            break
        except Exception:
            cut += 1
    line = raw[:cut] + XLine(id=4, name="mid", timestamp_ns=7).SerializeToString() + raw[cut:]
    plane = XPlane(id=1, name="/host:CPU")
    plane.event_metadata[1].name = "a"
    plane.event_metadata[2].name = "b"
    plane.stat_metadata[1].name = "s"
    plane_bytes = plane.SerializeToString() + _field(3, line)
    return _field(1, plane_bytes) + _field(1, XPlane(id=2, name="/x").SerializeToString())


def _columns(data: bytes, threads: int, chunk: int) -> tuple[object, ...]:
    fast = accelerators.get("_fastwire")
    assert fast is not None
    header, planes, columns, strings, aggregated = fast.decode(data, -1, threads, chunk)
    arrays = {name: bytes(columns[name]) for name in COLUMNS}
    return bytes(header), [(bytes(h), lines) for h, lines in planes], arrays, strings, aggregated


@pytest.mark.parametrize("make", [_mixed_space, _interleaved_space])
def test_workers_and_chunks_give_the_fallbacks_columns(make: object) -> None:
    data = make()  # type: ignore[operator]
    reference = _columns(data, 1, 32768)
    for threads in (1, 2, 3, 8):
        for chunk in (1, 2, 7, 64, 1 << 20):
            assert _columns(data, threads, chunk) == reference, (threads, chunk)
    fast = wire.decode_columns(data, threads=3)
    slow = wire.columns_from_message(XSpace.FromString(data))
    for column in COLUMNS:
        np.testing.assert_array_equal(getattr(fast, column), getattr(slow, column), column)
    assert fast.strings == slow.strings
    assert fast.lines == slow.lines
    assert fast.aggregated_events == slow.aggregated_events


def test_mixed_space_exercises_what_it_claims() -> None:
    raw = wire.decode_columns(_mixed_space(), threads=2)
    kinds = set(raw.st_kind.tolist())
    assert {wire.KIND_STR, wire.KIND_BYTES, wire.KIND_REF, wire.KIND_DOUBLE} <= kinds
    assert wire.KIND_UINT in kinds
    assert raw.aggregated_events == 5
    assert raw.strings[:3] == [b"name1", b"\x01", b"name2"]


@pytest.mark.parametrize("threads", [1, 2])
def test_corrupt_stat_is_an_error_with_any_workers(threads: int) -> None:
    data = bytearray(_mixed_space())
    at = data.index(b"name5")
    data[at - 1] = 0x7F  # a string length running past its stat
    with pytest.raises(ValueError, match="corrupt"):
        wire.decode_columns(bytes(data), threads=threads)


def test_varints_of_every_length_decode_as_protobuf() -> None:
    """Times and values 2^k - 1, 2^k, 2^k + 1 for k < 63, and their negatives (10 bytes): the
    decoder reads up to 8 bytes at once and the rest byte by byte."""
    space = XSpace()
    line = space.planes.add(id=1, name="p").lines.add(id=1, name="l")
    values = [v for k in range(63) for v in ((1 << k) - 1, 1 << k, (1 << k) + 1) if v < 1 << 63]
    for value in values:
        event = line.events.add(metadata_id=value % 1000, offset_ps=value, duration_ps=value)
        event.stats.add(metadata_id=1, uint64_value=value)
        event.stats.add(metadata_id=2, int64_value=-value)
        event.stats.add(metadata_id=value, ref_value=value)
    data = space.SerializeToString()
    fast = wire.decode_columns(data, threads=2)
    slow = wire.columns_from_message(XSpace.FromString(data))
    for column in COLUMNS:
        np.testing.assert_array_equal(getattr(fast, column), getattr(slow, column), column)
