"""The compact form of a trace window (``form=compact``): the same arrays, fewer bytes.

The plain STV1 answer stores each array in the type the page reads (a near-full window of
the 10.6M-event trace: 190k events, 32 bytes each, 6.2 MB). The page asks for this form
instead (decision 327): each array whose values are whole numbers is stored in the narrowest
of a few codings that holds them exactly, and the page (``_trace_data.js``) or `decode`
widens it back into the type the plain answer has, value for value:

- ``base``: ``value = base + stored`` (stored unsigned: durations, depths, names);
- ``delta``: ``value[i] = value[i - 1] + stored[i]``, ``value[-1] = base``, except at the
  few ``patches`` ``[i, value]`` where the step does not fit (event ids, ascending; starts,
  ascending along each line, reset where the line changes);
- ``runs``: no stored bytes, ``runs`` lists ``[end, value]`` (lines: events come by line).

Stored types are ``u1 i1 u2 i2 u4 i4`` (typed arrays) and ``u3`` (three bytes little-endian,
read byte by byte: a delta or duration under 2^24 ns, 16.7 ms, is most of a window). An
entry so stored says ``as`` (the plain dtype) beside ``enc``; anything else (fractional
values, short arrays) is stored plain, as in the default answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FORMS = ("plain", "compact")
MIN_LENGTH = 16  # shorter arrays are stored plain: a coding's header costs more than it saves
MAX_LISTED = 64  # patches or runs listed in the header, at most, per array
_RUN_BYTES = 16  # what a listed run or patch costs in the header's JSON, about
_SAFE = 1 << 53  # integers a float64 (the page's Float64Array) holds exactly

# Stored types, cheapest first, with their (inclusive) ranges.
_UNSIGNED = (
    ("u1", 1, 0, 0xFF),
    ("u2", 2, 0, 0xFFFF),
    ("u3", 3, 0, 0xFFFFFF),
    ("u4", 4, 0, 0xFFFFFFFF),
)
_SIGNED = (("i1", 1, -0x80, 0x7F), ("i2", 2, -0x8000, 0x7FFF), ("i4", 4, -(1 << 31), (1 << 31) - 1))
_BY_SIZE = sorted(_UNSIGNED + _SIGNED, key=lambda kind: kind[1])  # unsigned first at a size
_PLAIN_SIZE = {"i1": 1, "u1": 1, "i2": 2, "u2": 2, "i4": 4, "u4": 4, "f4": 4, "f8": 8}


def form_of(params: Any) -> str:
    """The ``form`` a window request asks for (default ``plain``)."""
    form = params.get("form", "") or "plain"
    if form not in FORMS:
        raise ValueError(f"parameter 'form' must be 'plain' or 'compact', not {form[:20]!r}")
    return str(form)


def _whole(values: np.ndarray) -> np.ndarray | None:
    """``values`` as integers (as they are when they are), when each is a whole number a
    float64 (the page's Float64Array) holds exactly; else None. The window's times come as
    int64 (``start_ns - origin``): no copy, no check beyond the range."""
    if values.dtype.kind in "iu":
        return values
    lo, hi = values.min(), values.max()  # NaN makes both NaN, and fails the next test
    if not (-_SAFE < lo <= hi < _SAFE):
        return None
    ints = values.astype(np.int64)
    return ints if np.array_equal(ints, values) else None


def _fitting(kinds: tuple[tuple[str, int, int, int], ...], lo: int, hi: int) -> tuple[str, int]:
    for name, size, low, high in kinds:
        if low <= lo and hi <= high:
            return name, size
    return "", 0


def choose(code: str, values: np.ndarray) -> tuple[str, np.ndarray, dict[str, Any]]:
    """(stored dtype, stored values, the entry's extra fields) of one array. A few passes
    over it, each a reduction where it can be (the server codes a computed window's
    190k events in about a millisecond)."""
    values = np.asarray(values)
    n = len(values)
    plain: tuple[str, np.ndarray, dict[str, Any]] = (code, values, {})
    ints = _whole(values) if n >= MIN_LENGTH else None
    if ints is None:
        return plain
    lo, hi = int(ints.min()), int(ints.max())
    if code in ("f4", "f8") and not -_SAFE < lo <= hi < _SAFE:
        return plain
    entry: dict[str, Any] = {"as": code}
    changed = ints[1:] != ints[:-1]
    n_runs = np.count_nonzero(changed) + 1
    if n_runs <= MAX_LISTED and n_runs * _RUN_BYTES < n:
        ends = [*(np.flatnonzero(changed) + 1).tolist(), n]
        entry.update(enc="runs", runs=[[e, int(ints[e - 1])] for e in ends])
        return code, ints[:0], entry
    best_size = n * _PLAIN_SIZE[code]
    chosen = plain
    stored, size = _fitting(_UNSIGNED, 0, hi - lo)
    if stored and n * size < best_size:
        best_size = n * size
        chosen = (stored, ints - lo if lo else ints, {**entry, "enc": "base", "base": lo})
    if best_size <= n:
        return chosen
    wide = np.int64 if hi - lo >= 1 << 31 else np.int32
    steps: np.ndarray[Any, np.dtype[np.signedinteger[Any]]] = np.empty(n, dtype=wide)
    steps[0] = 0
    np.subtract(ints[1:], ints[:-1], out=steps[1:], dtype=wide, casting="unsafe")
    step_lo, step_hi = int(steps.min()), int(steps.max())
    best_delta: tuple[str, np.ndarray] | None = None
    for name, size, low, high in _BY_SIZE:
        if n * size >= best_size:
            break
        if low <= step_lo and step_hi <= high:
            outside = np.zeros(0, dtype=np.int64)
        elif step_hi < low or step_lo > high:
            continue
        else:
            outside = np.flatnonzero((steps < low) | (steps > high))
        cost = n * size + len(outside) * _RUN_BYTES
        if len(outside) <= MAX_LISTED and cost < best_size:
            best_size, best_delta = cost, (name, outside)
    if best_delta is None:
        return chosen
    name, outside = best_delta
    steps[outside] = 0
    patches = [[i, int(ints[i])] for i in outside.tolist()]
    return name, steps, {**entry, "enc": "delta", "base": int(ints[0]), "patches": patches}


def widen(entry: dict[str, Any], stored: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The plain array of an entry stored by `choose` (tests and Python clients)."""
    n = int(entry["length"])
    enc = entry.get("enc")
    if enc == "runs":
        out = np.empty(n, dtype=np.int64)
        start = 0
        for end, value in entry["runs"]:
            out[start:end] = value
            start = end
    elif enc == "base":
        out = stored.astype(np.int64) + int(entry["base"])
    elif enc == "delta":
        steps = stored.astype(np.int64)
        # value[i] = the last patch at or before i (or base) + the steps after it up to i
        anchors = np.full(n, -1, dtype=np.int64)
        anchor_values = [int(entry["base"])]
        for k, (i, value) in enumerate(entry["patches"], start=1):
            anchors[i] = k
            anchor_values.append(int(value))
        anchor = np.maximum.accumulate(np.maximum(anchors, 0))
        sums = np.cumsum(steps)
        at = np.array([0] + [i for i, _ in entry["patches"]], dtype=np.int64)
        out = np.asarray(anchor_values)[anchor] + sums - sums[at[anchor]]
        out[at[1:]] = np.asarray(anchor_values[1:], dtype=np.int64)
    else:
        return stored
    return out.astype(dtype)
