"""Trace JSON -> header dict + trace events as typed records, in chunks (the oracle's reader).

A trace event becomes a `TraceEvent` (a msgspec Struct: only the fields the importer reads,
no per-event dict, not tracked by the garbage collector). The events array is first split
into raw byte slices (`msgspec.Raw`, views of the text), then decoded a chunk at a time.

Valid JSON takes that path. JSON that msgspec refuses (damage to repair, a BOM, NaN, invalid
UTF-8, ...) goes through `json_repair.load_json`, and its dict events are turned into the same
records, so the router sees one type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from stepscope import limits
from stepscope.xspace.kineto.decode import _HEADER, header_dict

CHUNK_EVENTS = 1 << 14  # records alive at once (a few MB)


class TraceEvent(msgspec.Struct, gc=False):
    """The fields of a Chrome-trace event that the importer reads (others are skipped)."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Any = None
    id: Any = None
    s: Any = None


_FIELDS = TraceEvent.__struct_fields__
_EVENT = msgspec.json.Decoder(TraceEvent)
_ANY = msgspec.json.Decoder()


class NotATrace:
    """An entry of ``traceEvents`` that is not an object (counted and skipped)."""


NOT_AN_OBJECT = NotATrace()
MALFORMED = NotATrace()  # an object msgspec cannot read (an integer beyond 64 bits, ...)
Entry = TraceEvent | NotATrace


class Trace:
    """A decoded trace: ``header`` (a dict, ``traceEvents`` left out) and its events.

    ``has_events_list`` is False when the document has no ``traceEvents`` list;
    `chunks` yields the events in file order, each chunk released once consumed.
    """

    def __init__(self, header: Any, raw_events: list[msgspec.Raw] | None, events: Any) -> None:
        self.header = header
        self._raw = raw_events
        self._events = events  # the fallback's list of dicts
        self.has_events_list = isinstance(header, dict) and (
            raw_events is not None or isinstance(events, list)
        )
        self.event_count = (
            len(raw_events)
            if raw_events is not None
            else (len(events) if isinstance(events, list) else 0)
        )

    def chunks(self) -> Iterator[list[Entry]]:
        raw, self._raw = self._raw, None
        if raw is not None:
            for lo in range(0, len(raw), CHUNK_EVENTS):
                yield _decode_chunk(raw[lo : lo + CHUNK_EVENTS])
                raw[lo : lo + CHUNK_EVENTS] = [None] * min(CHUNK_EVENTS, len(raw) - lo)  # type: ignore[list-item]
            return
        events, self._events = self._events, None
        if isinstance(events, list):
            for lo in range(0, len(events), CHUNK_EVENTS):
                yield [_from_dict(event) for event in events[lo : lo + CHUNK_EVENTS]]


def decode_trace(data: bytes, source: str, warnings: list[str]) -> Trace:
    """Decode ``data`` (see module docstring); damaged JSON is repaired or raises.
    `ProfileTooLargeError` before parsing when the objects would not fit the profile limit."""
    from stepscope.xspace.kineto.json_repair import load_json
    from stepscope.xspace.kineto.scan import parse_memory_estimate

    limits.check(source, "parsing this JSON", parse_memory_estimate(data))
    try:
        header = _HEADER.decode(data)
        raw_events = header.traceEvents  # type: ignore[attr-defined]
        if raw_events is msgspec.UNSET:
            return Trace(header_dict(header), None, None)
        return Trace(header_dict(header), raw_events, None)
    except (msgspec.DecodeError, RecursionError):
        pass  # not an object, not valid JSON for msgspec, traceEvents not a list, ...
    doc = load_json(data, source, warnings)
    if not isinstance(doc, dict):
        return Trace(doc, None, None)
    events = doc.pop("traceEvents", None)
    return Trace(doc, None, events)


def _decode_chunk(raw: list[msgspec.Raw]) -> list[Entry]:
    # One event at a time: no copy of the chunk's text, and as fast as decoding a joined array.
    decode = _EVENT.decode
    try:
        return [decode(item) for item in raw]
    except (msgspec.DecodeError, RecursionError):
        return [_decode_one(item) for item in raw]  # find the entries that are not objects


def _decode_one(item: msgspec.Raw) -> Entry:
    try:
        return _EVENT.decode(item)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        value = _ANY.decode(item)
    except (msgspec.DecodeError, RecursionError):
        return MALFORMED
    return _from_dict(value) if isinstance(value, dict) else NOT_AN_OBJECT


def _from_dict(event: Any) -> Entry:
    if type(event) is not dict:
        return NOT_AN_OBJECT
    return TraceEvent(*[event.get(field) for field in _FIELDS])
