"""The trace viewer's binary response format ("STV1"): a JSON header plus typed arrays.

    bytes 0-3   magic b"STV1"
    bytes 4-7   header length H, uint32 little-endian
    bytes 8..   the header: UTF-8 JSON, padded with spaces to a multiple of 8 bytes
    then        the arrays, little-endian, each starting at a multiple of 8 bytes

The header's ``arrays`` lists ``{"name", "dtype", "offset", "length"}`` (offset in bytes from
the start of the buffer, length in elements); dtypes are NumPy codes ``i1 u1 i4 u4 f4 f8``,
i.e. the browser's Int8Array, Uint8Array, Int32Array, Uint32Array, Float32Array and
Float64Array. The aligned layout lets the page view the arrays in place, without copying or
parsing, which is what keeps a 30,000-event window cheap on both ends.

The compact form (`compact`, asked with ``form=compact``) is the same container with arrays
stored narrower (also ``i2 u2``, and ``u3``: the low 16 bits of each value, then the high 8)
and an entry's ``as``/``enc`` fields saying how to widen them back; `decode` widens them, so
both forms decode to the same arrays.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from stepscope.tools.trace_viewer import compact

MAGIC = b"STV1"
CONTENT_TYPE = "application/x-stepscope-trace"
_DTYPES = compact.DTYPES


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _size(code: str) -> int:
    return 3 if code == "u3" else np.dtype(_DTYPES[code]).itemsize


def encode(
    header: dict[str, Any], arrays: dict[str, tuple[str, np.ndarray]], form: str = "plain"
) -> bytes:
    """``arrays``: name -> (dtype code, values); ``form``: `compact.FORMS`."""
    if form == "compact":
        stored = {name: compact.choose(code, values) for name, (code, values) in arrays.items()}
    else:
        stored = {name: (code, values, {}) for name, (code, values) in arrays.items()}
    listed: list[dict[str, Any]] = []
    offset = 0
    for name, (code, values, extra) in stored.items():
        length = len(arrays[name][1])
        listed.append({"name": name, "dtype": code, "offset": offset, "length": length, **extra})
        offset += _pad8(len(values) * _size(code))
    # Offsets depend on the header's length and the header lists the offsets: fix the
    # header size with a generous width for the numbers, then shift.
    text = json.dumps({**header, "arrays": listed}, separators=(",", ":"), allow_nan=False)
    base = 8 + _pad8(len(text.encode()) + 16 * len(listed) + 16)
    for item in listed:
        item["offset"] += base
    raw_header = json.dumps(
        {**header, "arrays": listed}, separators=(",", ":"), allow_nan=False
    ).encode()
    raw_header += b" " * (base - 8 - len(raw_header))
    # Each array is converted straight into its place (a full view is 6 MB: no blob per
    # array and no join of them).
    out = bytearray(base + offset)
    out[:base] = MAGIC + struct.pack("<I", len(raw_header)) + raw_header
    for item, (code, values, extra) in zip(listed, stored.values(), strict=True):
        if extra:  # the compact form: cast (less its base) into place
            base = extra["base"] if extra.get("enc") == "base" else 0
            compact.write(out, item["offset"], code, values, base)
            continue
        dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
        np.frombuffer(out, dtype=dtype, count=len(values), offset=item["offset"])[:] = values
    return bytes(out)


def decode(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and arrays of an encoded response (tests and Python clients)."""
    if data[:4] != MAGIC:
        raise ValueError("not a stepscope trace response")
    (size,) = struct.unpack("<I", data[4:8])
    header = json.loads(data[8 : 8 + size])
    return header, {item["name"]: _array(data, item) for item in header["arrays"]}


def _array(data: bytes, item: dict[str, Any]) -> np.ndarray:
    """One array of a response, widened to its plain dtype when stored compact."""
    code, n = item["dtype"], item["length"]
    if "enc" not in item:
        dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
        return np.frombuffer(data, dtype=dtype, count=n, offset=item["offset"])
    count = 0 if item["enc"] == "runs" else n
    if code == "u3":  # n low halves (u2), then n high bytes
        low = np.frombuffer(data, "<u2", count=count, offset=item["offset"])
        high = np.frombuffer(data, np.uint8, count=count, offset=item["offset"] + 2 * count)
        values = low.astype(np.int64) | (high.astype(np.int64) << 16)
    else:
        dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
        values = np.frombuffer(data, dtype=dtype, count=count, offset=item["offset"])
    plain = np.dtype(_DTYPES[item["as"]]).newbyteorder("<")
    return compact.widen(item, values, plain)
