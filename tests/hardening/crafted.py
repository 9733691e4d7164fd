"""Crafted hostile inputs (the cases issue #13 reported), built in code as fuzz seeds.

Protobuf is written by hand at the wire level so a case can be exactly as small as the
attack: XSpace.planes = 1, XPlane.lines = 3, XPlane.stat_metadata = 5 (map), XLine.events = 4,
XEvent.metadata_id = 1, XEvent.stats = 4, XStat.metadata_id = 1, XStat.ref_value = 7.
"""

from __future__ import annotations

import functools
import gzip


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field_varint(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def field_bytes(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def event(meta_id: int, stats: bytes = b"") -> bytes:
    return field_bytes(4, field_varint(1, meta_id) + stats)


def many_planes(n: int = 60_000) -> bytes:
    """``n`` planes of one line and one event each (was quadratic: 235 s for 60,000)."""
    plane = field_bytes(1, field_varint(1, 1) + field_bytes(3, field_varint(1, 1) + event(1)))
    return plane * n


@functools.cache  # built once for the C and the Python decoder's test (0.15 s each, in Python)
def many_missing_metadata(n: int = 300_000) -> bytes:
    """One line of ``n`` events whose metadata ids have no metadata (was quadratic)."""
    events = b"".join(event(i + 1) for i in range(n))
    return field_bytes(1, field_varint(1, 1) + field_bytes(3, field_varint(1, 1) + events))


def ref_stat_without_metadata() -> bytes:
    """A REF stat in a plane without stat metadata (IndexError in both decoders)."""
    stat = field_bytes(4, field_varint(1, 5) + field_varint(7, 3))
    return field_bytes(1, field_varint(1, 1) + field_bytes(3, field_varint(1, 2) + event(1, stat)))


def empty_events(n: int) -> bytes:
    """One line of ``n`` empty events: 2 wire bytes each, 96 bytes each once decoded."""
    return field_bytes(1, field_bytes(3, b"\x22\x00" * n))


def _members(head: bytes, body: bytes, inflated_bytes: int, tail: bytes = b"") -> bytes:
    """A multi-member gzip stream: ``body`` repeated to ``inflated_bytes`` costs one
    compressed member (about 1 KB per MiB), so bombs are quick to build."""
    member = gzip.compress(body * ((1 << 20) // len(body)), compresslevel=9)
    count = max(1, inflated_bytes >> 20)
    return gzip.compress(head) + member * count + gzip.compress(tail)


def xspace_gzip_bomb(inflated_bytes: int) -> bytes:
    """A small .xplane.pb.gz that inflates to ``inflated_bytes`` of empty events."""
    head = varint(1 << 3 | 2) + varint(inflated_bytes + 16)  # one plane holding everything
    head += varint(3 << 3 | 2) + varint(inflated_bytes)
    return _members(head, b"\x22\x00", inflated_bytes)


def json_gzip_bomb(inflated_bytes: int) -> bytes:
    """A small .json.gz that inflates to a huge array of empty objects."""
    return _members(b'{"traceEvents": [', b"{},", inflated_bytes, b"{}]}")


def unterminated_json_string(n: int) -> bytes:
    """A Kineto trace cut inside a string of ``n`` characters (the repair regex's worst case)."""
    return b'{"traceEvents": [{"name": "' + b"a" * n
