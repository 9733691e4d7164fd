"""Directory entries: named NumPy arrays (``<name>.npy``), a JSON header and a manifest.

Written to a temporary directory and renamed into place (`stepscope.tmpfiles.directory`), so a
crash never leaves half an entry that would be read later; the manifest (every file's size and
CRC-32) is written last and checked on read, so a truncated or overwritten file, or a bad
disk, makes the caller rebuild the entry instead of reading wrong numbers.

Checking every byte costs a read of the whole entry (0.4 s for a 10M-event trace index), more
than the rest of a cached open. So a full check also records each file's (mtime, ctime,
inode) in ``verified.json``, and a later read checks the bytes only of files whose status
changed since. Like git's "racy clean" rule, a file is recorded only once its times are
``_SETTLED_NS`` in the past: a change in the same timestamp tick as the check (file times are
coarser than nanoseconds) would otherwise leave its times as recorded.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from stepscope import tmpfiles
from stepscope.log import module_logger
from stepscope.store import background, budget, npy_map

logger = module_logger(__name__)

MANIFEST = "manifest.json"
HEADER = "header.json"
VERIFIED = "verified.json"
_SETTLED_NS = 2_000_000_000
_CHUNK = 16 << 20
# The piece of a file written between two `background.give_way` points: 1-3 ms of copying
# and CRC on this machine, what a window asked meanwhile waits at most for the write to stop.
_PIECE = 4 << 20


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            crc = zlib.crc32(block, crc)
    return crc


def _write(path: Path, *parts: bytes | memoryview) -> list[int]:
    """Write ``parts`` as the file ``path``: its [size, CRC-32], computed from the bytes in
    memory (reading the files back doubled the I/O of a save: 0.1 s per 5M-event profile)."""
    crc = size = 0
    with path.open("wb") as handle:
        for part in parts:
            whole = memoryview(part).cast("B")
            for at in range(0, len(whole), _PIECE):
                background.give_way()  # a write after the answer pauses while one is computed
                piece = whole[at : at + _PIECE]
                handle.write(piece)
                crc = zlib.crc32(piece, crc)
            size += len(whole)
    return [size, crc]


def _write_npy(path: Path, values: np.ndarray) -> list[int]:
    """`np.save`'s file (format 1.0, C order), with `_write`'s size and CRC."""
    if values.dtype.hasobject or not values.flags.c_contiguous:
        np.save(path, values, allow_pickle=False)
        return [path.stat().st_size, _crc32(path)]
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, np.lib.format.header_data_from_array_1_0(values))
    return _write(path, head.getvalue(), values.reshape(-1).view(np.uint8).data)


def write_arrays(target: Path, arrays: Mapping[str, np.ndarray], header: Any) -> None:
    """Write named arrays and a JSON header as the directory ``target``, atomically; stale
    temporary directories of killed saves beside it are removed first."""
    with tmpfiles.directory(target) as tmp:
        listed = {f"{name}.npy": _write_npy(tmp / f"{name}.npy", v) for name, v in arrays.items()}
        listed[HEADER] = _write(tmp / HEADER, json.dumps(header).encode())
        (tmp / MANIFEST).write_text(json.dumps(dict(sorted(listed.items()))))
    budget.after_write(target, sum(size for size, _crc in listed.values()))


def verify(target: Path) -> bool:
    """Whether the entry at ``target`` is exactly what was written: every file its manifest
    lists has the listed size and CRC-32 (the CRC read again only for files changed since a
    full check, see the module's docs). A missing manifest (a save that never finished, an
    older stepscope) fails too; a damaged entry is logged and rebuilt by the caller."""
    try:
        listed = json.loads((target / MANIFEST).read_text())
        recorded = _recorded(target)
        checked: dict[str, list[int]] = {}
        settled = True
        settle_before_ns = time.time_ns() - _SETTLED_NS
        for name, (size, crc) in listed.items():
            path = target / name
            status = path.stat()
            if status.st_size != size:
                raise ValueError(f"{name} does not match the manifest")
            seen = [status.st_mtime_ns, status.st_ctime_ns, status.st_ino]
            if recorded.get(name) == seen:
                continue
            if _crc32(path) != crc:
                raise ValueError(f"{name} does not match the manifest")
            checked[name] = seen
            settled = settled and max(seen[0], seen[1]) < settle_before_ns
    except FileNotFoundError:
        if target.exists():
            logger.warning("cache entry %s has no manifest: rebuilding it", target)
        return False
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        logger.warning("cache entry %s is damaged (%s): rebuilding it", target, exc)
        return False
    if checked and settled:
        with contextlib.suppress(OSError):  # a read-only store checks in full each time
            tmpfiles.write_bytes(
                target / VERIFIED,
                json.dumps({**recorded, **checked}).encode(),
                durable=False,
            )
    budget.touch(target)  # read now: evicted last
    return True


def _recorded(target: Path) -> dict[str, Any]:
    """The file statuses of ``target``'s last full check ({} when none or unreadable)."""
    try:
        found = json.loads((target / VERIFIED).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def read_header(target: Path) -> Any:
    """The JSON header of the entry at ``target`` (call `verify` first)."""
    return json.loads((target / HEADER).read_text())


def array(target: Path, name: str, mmap: bool = True) -> np.ndarray:
    """The array ``name`` of the entry at ``target``, memory-mapped read-only by default.

    A mapped array is returned as a plain ndarray view of the map (the map stays open as its
    base): every slice or gather of an ``np.memmap`` builds another memmap object, about 30 us
    each, which was half the time of a trace viewer window over many hosts. The files the
    store wrote are mapped without `np.load` (`npy_map`: a tenth of its cost)."""
    path = target / f"{name}.npy"
    if mmap:
        mapped = npy_map.mapped(path)
        if mapped is not None:
            return mapped
    found = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    return np.asarray(found)
