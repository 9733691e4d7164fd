"""Map a ``.npy`` file the store wrote (`np.save`, format 1.0, C order) without `np.load`.

A cached profile is some 20 arrays (19 for the ctl fixture) and `np.load(...,
mmap_mode="r")` reads each header with `ast.literal_eval` and builds an `np.memmap` over a
second open of the file: a cached open of ctl took 4.7-7.2 ms, most of it that (decision
806). This reads the header with one pattern and maps the file once; an array is a
read-only view whose base is an `np.memmap` over the map, as `entries.array` returned
before. Anything else (another version, Fortran order, a structured or object dtype, a file
shorter than its header says) is not ours to read here: None, and the caller takes
`np.load`'s way, with its errors.
"""

from __future__ import annotations

import math
import mmap
import re
from pathlib import Path

import numpy as np

_MAGIC = b"\x93NUMPY\x01\x00"  # format 1.0: a 2-byte header length
# what `np.lib.format` writes for a plain dtype in C order, padded with spaces to its newline
_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z]\d+)', 'fortran_order': False, "
    rb"'shape': \(((?:\d+, )*\d*,?)\), \} *\n"
)
_PEEK = 512  # the header np.save writes for up to 32 dimensions fits


def mapped(path: Path) -> np.ndarray | None:
    """The array stored at ``path``, mapped read-only; None when it is not a plain format 1.0
    file of one of the store's dtypes (the caller reads it with `np.load`)."""
    with open(path, "rb") as f:
        head = f.read(_PEEK)
        if head[:8] != _MAGIC or len(head) < 10:
            return None
        offset = 10 + int.from_bytes(head[8:10], "little")
        found = _HEADER.fullmatch(head[10:offset])
        if found is None:
            return None
        dtype = np.dtype(found.group(1).decode("ascii"))
        if dtype.hasobject:
            return None
        shape = tuple(int(n) for n in found.group(2).split(b",") if n.strip())
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes == 0:  # nothing to map (the header matched whole: the file holds it)
            mem = np.ndarray.__new__(np.memmap, shape, dtype=dtype)
            mem.flags.writeable = False
            mem.filename, mem.offset, mem.mode = str(path), offset, "r"
            return np.asarray(mem)
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if len(data) < offset + nbytes:
        data.close()
        return None
    # the np.memmap that np.load would have built, less its second open and its checks: the
    # returned view's base is a memmap holding the map, as before (what tests and callers see)
    mem = np.ndarray.__new__(np.memmap, shape, dtype=dtype, buffer=data, offset=offset)
    mem._mmap = data  # type: ignore[attr-defined]  # (np.memmap keeps its map there)
    mem.filename, mem.offset, mem.mode = str(path), offset, "r"
    return np.asarray(mem)
