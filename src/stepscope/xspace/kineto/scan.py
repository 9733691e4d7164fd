"""Trace JSON -> event and argument columns, by the C scanner `_kscan` (one pass, no object
per event); `fast_route` routes the columns with numpy.

Where an event holds what these columns do not model exactly (a field of an unexpected type,
an integer beyond int64, a time with more than 3 decimals, a repeated key) the scanner flags
it ``F_BAD``; where the document is not valid JSON `scan_stream` returns None. The importer
then reads the text with the Python scanner (`pyscan`: the same columns, and the forms msgspec
and the repairing reader accept), so one route reads every trace (decision 180).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from dataclasses import field
from types import ModuleType
from typing import Any

import numpy as np

from stepscope import accelerators
from stepscope.records import record
from stepscope.xspace.kineto import decode
from stepscope.xspace.wire import last_at_or_before

# Event flags and argument kinds, as _kscan.c writes them.
F_BAD, F_PID_STR, F_TID_STR, F_TS, F_DUR, F_ID, F_GLOBAL, F_ARGS = 1, 2, 4, 8, 16, 32, 64, 128
A_INT, A_FLOAT, A_STR, A_BOOL, A_NULL, A_JSON = range(6)
A_UINT = 6  # an integer in [2**63, 2**64), its int64 bits (the Python scanner's only)
# The pid / tid column of a thread without that id (null or missing; the Python scanner's,
# with F_PID_STR / F_TID_STR: no string has this id).
NO_ID = -1
# What the F_BAD events no route reads are counted as (`fast_route.classify`).
NOT_AN_OBJECT = "entries that are not objects"
MALFORMED = "malformed events (fields of unexpected types)"
MEMORY_UNFIT = "[memory] events with a value past int64 or a list as Device Type"
# Argument keys the router looks up (`ScannedTrace.arg`), indexed together.
INDEXED_KEYS = (
    "device",
    "device_id",
    "stream",
    "correlation",
    "correlation_id",
    "name",
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "est. achieved occupancy %",
    "kind",
    "bytes",
    "Bytes",
    "Device Type",
    "Device Id",
    "Addr",
    "Total Allocated",
    "Total Reserved",
)
PHASES = frozenset(b"XiIsftM")
# Bytes read per window by `scan_stream` (a window holds one read and the event it cut).
WINDOW = 4 << 20


def native() -> ModuleType | None:
    """The C scanner, or None (not built or switched off: every trace is read by the Python
    scanner, `pyscan`)."""
    return accelerators.get("_kscan")


def available() -> bool:
    return native() is not None


@record(frozen=False)
class ScannedTrace:
    """A trace as columns. Event i's arguments are ``nargs[i]`` rows, after those of the events
    before it."""

    header: dict[str, Any]
    texts: list[str]  # string id -> decoded text (a JSON argument's raw text, decoded lazily)
    ph: np.ndarray  # uint8
    flags: np.ndarray  # uint8
    cat: np.ndarray  # int32 string id, -1 absent
    name: np.ndarray  # int32 string id, -1 absent
    # int32 (the string id for a string pid; NO_ID for none); int64 from the Python scanner
    # when an id passes int32
    pid: np.ndarray
    tid: np.ndarray
    ts_ns: np.ndarray  # int64, relative to baseTimeNanoseconds
    dur_ns: np.ndarray  # int64
    flow_ids: np.ndarray  # int64, the ``id`` of the events with F_ID, in order
    nargs: np.ndarray  # uint32: argument rows per event
    arg_key: np.ndarray  # int32 string id
    arg_kind: np.ndarray  # int8 (A_*)
    arg_value: np.ndarray  # int64
    raw: list[bytes]  # string id -> raw JSON text (for A_JSON values)
    is_key: np.ndarray  # bool per string id: used as an argument key
    # Events flagged F_BAD that `fast_route.classify` counts as something other than
    # malformed: event -> what the warning calls them (the Python scanner's only: an entry
    # that is not an object, a phase that is not one character).
    odd: dict[int, str] = field(default_factory=dict)

    @property
    def n_events(self) -> int:
        return len(self.ph)

    def string_id(self, text: str) -> int:
        """Id of ``text`` (added when the trace does not hold it)."""
        index = self._ids.get(text)
        if index is None:
            index = self._ids[text] = len(self.texts)
            self.texts.append(text)
            self.raw.append(b"")
        return index

    def __post_init__(self) -> None:
        self._ids = {text: index for index, text in enumerate(self.texts)}
        self._arg_event: np.ndarray | None = None
        self._row_end: np.ndarray | None = None  # `_arg_rows`' index
        self._id_rank: np.ndarray | None = None
        self._key_rows: dict[int, np.ndarray] | None = None
        self._key_owners: dict[int, np.ndarray] = {}  # the rows' events, where C found them

    def _arg_rows(self, event: int) -> tuple[int, int]:
        """Event ``event``'s argument rows ``lo:hi``, from the running count of rows per event
        (made on first use: 8 bytes an event, against `arg_event`'s 4 bytes a row, about 13
        an event, which the C key index leaves unneeded)."""
        if self._row_end is None:
            self._row_end = np.cumsum(self.nargs, dtype=np.int64)
        hi = int(self._row_end[event])
        return hi - int(self.nargs[event]), hi

    def flow_id(self, event: int) -> int | None:
        """The integer ``id`` of an event, None when it has none."""
        if not self.flags[event] & F_ID:
            return None
        if self._id_rank is None:
            self._id_rank = np.cumsum((self.flags & F_ID) != 0) - 1
        return int(self.flow_ids[self._id_rank[event]])

    @property
    def arg_event(self) -> np.ndarray:
        """The event of each argument row (made on first use: after the text is freed)."""
        if self._arg_event is None:
            # Counts as intp: numpy's repeat converts uint32 counts element by element (4x).
            counts = self.nargs.astype(np.intp)
            self._arg_event = np.repeat(np.arange(len(self.nargs), dtype=np.int32), counts)
        return self._arg_event

    def arg(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per event: whether it has argument ``key``, its kind and value (-1 / 0 when not)."""
        n = self.n_events
        present = np.zeros(n, bool)
        kind = np.full(n, -1, np.int8)
        value = np.zeros(n, np.int64)
        index = self._ids.get(key)
        if index is not None:
            rows = self._rows_of(index)
            events = self._owners_of(index, rows)
            present[events] = True
            kind[events] = self.arg_kind[rows]
            value[events] = self.arg_value[rows]
        return present, kind, value

    def has(self, key: str) -> np.ndarray:
        """Per event: whether it has argument ``key`` with a value other than null (`arg`'s
        present and kind != A_NULL, without its kind and value columns)."""
        out = np.zeros(self.n_events, bool)
        index = self._ids.get(key)
        if index is not None:
            rows = self._rows_of(index)
            out[self._owners_of(index, rows)] = self.arg_kind[rows] != A_NULL
        return out

    def arg_at(self, key: str, events: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`arg` for ``events`` only: no n-row arrays (a 1M-event trace reads ~20 keys)."""
        m = len(events)
        present = np.zeros(m, bool)
        kind = np.full(m, -1, np.int8)
        value = np.zeros(m, np.int64)
        index = self._ids.get(key)
        if index is None or not m:
            return present, kind, value
        rows = self._rows_of(index)
        if not len(rows):
            return present, kind, value
        owners = self._owners_of(index, rows)  # ascending, as the rows
        # The last row of an event, as `arg`'s assignment keeps the last of a repeated key.
        at = last_at_or_before(owners, events)
        hit = at >= 0
        hit[hit] = owners.take(at[hit]) == events[hit]
        found = rows.take(at[hit])
        present[hit] = True
        kind[hit] = self.arg_kind.take(found)
        value[hit] = self.arg_value.take(found)
        return present, kind, value

    def _rows_of(self, key_id: int) -> np.ndarray:
        """The argument rows with key ``key_id``, ascending. The keys the router reads are
        found in one pass over the rows (instead of one pass per key)."""
        if self._key_rows is None:
            self._index_keys()
        assert self._key_rows is not None
        rows = self._key_rows.get(key_id)
        return rows if rows is not None else np.flatnonzero(self.arg_key == key_id)

    def _owners_of(self, key_id: int, rows: np.ndarray) -> np.ndarray:
        """The event of each of ``rows`` (key ``key_id``'s, from `_rows_of`)."""
        owners = self._key_owners.get(key_id)
        return owners if owners is not None else self.arg_event[rows]

    def _index_keys(self) -> None:
        """`_rows_of`'s index of the `INDEXED_KEYS` (with their rows' events, from C)."""
        wanted = [self._ids[key] for key in INDEXED_KEYS if key in self._ids]
        slot = np.full(len(self.texts), -1, np.int8)
        slot[wanted] = np.arange(len(wanted))
        # One counting pass in C, int32 rows (4 bytes a row less than flatnonzero's at the
        # import's peak).
        fast = native()
        if fast is not None and len(self.arg_key) < 2**31:
            found, owners, bounds = (
                np.frombuffer(column, dtype)
                for column, dtype in zip(
                    fast.key_rows(self.nargs, self.arg_key, slot, len(wanted)),
                    (np.int32, np.int32, np.int64),
                    strict=True,
                )
            )
            spans = bounds.tolist()
            self._key_rows = {k: found[spans[i] : spans[i + 1]] for i, k in enumerate(wanted)}
            self._key_owners = {k: owners[spans[i] : spans[i + 1]] for i, k in enumerate(wanted)}
            return
        found = np.flatnonzero(slot[self.arg_key] >= 0)
        found_slot = slot[self.arg_key[found]]
        order = np.argsort(found_slot, kind="stable")
        bounds = np.searchsorted(found_slot[order], np.arange(len(wanted) + 1))
        self._key_rows = {
            key_id: found[order[bounds[i] : bounds[i + 1]]] for i, key_id in enumerate(wanted)
        }

    def drop_args(self) -> None:
        """Free the argument rows (`arg`, `args_of` and `value` of JSON args end here)."""
        self.arg_key = np.zeros(0, np.int32)
        self.arg_kind = np.zeros(0, np.int8)
        self.arg_value = np.zeros(0, np.int64)
        self._arg_event = np.zeros(0, np.int32)
        self._row_end = None
        self._key_rows = {}
        self._key_owners = {}
        self.nargs = np.zeros(len(self.ph), np.uint32)

    def key_ids(self) -> np.ndarray:
        """The distinct argument keys (string ids), ascending."""
        return np.flatnonzero(self.is_key)

    def value(self, kind: int, value: int) -> Any:
        """The Python value of one argument (as msgspec decodes it)."""
        if kind == A_INT:
            return int(value)
        if kind == A_FLOAT:
            return float(np.int64(value).view(np.float64))
        if kind == A_STR:
            return self.texts[value]
        if kind == A_BOOL:
            return bool(value)
        if kind == A_JSON:
            return decode.loads(self.raw[value])
        if kind == A_UINT:
            return int(value) + (1 << 64)
        return None

    def args_of(self, event: int, only: frozenset[str] | None = None) -> dict[str, Any]:
        """An event's arguments as msgspec decodes them; ``only``: just these keys
        (the others' values, JSON lists among them, are not decoded)."""
        lo, hi = self._arg_rows(event)
        keys, kinds = self.arg_key[lo:hi].tolist(), self.arg_kind[lo:hi].tolist()
        values = self.arg_value[lo:hi].tolist()
        texts = self.texts
        return {
            texts[key]: self.value(kind, value)
            for key, kind, value in zip(keys, kinds, values, strict=True)
            if only is None or texts[key] in only
        }


def scan_stream(
    readinto: Callable[[memoryview], int], limit: int, window: int = WINDOW
) -> ScannedTrace | int | None:
    """Columns of the text that ``readinto`` (a file's, a `GunzipStream`'s) reads, in windows
    of ``window`` bytes (the text is never held whole), or None for the Python path (see the
    module docstring). An int instead: the memory the columns would need, once it passes
    ``limit`` (the scan stops there)."""
    fast = native()
    if fast is None:
        return None
    # What readinto raises (the inflation bound, a read error, Ctrl-C) comes out as itself.
    scanned = fast.scan_stream(readinto, limit, window)
    if scanned is None or isinstance(scanned, int):
        return scanned
    needed = _decoded_size(scanned)
    return needed if needed > limit else _trace(scanned)


def _decoded_size(scanned: tuple[bytes, list[bytes], dict[str, bytes]]) -> int:
    """The columns plus the strings once decoded (the scanner's bytes and the str beside
    them): the decoded strings count against the bound too (a 1 GiB string took 3 GB)."""
    _header, raw, columns = scanned
    text = sum(map(len, raw))
    return sum(memoryview(c).nbytes for c in columns.values()) + 2 * text + 64 * len(raw)


def _trace(scanned: tuple[bytes, list[bytes], dict[str, bytes]] | None) -> ScannedTrace | None:
    if scanned is None:
        return None
    header_text, raw, columns = scanned
    try:
        header = decode.header_of(header_text)
        texts = [_decode_string(text) for text in raw]
    except (ValueError, RecursionError):  # (UnicodeDecodeError included)
        return None
    return ScannedTrace(
        header=header,
        texts=texts,
        ph=np.frombuffer(columns["ph"], np.uint8),
        flags=np.frombuffer(columns["flags"], np.uint8),
        cat=np.frombuffer(columns["cat"], np.int32),
        name=np.frombuffer(columns["name"], np.int32),
        pid=np.frombuffer(columns["pid"], np.int32),
        tid=np.frombuffer(columns["tid"], np.int32),
        ts_ns=np.frombuffer(columns["ts"], np.int64),
        dur_ns=np.frombuffer(columns["dur"], np.int64),
        flow_ids=np.frombuffer(columns["id"], np.int64),
        nargs=np.frombuffer(columns["nargs"], np.uint32),
        arg_key=np.frombuffer(columns["key"], np.int32),
        arg_kind=np.frombuffer(columns["kind"], np.int8),
        arg_value=np.frombuffer(columns["value"], np.int64),
        raw=raw,
        is_key=np.frombuffer(columns["is_key"], np.bool_),
    )


def count_byte(data: bytes | mmap.mmap, byte: bytes) -> int:
    """``data.count(byte)`` for a one-byte ``byte``, 4-5x faster: numpy compares 1 MiB blocks
    (bytes.count runs a general substring search, about 2 GB/s)."""
    view = np.frombuffer(data, np.uint8)
    value = byte[0]
    block = 1 << 20
    return sum(
        int(np.count_nonzero(view[at : at + block] == value)) for at in range(0, len(view), block)
    )


def parse_memory_estimate(data: bytes) -> int:
    """Bytes of Python objects parsing ``data`` may create, from a linear count (checked before
    any parser runs: `pyscan.scan_bytes`).

    Per token, measured on CPython 3.11: a dict 72 bytes, a list 64, a value in a container
    about 40 (counted by its comma), a string 50 (25 per quote), plus the text itself. Real
    Kineto traces measure 3x their size and this gives 4-6x; crafted files of empty
    containers (20x) are bounded too.
    """
    return (
        2 * len(data)
        + 72 * count_byte(data, b"{")
        + 64 * count_byte(data, b"[")
        + 40 * count_byte(data, b",")
        + 25 * count_byte(data, b'"')
    )


def _decode_string(raw: bytes) -> str:
    """The text of an interned string: a JSON string's body, or the JSON text of a list or
    object argument (interned with the strings: its escapes are not a string's)."""
    if b"\\" in raw:
        try:
            text = decode.loads(b'"' + raw + b'"')
        except ValueError:
            if raw[:1] not in (b"[", b"{"):
                raise
            decode.loads(raw)  # a list or object: valid JSON, else the error stands
            return raw.decode("utf-8")
        assert isinstance(text, str)
        return text
    return raw.decode("utf-8")


def first_seen(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group per element, first element of each group), groups numbered in order of first
    appearance, for rows made of the given integer columns."""
    n = len(columns[0])
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    key = np.zeros(n, np.int64)
    span = 1
    for column in columns:
        column = np.asarray(column)
        low, high = int(column.min()), int(column.max())
        width = high - low + 1
        if span * width >= 1 << 62 and width > n:  # too wide to combine (pids): dense codes
            # (only then: each np.unique makes several full-size temporaries)
            column = np.unique(column, return_inverse=True)[1].reshape(-1)
            low, width = 0, int(column.max()) + 1
        if span * width >= 1 << 62:
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            span = int(key.max()) + 1
        # key * width + (column - low), in place (no full-size temporaries); the order of
        # the two additions keeps every partial sum within int64.
        key *= width
        if low > 0:
            key -= low
        key += column
        if low < 0:
            key -= low
        span *= width
    if span <= 4 * n:
        return _first_seen_dense(key, span)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)], np.sort(first)


def _first_seen_dense(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """`first_seen` of keys in ``[0, span)`` by a table per key value instead of a sort (no
    sorted copy, permutation or inverse of the whole column)."""
    n = len(key)
    first_at = np.full(span, n, np.int64)
    np.minimum.at(first_at, key, np.arange(n, dtype=np.int64))
    first = np.sort(first_at[first_at < n])  # ascending first elements: the groups' order
    del first_at
    group_of = np.zeros(span, np.int64)
    group_of[key[first]] = np.arange(len(first))
    return group_of.take(key), first
