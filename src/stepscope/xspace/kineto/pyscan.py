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
the args). Where the C scanner leaves a field of an unexpected type to this one, the field
is read as the Kineto rules of decision 210 say (a ts that is not a number: untimed; a
null or missing pid / tid: a thread without that id; a cat or name: its text; ...); the
events no route reads are flagged ``F_BAD`` (not an object, a phase that is not one
character, a pid / tid that is neither an integer, a string nor null, an argument integer
beyond int64), and `classify` counts them. A list or object argument is kept as its JSON
text (the C scanner keeps the text as written; both decode to the same value). Time
conversion is `devices.us_to_ns` (tests/xspace/test_kineto_pyscan.py checks the two
scanners on every fixture and on hand-made events).
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

import msgspec
import numpy as np

from stepscope import limits
from stepscope.xspace.kineto.decode import _HEADER, HEADER_KEYS, header_dict
from stepscope.xspace.kineto.devices import us_to_ns
from stepscope.xspace.kineto.scan import (
    A_BOOL,
    A_FLOAT,
    A_INT,
    A_JSON,
    A_NULL,
    A_STR,
    A_UINT,
    F_ARGS,
    F_BAD,
    F_DUR,
    F_GLOBAL,
    F_ID,
    F_PID_STR,
    F_TID_STR,
    F_TS,
    MALFORMED,
    MEMORY_UNFIT,
    NO_ID,
    NOT_AN_OBJECT,
    ScannedTrace,
    _decode_string,
    parse_memory_estimate,
)

_UNSET = msgspec.UNSET
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_DOUBLE, _BITS = struct.Struct("<d"), struct.Struct("<q")
_LONGEST_NS = (1 << 62) - 1  # (with a start within +-2**62 the end still fits int64)


class _Args(msgspec.Struct, gc=False):
    """An event's args with each value's text (a list or object keeps the text it was written
    as, as the C scanner keeps it)."""

    args: dict[str, msgspec.Raw] = {}


