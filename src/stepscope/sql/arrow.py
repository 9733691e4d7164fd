"""Arrow columns over the profile's NumPy columns, copied as little as possible.

Strings stay interned: a text column is a dictionary array whose indices are the profile's
own int32 string ids (``Profile.name`` is passed as it is) and whose dictionary is the
profile's string table, converted once per profile. Number columns are the NumPy arrays
themselves (Arrow wraps their buffers); absent values are a validity bitmap beside them.

Arrays are made from buffers (``Array.from_buffers``), never with ``pa.array``/``pa.scalar``:
those look for pandas objects and import pandas when it is installed (0.8 s, more than a
cold query of 266k events costs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.model import Profile


def _bitmap(present: np.ndarray | None) -> pa.Buffer | None:
    import pyarrow as pa

    if present is None:
        return None
    return pa.py_buffer(np.packbits(np.asarray(present, dtype=bool), bitorder="little"))


def numbers(values: np.ndarray, present: np.ndarray | None = None) -> pa.Array:
    """A numeric (or bool) column over ``values``' buffer, NULL where ``present`` is False."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if present is not None and present.all():
        present = None
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(values), [_bitmap(present), data])
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [_bitmap(present), pa.py_buffer(values)])


def utf8(texts: Sequence[str | None]) -> pa.Array:
    """Texts as an Arrow string array (None: NULL). Bytes stats are kept as text with their
    undecodable bytes escaped (surrogates); Arrow takes UTF-8 only, so those read as U+FFFD."""
    import pyarrow as pa

    encoded = []
    for text in texts:
        if text is None:
            encoded.append(b"")
            continue
        try:
            encoded.append(text.encode("utf-8"))
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogateescape")
            encoded.append(raw.decode("utf-8", "replace").encode("utf-8"))
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    total = int(lengths.sum())
    large = total >= 2**31
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    missing = [i for i, t in enumerate(texts) if t is None]
    present = None
    if missing:
        present = np.ones(len(encoded), dtype=bool)
        present[missing] = False
    kind = pa.large_string() if large else pa.string()
    buffers = [_bitmap(present), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(kind, len(encoded), buffers)


def strings(profile: Profile) -> pa.Array:
    """The profile's string table as an Arrow string array (once per profile)."""
    return profile.derived(
        ("sql", "strings", len(profile.strings)), lambda: utf8(profile.strings.strings)
    )


def text(ids: np.ndarray, dictionary: pa.Array, present: np.ndarray | None = None) -> pa.Array:
    """A dictionary-encoded text column: ``dictionary[ids]``, NULL where ``present`` is False
    (or, without ``present``, where the id is negative)."""
    import pyarrow as pa

    ids = np.asarray(ids)
    if ids.dtype != np.int32:
        ids = ids.astype(np.int32)
    if present is None and len(ids) and ids.min() < 0:
        present = ids >= 0
    if present is not None and not present.all():
        ids = np.where(present, ids, 0).astype(np.int32)
    else:
        present = None
    indices = numbers(ids, present)
    return pa.DictionaryArray.from_arrays(indices, dictionary, safe=False)


def labels(index: np.ndarray, names: Sequence[str | None]) -> pa.Array:
    """A text column over a few names (planes, lines, types): ``names[index]``; a name that is
    None, or a negative index, reads NULL."""
    dictionary = utf8([n or "" for n in names])
    missing = np.array([n is None for n in names], dtype=bool)
    index = np.asarray(index)
    present = index >= 0
    if missing.any() and len(index):
        present &= ~missing[np.maximum(index, 0)]
    return text(index, dictionary, None if present.all() else present)


def constant(value: str, n: int) -> pa.Array:
    """``value`` on every one of ``n`` rows (4 bytes a row)."""
    return text(np.zeros(n, np.int32), utf8([value]))


def nulls(n: int, kind: str) -> pa.Array:
    """A column of ``n`` NULLs of type ``kind``: "text", "int", "uint", "float" or "texts"
    (a list of texts)."""
    import pyarrow as pa

    none = _bitmap(np.zeros(n, dtype=bool))
    if kind == "text":
        offsets = pa.py_buffer(np.zeros(n + 1, np.int32))
        return pa.Array.from_buffers(pa.string(), n, [none, offsets, pa.py_buffer(b"")])
    if kind == "texts":
        offsets = pa.py_buffer(np.zeros(n + 1, np.int32))
        return pa.Array.from_buffers(pa.list_(pa.string()), n, [none, offsets], children=[utf8([])])
    dtype = {"int": np.int64, "uint": np.uint64, "float": np.float64}[kind]
    return numbers(np.zeros(n, dtype), np.zeros(n, dtype=bool))


def table(columns: dict[str, pa.Array]) -> pa.Table:
    import pyarrow as pa

    return pa.table(columns)
