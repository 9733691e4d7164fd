"""On-disk cache of converted profiles, so a second open is a memory map instead of a parse.

Entries are the store's ``profiles`` kind (`stepscope.store`: its location, atomic writes
and manifest checks). Key: source path + its size and mtime (or etag) + stepscope version +
model schema version, so a changed profile or a new release converts again; a damaged entry
(a truncated or overwritten file, a bad disk) is converted again instead of read.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from stepscope.model import fs
from stepscope.model.profile import Line, Plane, Profile, Stats
from stepscope.model.strings import StringTable
from stepscope.store import entries, location

SCHEMA_VERSION = 4  # 2: entries carry a manifest; 3: Kineto stat ids canonical (decision 156);
# 4: a Kineto conversion keeps the recording's end, kineto_trace_stop_time (decision 1075)
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


KIND = "profiles"


def cache_key(source: str) -> str:
    """The store key of the profile converted from ``source`` (its path and signature)."""
    return location.key(KIND, SCHEMA_VERSION, fs.normalize(source), fs.signature(source))


def entry_dir(source: str, cache_dir: Path | None = None) -> Path:
    return location.entry(KIND, cache_key(source), cache_dir)


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
    entries.write_arrays(target, arrays, header)


def load(target: Path) -> Profile | None:
    """The cached profile at ``target`` (arrays memory-mapped, read-only), or None when there
    is none or it fails `verify_entry` (the caller converts again and overwrites it)."""
    if not entries.verify(target):
        return None
    try:
        header = entries.read_header(target)
        arrays = {name: entries.array(target, name) for name in _ARRAYS}

        def stats(prefix: str) -> Stats:
            return Stats(
                *(entries.array(target, f"{prefix}_{part}") for part in ("key", "kind", "value"))
            )

        strings = _unpack_strings(
            entries.array(target, "strings_blob", mmap=False),
            entries.array(target, "strings_offsets", mmap=False),
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