_ANY = msgspec.json.Decoder()
_RAW_ARGS = msgspec.json.Decoder(_Args)
_ENCODE = msgspec.json.encode
# The fields the columns hold (the others are skipped, as the C scanner skips them).
_FIELDS = frozenset({"ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "s"})
_INSTANT = (ord("i"), ord("I"))
_KINETO_ORDER = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "s", "args")
# An event whose other fields msgspec cannot hold (a number past float64 ...) is read by
# these fields alone, as the C scanner skips the others.
_FIELDS_ONLY = msgspec.json.Decoder(
    msgspec.defstruct("_Fields", [(name, Any, _UNSET) for name in _KINETO_ORDER])
)


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
    events = doc.traceEvents
    if events is _UNSET:
        return None
    header = header_dict(doc)
    del doc
    return _Columns().scan(events, header)


def _scan_repaired(doc: Any) -> ScannedTrace | None:
    """The columns of a document the repairing reader made (dicts and lists)."""
    if type(doc) is not dict or type(doc.get("traceEvents")) is not list:
        return None
    events = doc.pop("traceEvents")
    header = {key: doc[key] for key in HEADER_KEYS if key in doc}
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
        self.odd: dict[int, str] = {}

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
                    event = _fields_only(item)
            if type(event) is dict:
                self._event(event, item if type(item) is msgspec.Raw else None)
                continue
            # Not an object, or unreadable (a number msgspec cannot hold): read by no route.
            self.odd[len(self.ph)] = NOT_AN_OBJECT if event is not None else MALFORMED
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
        try:
            self.pid.append(pid)
            self.tid.append(tid)
        except OverflowError:  # an id past int32: both columns widen to int64 (rare)
            if self.pid.typecode == "i":
                self.pid, self.tid = array("q", self.pid), array("q", self.tid)
            if len(self.pid) > len(self.tid):
                self.tid.append(tid)
            else:
                self.pid.append(pid)
                self.tid.append(tid)
        self.ts.append(ts)
        self.dur.append(dur)
        self.nargs.append(n)

    def _string(self, value: Any) -> int:
        """cat / name: string id, -1 for null; another value is read as its text (`str`), as
        the importer always named such events and categories (decision 210)."""
        if type(value) is str:
            return self.intern(value)
        if value is None:
            return -1
        return self.intern(str(value))

    def _id(self, value: Any, str_flag: int) -> tuple[int, int]:
        """pid / tid: (value or string id, flags). A string's id has ``str_flag``; so has null
        (id -1: a thread without that id, told apart from every other); an integer within
        int64 is itself (past int32 the columns widen: stepscope's own Chrome export writes
        such thread ids); another value is F_BAD (decision 210)."""
        if type(value) is int:
            if _INT64_MIN <= value <= _INT64_MAX:
                return value, 0
            return 0, F_BAD
        if type(value) is str:
            return self.intern(value), str_flag
        if value is None:
            return NO_ID, str_flag
        return 0, F_BAD  # a float, a bool, a list, ...

    def _event(self, event: dict[str, Any], text: msgspec.Raw | None) -> None:
        """One event's row; its strings interned in the order its fields come (the C
        scanner's order, so both number the strings alike)."""
        flags = ph = pid = tid = ts = dur = count = 0
        args_past_64_bits = False
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
                if value is not None:  # (null: no phase, as a missing one)
                    self.odd[len(self.ph)] = f"events of unsupported phase {str(value)[:20]!r}"
                    flags |= F_BAD
            elif field == "cat":
                cat = self._string(value)
            elif field == "name":
                name = self._string(value)
            elif field == "pid":
                pid, bits = self._id(value, F_PID_STR)
                flags |= bits
            elif field == "tid":
                tid, bits = self._id(value, F_TID_STR)
                flags |= bits
            elif field == "ts":
                ns = _time(value)
                if ns is not None:
                    ts = ns
                    flags |= F_TS
            elif field == "dur":
                ns = _duration(value)
                if ns is not None:
                    dur = ns
                    flags |= F_DUR
            elif field == "s":
                if type(value) is str:  # (another value: not global, as any other string)
                    self.intern(value)
                    if value == "g":
                        flags |= F_GLOBAL
            elif field == "id":  # (another value than an int64: no flow id)
                if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
                    flags |= F_ID
                    self.flow_ids.append(value)
            elif type(value) is dict:  # args (another value: none)
                flags |= F_ARGS
                count, bad = self._args(value, text)
                flags |= bad
                args_past_64_bits = bad != 0
        for field, bit in (("pid", F_PID_STR), ("tid", F_TID_STR)):
            if field not in event:  # a thread without that id, as null
                flags |= bit
                if bit == F_PID_STR:
                    pid = NO_ID
                else:
                    tid = NO_ID
        if args_past_64_bits and ph in _INSTANT and event.get("name") == "[memory]":
            self.odd.setdefault(len(self.ph), MEMORY_UNFIT)  # (decision 184's words)
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
                out_kind = A_INT
                if not _INT64_MIN <= value <= _INT64_MAX:
                    if _INT64_MAX < value < 1 << 64:  # uint64, XSpace's other integer
                        out_kind, value = A_UINT, value - (1 << 64)
                    else:  # no stat holds it: the event is malformed
                        flags |= F_BAD
                        value = 0
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
            pid=np.frombuffer(self.pid, np.int32 if self.pid.typecode == "i" else np.int64),
            tid=np.frombuffer(self.tid, np.int32 if self.tid.typecode == "i" else np.int64),
            ts_ns=np.frombuffer(self.ts, np.int64),
            dur_ns=np.frombuffer(self.dur, np.int64),
            flow_ids=np.frombuffer(self.flow_ids, np.int64),
            nargs=np.frombuffer(self.nargs, np.uint32),
            arg_key=np.frombuffer(self.arg_key, np.int32),
            arg_kind=np.frombuffer(self.arg_kind, np.int8),
            arg_value=np.frombuffer(self.arg_value, np.int64),
            raw=self.raw,
            is_key=np.frombuffer(self.is_key, np.bool_),
            odd=self.odd,
        )


def _fields_only(item: msgspec.Raw) -> dict[str, Any] | None:
    """The event's fields of `_FIELDS` (None: not an object, or one of these unreadable)."""
    try:
        fields = _FIELDS_ONLY.decode(item)
    except (msgspec.DecodeError, RecursionError):
        return None
    values = {name: getattr(fields, name) for name in _KINETO_ORDER}
    return {name: value for name, value in values.items() if value is not _UNSET}


def _time(value: Any) -> int | None:
    """ns of a ``ts``; None (no valid timestamp) when it is not a number within +-2**62 ns
    (`us_to_ns`: a numeric string is read as its number; decision 210)."""
    return us_to_ns(value)


def _duration(value: Any) -> int | None:
    """ns of a ``dur``: as `_time` (None: read as 0); an integer past +-2**62 ns is read as
    the nearest the int64 times hold (a negative one counts as 0 anyway), so that the event
    is still skipped as lasting too long or ending beyond the limits (decision 210)."""
    ns = us_to_ns(value)
    if ns is None and type(value) is int:
        return _LONGEST_NS if value > 0 else 0
    return ns
