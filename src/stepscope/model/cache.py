"""On-disk cache of converted profiles, so a second open is a memory map instead of a parse.

Where: ``$STEPSCOPE_CACHE_DIR`` or the user cache directory (``platformdirs``), never beside the
user's profile unless they pass a directory explicitly. Key: source path + its size and mtime
(or etag) + stepscope version + model schema version, so a changed profile or a new release
converts again. Entries are written to a temporary directory and renamed into place, so a
crash never leaves a half-written entry that would be read later, and carry a manifest
(every file's size and CRC-32, written last) checked on every load, so a damaged entry
(a truncated or overwritten file, a bad disk) is rebuilt instead of read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from stepscope import result_cache, tmpfiles
from stepscope._version import __version__
from stepscope.model import fs
from stepscope.model.profile import Line, Plane, Profile, Stats
from stepscope.model.strings import StringTable

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 2  # 2: entries carry a manifest
_ARRAYS = (
    "line",
    "meta",
    "name",
    "start_ns",
    "dur_ns",
    "stat_start",
    "meta_plane",
    "meta_id",
    "meta_name",
    "meta_display_name",
    "meta_stat_start",
)


def default_cache_dir() -> Path:
    return result_cache.cache_root()


def cache_key(source: str) -> str:
    raw = f"{SCHEMA_VERSION}|{__version__}|{fs.normalize(source)}|{fs.signature(source)}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def entry_dir(source: str, cache_dir: Path | None = None) -> Path:
    key = cache_key(source)
    return (cache_dir or default_cache_dir()) / "profiles" / key[:2] / key


def _pack_strings(strings: StringTable) -> tuple[np.ndarray, np.ndarray]:
    encoded = [s.encode("utf-8", "surrogateescape") for s in strings.strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> StringTable:
    data = blob.tobytes()
    bounds = offsets.tolist()
    return StringTable(
        data[bounds[i] : bounds[i + 1]].decode("utf-8", "surrogateescape")
        for i in range(len(bounds) - 1)
    )


def _json_stat(value: object) -> object:
    if isinstance(value, bytes):
        return {"__bytes__": value.hex()}
    return value


def _py_stat(value: object) -> object:
    if isinstance(value, dict) and "__bytes__" in value:
        return bytes.fromhex(value["__bytes__"])
    return value


MANIFEST = "manifest.json"
_CHUNK = 16 << 20


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            crc = zlib.crc32(block, crc)
    return crc


def _describe(directory: Path) -> dict[str, list[int]]:
    """Size and CRC-32 of every file directly in ``directory`` except the manifest."""
    return {
        p.name: [p.stat().st_size, _crc32(p)]
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name != MANIFEST
    }


def write_entry(target: Path, arrays: Mapping[str, np.ndarray], header: Any) -> None:
    """Write named arrays (``<name>.npy``) and a JSON header as the directory ``target``,
    atomically: a temporary directory renamed into place, so readers never see half of it.
    A manifest of every file's size and CRC-32 is written last (see `verify_entry`); stale
    temporary directories of killed saves are removed first."""
    with tmpfiles.directory(target) as tmp:
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", array)
        (tmp / "header.json").write_text(json.dumps(header))
        (tmp / MANIFEST).write_text(json.dumps(_describe(tmp)))


def verify_entry(target: Path) -> bool:
    """Whether the entry at ``target`` is exactly what was written: every file its manifest
    lists has the listed size and CRC-32. A missing manifest (a save that never finished, an
    older stepscope) fails too; a damaged entry is logged and rebuilt by the caller, never read.
    """
    try:
        listed = json.loads((target / MANIFEST).read_text())
        for name, (size, crc) in listed.items():
            path = target / name
            if path.stat().st_size != size or _crc32(path) != crc:
                raise ValueError(f"{name} does not match the manifest")
    except FileNotFoundError:
        if target.exists():
            logger.warning("cache entry %s has no manifest: rebuilding it", target)
        return False
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        logger.warning("cache entry %s is damaged (%s): rebuilding it", target, exc)
        return False
    return True


def save(profile: Profile, target: Path) -> None:
    """Write ``profile`` as the cache entry ``target`` (atomically)."""
    arrays = {name: getattr(profile, name) for name in _ARRAYS}
    for prefix, stats in (("stats", profile.stats), ("meta_stats", profile.meta_stats)):
        arrays[f"{prefix}_key"] = stats.key
        arrays[f"{prefix}_kind"] = stats.kind
        arrays[f"{prefix}_value"] = stats.value
    arrays["strings_blob"], arrays["strings_offsets"] = _pack_strings(profile.strings)
    header = {
        "hostname": profile.hostname,
        "source": profile.source,
        "errors": profile.errors,
        "warnings": profile.warnings,
        "planes": [
            {**asdict(p), "stats": {k: _json_stat(v) for k, v in p.stats.items()}}
            for p in profile.planes
        ],
        "lines": [asdict(line) for line in profile.lines],
    }
    write_entry(target, arrays, header)


def load(target: Path) -> Profile | None:
    """The cached profile at ``target`` (arrays memory-mapped, read-only), or None when there
    is none or it fails `verify_entry` (the caller converts again and overwrites it)."""
    header_path = target / "header.json"
    if not verify_entry(target):
        return None
    try:
        header = json.loads(header_path.read_text())
        arrays = {name: np.load(target / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}

        def stats(prefix: str) -> Stats:
            return Stats(
                *(
                    np.load(target / f"{prefix}_{part}.npy", mmap_mode="r")
                    for part in ("key", "kind", "value")
                )
            )

        strings = _unpack_strings(
            np.load(target / "strings_blob.npy"), np.load(target / "strings_offsets.npy")
        )
        planes = [
            Plane(**{**p, "stats": {k: _py_stat(v) for k, v in p["stats"].items()}})
            for p in header["planes"]
        ]
        lines = [Line(**line) for line in header["lines"]]
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None  # a damaged entry is simply rebuilt
    return Profile(
        hostname=header["hostname"],
        source=header["source"],
        strings=strings,
        planes=planes,
        lines=lines,
        stats=stats("stats"),
        meta_stats=stats("meta_stats"),
        errors=header["errors"],
        warnings=header["warnings"],
        **arrays,
    )
