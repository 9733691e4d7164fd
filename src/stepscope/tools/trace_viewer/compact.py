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
DTYPES = {  # the stored arrays' codes, NumPy types (wire.py reads them too)
    "i1": np.int8,
    "u1": np.uint8,
    "i2": np.int16,
    "u2": np.uint16,
    "i4": np.int32,
    "u4": np.uint32,
    "f4": np.float32,
    "f8": np.float64,
}
_PLAIN_SIZE = {code: np.dtype(kind).itemsize for code, kind in DTYPES.items()}


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


def _steps(ints: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``ints[i] - ints[i - 1]`` (0 first), in the values' own signed type where no step can
    overflow it (one pass, no conversion)."""
    dtype = ints.dtype
    if dtype.kind == "u" or hi - lo >= 1 << (8 * dtype.itemsize - 1):
        dtype = np.dtype(np.int64)
    steps = np.empty(len(ints), dtype=dtype)
    steps[0] = 0
    np.subtract(ints[1:], ints[:-1], out=steps[1:], dtype=dtype, casting="unsafe")
    return steps


def _outside(steps: np.ndarray, low: int, high: int, step_lo: int, step_hi: int) -> np.ndarray:
    """Positions of the steps outside [low, high] (only the sides that have any)."""
    if step_lo < low and step_hi > high:
        return np.flatnonzero((steps < low) | (steps > high))
    return np.flatnonzero(steps < low) if step_lo < low else np.flatnonzero(steps > high)


def _sampled_steps(ints: np.ndarray) -> np.ndarray:
    """About 2,048 of the steps ``ints[i] - ints[i - 1]``, evenly spaced (int64): what rules
    a coding out before a full pass over the array would."""
    every = max(1, len(ints) // 2048)
    return ints[every::every].astype(np.int64) - ints[every - 1 : -1 : every]


def choose(code: str, values: np.ndarray) -> tuple[str, np.ndarray, dict[str, Any]]:
    """(stored dtype, the values `write` stores, the entry's extra fields) of one array.
    A sample of the steps rules out the codings that cannot pay, then full passes check the
    rest: coding the 190k events of a near-full window costs the server about what the
    plain form's conversion to float64 does."""
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
    best_size, chosen = n * _PLAIN_SIZE[code], plain
    stored, size = _fitting(_UNSIGNED, 0, hi - lo)
    if stored and n * size < best_size:
        best_size = n * size
        chosen = (stored, ints, {**entry, "enc": "base", "base": lo})
    sample = _sampled_steps(ints)
    if np.count_nonzero(sample) < MAX_LISTED:  # perhaps few runs: count them
        changed = np.flatnonzero(ints[1:] != ints[:-1]) + 1
        if len(changed) < MAX_LISTED and (len(changed) + 1) * _RUN_BYTES < min(n, best_size):
            ends = [*changed.tolist(), n]
            entry.update(enc="runs", runs=[[e, int(ints[e - 1])] for e in ends])
            return code, ints[:0], entry
    every = max(1, n // 2048)
    plausible = [
        kind
        for kind in _BY_SIZE
        if n * kind[1] < best_size
        and every * np.count_nonzero((sample < kind[2]) | (sample > kind[3])) <= MAX_LISTED
    ]
    if not plausible:
        return chosen
    steps = _steps(ints, lo, hi)
    step_lo, step_hi = int(steps.min()), int(steps.max())
    best_delta: tuple[str, np.ndarray] | None = None
    for name, size, low, high in plausible:
        if n * size >= best_size:
            break
        if low <= step_lo and step_hi <= high:
            outside = np.zeros(0, dtype=np.int64)
        elif step_hi < low or step_lo > high:
            continue
        else:
            outside = _outside(steps, low, high, step_lo, step_hi)
        cost = n * size + len(outside) * _RUN_BYTES
        if len(outside) <= MAX_LISTED and cost < best_size:
            best_size, best_delta = cost, (name, outside)
    if best_delta is None:
        return chosen
    name, outside = best_delta
    steps[outside] = 0
    patches = [[i, int(ints[i])] for i in outside.tolist()]
    return name, steps, {**entry, "enc": "delta", "base": int(ints[0]), "patches": patches}


def write(out: bytearray, offset: int, code: str, values: np.ndarray, base: int = 0) -> None:
    """``values - base`` into ``out`` at ``offset`` as ``code`` (little-endian; ``u3``: the
    low 16 bits of each as u2, then the high 8 bits of each as u1). Each part is cast as it
    is written: no converted copy of the array first."""
    n = len(values)
    if code == "u3":
        low = np.frombuffer(out, "<u2", count=n, offset=offset)
        high = np.frombuffer(out, np.uint8, count=n, offset=offset + 2 * n)
        shifted = np.subtract(values, base) if base else values
        np.copyto(low, shifted, casting="unsafe")  # modulo 2**16
        np.right_shift(shifted, 16, out=high, casting="unsafe")
        return
    place = np.frombuffer(out, np.dtype(DTYPES[code]).newbyteorder("<"), count=n, offset=offset)
    if base:
        np.subtract(values, base, out=place, casting="unsafe")
    else:
        np.copyto(place, values, casting="unsafe")


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
