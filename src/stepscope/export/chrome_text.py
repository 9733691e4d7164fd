"""Columnar JSON text for the Chrome-trace writer: numpy string arrays, no per-event Python.

Numpy selects and orders the pieces of a chunk (string ids to their JSON text, stats to
their event, commas); Python's C-level ``%`` formatting, driven by ``map`` over whole columns,
fills each event's template, and one ``join`` writes the chunk.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import numpy as np

from stepscope.model import Profile
from stepscope.xspace.wire import KIND_BYTES, KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT


def objects(values: list[Any]) -> np.ndarray:
    """A 1-D object array of ``values`` (numpy would nest lists or pick a string dtype)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class StringTexts:
    """JSON text (quoted, escaped) of interned strings, looked up by id for whole columns."""

    def __init__(self, profile: Profile, cache: dict[int, str]) -> None:
        self.profile = profile
        self.cache = cache

    def of(self, ids: np.ndarray) -> np.ndarray:
        """Object array of the JSON text of each string id in ``ids``."""
        unique, inverse = np.unique(ids, return_inverse=True)
        cache, strings = self.cache, self.profile.strings
        found = []
        for string_id in unique.tolist():
            shown = cache.get(string_id)
            if shown is None:
                shown = cache[string_id] = json.dumps(strings[string_id])
            found.append(shown)
        return objects(found)[inverse]


def stat_values(
    kind: np.ndarray, value: np.ndarray, strings: StringTexts
) -> tuple[np.ndarray, list[str]]:
    """How each stat value is spelled: (code, text) with code 0 = ``value`` as int64, 1 = as
    uint64, 2 = the JSON text in ``text`` (strings, doubles; "" where code < 2)."""
    code = np.full(len(kind), 2, dtype=np.int64)
    code[kind == KIND_INT] = 0
    code[kind == KIND_UINT] = 1
    out = np.full(len(kind), "", dtype=object)
    textual = (kind == KIND_STR) | (kind == KIND_BYTES)
    if textual.any():
        out[textual] = strings.of(value[textual])
    double = kind == KIND_DOUBLE
    if double.any():
        # Python's float repr is the JSON spelling the reference writer uses.
        numbers = value[double].view(np.float64).tolist()
        out[double] = [json.dumps(x) if math.isfinite(x) else f'"{x}"' for x in numbers]
    return code, out.tolist()


class EventColumns(NamedTuple):
    """One chunk of "X" events of one line, ready to print (see ``format_events``)."""

    prefix: str  # ',\n{"ph":"X","pid":P,"tid":T,"ts":'
    start_us_ns: np.ndarray  # int64 nanoseconds from the origin
    dur_ns: np.ndarray
    cats: list[str]  # JSON text, one per event
    names: list[str]
    metas: list[str]  # the metadata's args text ("" for none)
    tails: list[str]  # after the event's pairs: device/stream args and the closing braces
    pair_count: np.ndarray  # int64 number of stat pairs of each event
    comma: np.ndarray  # int64 1 where a pair takes a leading comma
    keys: list[str]  # JSON text of each pair's key
    code: np.ndarray  # int64: 0 int64 value, 1 uint64 value, 2 text
    value: np.ndarray  # int64 raw stat values
    text: list[str]  # JSON text of code-2 values


def format_events(c: EventColumns) -> str:
    """The chunk's text (chrome_reference's, byte for byte)."""
    shown: list[object] = c.value.tolist()
    unsigned = np.flatnonzero(c.code == 1)
    for i, v in zip(unsigned.tolist(), c.value[unsigned].view(np.uint64).tolist(), strict=True):
        shown[i] = v
    for i in np.flatnonzero(c.code == 2).tolist():
        shown[i] = c.text[i]
    pairs = list(
        map(
            "%s%s:%s".__mod__,
            zip(np.where(c.comma != 0, ",", "").tolist(), c.keys, shown, strict=True),
        )
    )
    template = c.prefix + '%d.%03d,"dur":%d.%03d,"cat":%s,"name":%s,"args":{%s'
    start, dur = c.start_us_ns, c.dur_ns  # >= 0 (the C version also signs negatives)
    heads = list(
        map(
            template.__mod__,
            zip(
                (start // 1000).tolist(),
                (start % 1000).tolist(),
                (dur // 1000).tolist(),
                (dur % 1000).tolist(),
                c.cats,
                c.names,
                c.metas,
                strict=True,
            ),
        )
    )
    owner = np.repeat(np.arange(len(heads)), c.pair_count)
    return interleave(heads, pairs, owner, c.tails)


def format_flows(
    ids: np.ndarray,
    cat: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    ts_ns: np.ndarray,
    cats: list[str],
) -> str:
    """Flow events ("s" then "f" per flow; pid/tid/ts_ns hold both ends interleaved)."""
    template = ',\n{"ph":"%s","id":%d,"cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%d.%03d%s}'
    n = len(ids)
    names = [cats[k] for k in cat.tolist()]
    twice = lambda values: [v for v in values for _ in (0, 1)]  # noqa: E731
    names2 = twice(names)
    return "".join(
        map(
            template.__mod__,
            zip(
                ["s", "f"] * n,
                twice(ids.tolist()),
                names2,
                names2,
                pid.tolist(),
                tid.tolist(),
                (ts_ns // 1000).tolist(),  # >= 0: the origin is the earliest start
                (ts_ns % 1000).tolist(),
                ["", ',"bp":"e"'] * n,
                strict=True,
            ),
        )
    )


def interleave(heads: list[str], items: list[str], owner: np.ndarray, tails: list[str]) -> str:
    """``heads[i]``, then the items owned by record ``i`` (``owner`` sorted), then ``tails[i]``."""
    n = len(heads)
    before = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=before[1:])
    out = np.empty(2 * n + len(items), dtype=object)
    records = np.arange(n)
    out[2 * records + before[:-1]] = heads
    out[2 * owner + 1 + np.arange(len(items))] = items
    out[2 * records + 1 + before[1:]] = tails
    return "".join(out.tolist())
