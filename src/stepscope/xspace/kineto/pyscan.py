"""Trace JSON -> the columns of `scan.ScannedTrace`, in Python with msgspec (the C scanner's twin).

Without the C scanner (not built, or ``STEPSCOPE_PURE_PYTHON``) every trace is read here, so
the same column route (`fast_route`, `fast_stats`, `fast_memory`) runs with and without C.
With C this reads the traces the C scanner does not model exactly (it flags such events
``F_BAD``: a ts with more than 3 decimals or an exponent, a repeated key or field, more than
64 args; or refuses the document, as for a repeated ``traceEvents``): those forms are plain
values for msgspec.

Each event is one msgspec record (its fields only, its ``args`` a dict), written into the
same columns with the same flags as `_kscan_json.c`: strings interned in the order the
fields of Kineto's events come (``ph``, ``cat``, ``name``, ``pid``, ``tid``, ``s``, then
the args), ``F_BAD`` where a field has a type the column route does not model (a string ts,
a null pid, args that are not an object, an integer beyond int64, ...), so that `classify`
decides on the same events. A list or object argument is kept as its JSON text (the C
scanner keeps the text as written; both decode to the same value). Time conversion is
`devices.us_to_ns`, the rule both routes share (tests/xspace/test_kineto_pyscan.py checks
the two scanners on every fixture and on hand-made events).
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

import msgspec
import numpy as np

from stepscope import limits
from stepscope.xspace.kineto.decode import _HEADER, HEADER_KEYS, HeaderOnly
from stepscope.xspace.kineto.devices import us_to_ns
from stepscope.xspace.kineto.scan import (
    A_BOOL,
    A_FLOAT,
    A_INT,
    A_JSON,
    A_NULL,
    A_STR,
    F_ARGS,
    F_BAD,
    F_DUR,
    F_GLOBAL,
    F_ID,
    F_PID_STR,
    F_TID_STR,
    F_TS,
    ScannedTrace,
    _decode_string,
    parse_memory_estimate,
)

_UNSET = msgspec.UNSET
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_DOUBLE, _BITS = struct.Struct("<d"), struct.Struct("<q")


class _Args(msgspec.Struct, gc=False):
    """An event's args with each value's text (a list or object keeps the text it was written
    as, as the C scanner keeps it)."""

    args: dict[str, msgspec.Raw] = {}


_ANY = msgspec.json.Decoder()
_RAW_ARGS = msgspec.json.Decoder(_Args)
_ENCODE = msgspec.json.encode
# The fields the columns hold (the others are skipped, as the C scanner skips them).
_FIELDS = frozenset({"ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "s"})


def scan_bytes(data: bytes, source: str, warnings: list[str]) -> ScannedTrace | None:
    """The columns of the trace JSON ``data``; JSON that msgspec refuses (damage, a BOM, NaN,
    invalid UTF-8, ...) is read by `json_repair.load_json`, which appends what it repaired to
    ``warnings`` or raises `ProfileFormatError` when it cannot. None when the document is not
    an object with a ``traceEvents`` list. `limits.ProfileTooLargeError` before parsing when
    the objects would not fit the profile limit."""
    limits.check(source, "parsing this JSON", parse_memory_estimate(data))
    try:
        doc = _HEADER.decode(data)
    except (msgspec.DecodeError, RecursionError):
        # (imported here: valid JSON, the usual case, needs no repairing reader)
        from stepscope.xspace.kineto.json_repair import load_json

        return _scan_repaired(load_json(data, source, warnings))
    events = doc.traceEvents  # type: ignore[attr-defined]
    if events is _UNSET:
        return None
    header = HeaderOnly(**{key: getattr(doc, key) for key in HEADER_KEYS})
    del doc
    return _Columns().scan(events, header)


def _scan_repaired(doc: Any) -> ScannedTrace | None:
    """The columns of a document the repairing reader made (dicts and lists)."""
    if type(doc) is not dict or type(doc.get("traceEvents")) is not list:
        return None
    events = doc.pop("traceEvents")
    header = HeaderOnly(**{key: doc.get(key, _UNSET) for key in HEADER_KEYS})
    del doc
    return _Columns().scan(events, header)


class _Columns:
    """The growing columns and string table of one scan."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.texts: list[str] = []
        self.raw: list[bytes] = []
        self.is_key = bytearray()
        self.ph = bytearray()
        self.flags = bytearray()
        self.cat = array("i")
        self.name = array("i")
        self.pid = array("i")
        self.tid = array("i")
        self.ts = array("q")
        self.dur = array("q")
        self.flow_ids = array("q")
        self.nargs = array("I")
        self.arg_key = array("i")
        self.arg_kind = array("b")
        self.arg_value = array("q")

    def intern(self, text: str, raw: bytes = b"") -> int:
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.texts)
            self.texts.append(text)
            self.raw.append(raw)
            self.is_key.append(0)
        elif raw:
            self.raw[found] = raw  # a JSON value's text (a string of that text reads the same)
        return found

    def scan(self, events: list[Any], header: Any) -> ScannedTrace:
        """``events``: the texts of the events (`msgspec.Raw`), or the events themselves."""
        decode = _ANY.decode
        for at, item in enumerate(events):
            events[at] = None  # each event's text freed once read
            event = item
            if type(item) is msgspec.Raw:
                try:
                    event = decode(item)
                except (msgspec.DecodeError, RecursionError):
                    event = None
            if type(event) is dict:
                self._event(event, item if type(item) is msgspec.Raw else None)
            else:  # not an object, or unreadable
                self._row(0, F_BAD, -1, -1, 0, 0, 0, 0, 0)
        return self._trace(header)

    def _row(
        self,
        ph: int,
        flags: int,
        cat: int,
        name: int,
        pid: int,
        tid: int,
        ts: int,
        dur: int,
        n: int,
    ) -> None:
        self.ph.append(ph)
        self.flags.append(flags)
        self.cat.append(cat)
        self.name.append(name)
        self.pid.append(pid)
        self.tid.append(tid)
        self.ts.append(ts)
        self.dur.append(dur)
        self.nargs.append(n)

    def _string(self, value: Any) -> tuple[int, int]:
        """(string id or -1, F_BAD when the value is neither a string nor null)."""
        if type(value) is str:
            return self.intern(value), 0
        if value is None or value is _UNSET:
            return -1, 0
        return -1, F_BAD

    def _id(self, value: Any, str_flag: int) -> tuple[int, int]:
        """pid / tid: (value or string id, flags)."""
        if type(value) is int:
            if _INT32_MIN <= value <= _INT32_MAX:
                return value, 0
            return 0, F_BAD  # int32 columns: wider ids are not modelled
        if type(value) is str:
            return self.intern(value), str_flag
        return 0, F_BAD  # missing, null, a float, ...

    def _event(self, event: dict[str, Any], text: msgspec.Raw | None) -> None:
        """One event's row; its strings interned in the order its fields come (the C
        scanner's order, so both number the strings alike)."""
        flags = ph = pid = tid = ts = dur = count = 0
        cat = name = -1
        for field, value in event.items():
            if field not in _FIELDS:
                continue
            if field == "ph":
                if type(value) is str:
                    self.intern(value)
                    if len(value) == 1 and ord(value) < 256:
                        ph = ord(value)
                        continue
                flags |= F_BAD
            elif field == "cat":
                cat, bad = self._string(value)
                flags |= bad
            elif field == "name":
                name, bad = self._string(value)
                flags |= bad
            elif field == "pid":
                pid, bad = self._id(value, F_PID_STR)
                flags |= bad
            elif field == "tid":
                tid, bad = self._id(value, F_TID_STR)
                flags |= bad
            elif field == "ts":
                ts, bit = _time(value, F_TS)
                flags |= bit
            elif field == "dur":
                dur, bit = _time(value, F_DUR)
                flags |= bit
            elif field == "s":
                if type(value) is str:
                    self.intern(value)
                    if value == "g":
                        flags |= F_GLOBAL
                elif value is not None:
                    flags |= F_BAD
            elif field == "id":
                if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
                    flags |= F_ID
                    self.flow_ids.append(value)
                elif value is not None:
                    flags |= F_BAD
            elif type(value) is dict:  # args
                flags |= F_ARGS
                count, bad = self._args(value, text)
                flags |= bad
            elif value is not None:
                flags |= F_BAD
        if "pid" not in event or "tid" not in event:
            flags |= F_BAD  # the per-event rules make a thread of its own ("thread None")
        self._row(ph, flags, cat, name, pid, tid, ts, dur, count)

    def _args(self, args: dict[str, Any], text: msgspec.Raw | None) -> tuple[int, int]:
        """The args' rows (``text``: the event's, read again for the text of list and object
        values; None for a repaired document's event: their JSON text is written anew)."""
        flags = 0
        raw: dict[str, msgspec.Raw] | None = None
        keys, kinds, values = self.arg_key, self.arg_kind, self.arg_value
        for key, value in args.items():
            key_id = self.intern(key)
            self.is_key[key_id] = 1
            kind = type(value)
            if kind is str:
                keys.append(key_id)
                kinds.append(A_STR)
                values.append(self.intern(value))
                continue
            if kind is int:
                if not _INT64_MIN <= value <= _INT64_MAX:
                    flags |= F_BAD
                    value = 0
                out_kind = A_INT
            elif kind is float:
                out_kind = A_FLOAT
                value = _BITS.unpack(_DOUBLE.pack(value))[0]  # float64 bits, as C keeps them
            elif kind is bool:
                out_kind = A_BOOL
                value = int(value)
            elif value is None:
                out_kind = A_NULL
                value = 0
            else:  # a list or an object: its JSON text
                if text is None:
                    written = _ENCODE(value)
                else:
                    if raw is None:
                        raw = _RAW_ARGS.decode(text).args
                    written = bytes(raw[key])
                out_kind = A_JSON
                value = self.intern(_decode_string(written), written)
            keys.append(key_id)
            kinds.append(out_kind)
            values.append(value)
        return len(args), flags

    def _trace(self, header: Any) -> ScannedTrace:
        return ScannedTrace(
            header=header,
            texts=self.texts,
            ph=np.frombuffer(self.ph, np.uint8),
            flags=np.frombuffer(self.flags, np.uint8),
            cat=np.frombuffer(self.cat, np.int32),
            name=np.frombuffer(self.name, np.int32),
            pid=np.frombuffer(self.pid, np.int32),
            tid=np.frombuffer(self.tid, np.int32),
            ts_ns=np.frombuffer(self.ts, np.int64),
            dur_ns=np.frombuffer(self.dur, np.int64),
            flow_ids=np.frombuffer(self.flow_ids, np.int64),
            nargs=np.frombuffer(self.nargs, np.uint32),
            arg_key=np.frombuffer(self.arg_key, np.int32),
            arg_kind=np.frombuffer(self.arg_kind, np.int8),
            arg_value=np.frombuffer(self.arg_value, np.int64),
            raw=self.raw,
            is_key=np.frombuffer(self.is_key, np.bool_),
        )


def _time(value: Any, present: int) -> tuple[int, int]:
    """(ns, ``present`` or F_BAD or 0) of a ``ts`` / ``dur`` field (null: absent)."""
    if value is _UNSET or value is None:
        return 0, 0
    kind = type(value)
    if kind is int or kind is float:
        ns = us_to_ns(value)
        if ns is not None:
            return ns, present
    return 0, F_BAD  # a string, a bool, out of range: the per-event rules decide
