"""The store's size cap: least recently used entries are removed when the store outgrows it.

The cap is ``$STEPSCOPE_CACHE_MAX_BYTES`` (``0``: unbounded), else 10 GiB or a quarter of
the disk space the store can use (its own size plus the free space), whichever is smaller.
"Used" is an entry's modification time: a write sets it and every successful read sets it
again (`touch`), so neither ``noatime`` mounts nor a separate index shared by several
processes are needed. After a write (`after_write`) the store is scanned only when this
process has written a sixteenth of the cap since its last scan, or when no process has
scanned for a minute (the ``.last-scan`` marker's mtime), and over the cap the oldest entries
go until it is at 80 % of it. Only the store's own kinds are counted and removed (never the
unsaved captures kept beside them, which are the user's data), never a ``.tmp-*`` file of a
writer still running, and never an entry used in the last minute (another process may be
about to read what it just wrote). A directory entry is renamed away before it is deleted,
so a reader sees all of it or none; on Linux a process that has an entry memory-mapped keeps
its pages, and one that loses an entry between its check and its read rebuilds it.

Standard library only: it runs after the CLI's cached answers are written.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from stepscope import log, tmpfiles
from stepscope.records import record

KINDS = ("profiles", "trace_index", "summaries", "intermediates", "results")
ENV_VAR = "STEPSCOPE_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 10 << 30
DISK_SHARE = 4  # at most a quarter of the space the store could grow into
LOW_WATER = 0.8  # eviction goes below the cap, so the next writes do not evict again at once
SCAN_INTERVAL_S = 60.0
IN_USE_S = 60.0
MARKER = ".last-scan"

_written_since_scan = 0


@record
class Entry:
    """One file of the store, as the size budget weighs it."""

    kind: str
    path: Path
    size_bytes: int
    used_s: float  # modification time: the last write or read


@record
class Removed:
    """What one enforcement of the size budget removed."""

    count: int
    size_bytes: int


def configured_max_bytes() -> int | None:
    """``$STEPSCOPE_CACHE_MAX_BYTES`` in bytes (0: unbounded), None when unset; ValueError
    with a message naming the variable when it is not a size."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return None
    if text == "0":
        return 0
    from stepscope.limits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"${ENV_VAR}: {exc} (0 means unbounded)") from None


def max_bytes(root: Path, store_bytes: int) -> int:
    """The cap of the store at ``root`` holding ``store_bytes`` now (0: unbounded)."""
    configured = configured_max_bytes()
    return default_max_bytes(root, store_bytes) if configured is None else configured


def default_max_bytes(root: Path, store_bytes: int) -> int:
    """10 GiB, or a quarter of the store's size plus the free space on its disk when that is
    less (a cap from the free space alone would shrink as the store fills the disk)."""
    import shutil  # here: its import (with bz2 and lzma) is for the store's upkeep only

    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return DEFAULT_MAX_BYTES
    return min(DEFAULT_MAX_BYTES, (free + store_bytes) // DISK_SHARE)


def touch(entry: Path | str) -> None:
    """Mark ``entry`` as just used (its mtime), so eviction takes it last; a read-only store
    is left as it is."""
    with contextlib.suppress(OSError):
        os.utime(entry)


def _size(path: str, is_dir: bool) -> int:
    if not is_dir:
        return os.lstat(path).st_size
    with os.scandir(path) as found:
        return sum(f.stat(follow_symlinks=False).st_size for f in found if f.is_file())


def scan(root: Path) -> list[Entry]:
    """Every finished entry of the store's kinds under ``root`` (temporary files of saves,
    finished or not, are not entries)."""
    found: list[Entry] = []
    for kind in KINDS:
        try:
            fans = [f.path for f in os.scandir(root / kind) if f.is_dir()]
        except OSError:
            continue
        for fan in fans:
            with contextlib.suppress(OSError), os.scandir(fan) as names:
                for item in names:
                    if item.name.startswith(tmpfiles.PREFIX):
                        continue
                    with contextlib.suppress(OSError):
                        is_dir = item.is_dir(follow_symlinks=False)
                        used = item.stat(follow_symlinks=False).st_mtime
                        size = _size(item.path, is_dir)
                        found.append(Entry(kind, Path(item.path), size, used))
    return found


def remove(entry: Entry) -> bool:
    """Delete ``entry`` unless it was used since it was scanned; whether it went."""
    path = entry.path
    try:
        if os.lstat(path).st_mtime != entry.used_s:
            return False
        if not path.is_dir() or path.is_symlink():
            path.unlink()
            return True
        # Renamed first: a reader finds the whole entry or nothing; a crash during the
        # rmtree leaves a .tmp- directory that tmpfiles.sweep_stale removes later.
        doomed = path.with_name(f"{tmpfiles.tmp_prefix()}evicted-{path.name}")
        os.replace(path, doomed)
    except OSError:
        return False
    import shutil

    shutil.rmtree(doomed, ignore_errors=True)
    return True


def enforce(root: Path) -> Removed:
    """Bring the store at ``root`` under its cap, least recently used entries first."""
    found = scan(root)
    total = sum(e.size_bytes for e in found)
    try:
        cap = max_bytes(root, total)
    except ValueError as exc:
        log.warn(f"stepscope: {exc}; using the default cache size cap")
        cap = default_max_bytes(root, total)
    if cap == 0 or total <= cap:
        return Removed(0, 0)
    goal, now = int(cap * LOW_WATER), time.time()
    gone: list[Entry] = []
    freed = 0
    for entry in sorted(found, key=lambda e: e.used_s):
        if total - freed <= goal or now - entry.used_s < IN_USE_S:
            break  # sorted: every later entry was used more recently
        if remove(entry):
            gone.append(entry)
            freed += entry.size_bytes
    if gone:
        kinds = ", ".join(
            f"{sum(e.kind == k for e in gone)} {k}" for k in KINDS if any(e.kind == k for e in gone)
        )
        log.info(
            f"stepscope: cache {root} was over its {binary_size(cap)} cap: removed the "
            f"{len(gone)} least recently used entries ({kinds}; {binary_size(freed)})"
        )
    return Removed(len(gone), freed)


def binary_size(n: int) -> str:
    """``n`` bytes in the binary units the cap is set in (``10.00 GiB``, ``3.2 MiB``)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.{2 if shift == 30 else 1}f} {unit}"
    return f"{n} B"


def after_write(entry: Path | str, size_bytes: int) -> None:
    """Called by the store after it wrote ``entry`` (``size_bytes`` of it): evicts when the
    store is over its cap, scanning it only now and then (see the module doc)."""
    global _written_since_scan
    _written_since_scan += size_bytes
    try:
        configured = configured_max_bytes()
    except ValueError:
        configured = None  # enforce() warns about it
    if configured == 0:
        return
    root = Path(entry).parent.parent.parent  # <root>/<kind>/<fan>/<entry>
    marker = root / MARKER
    try:
        last = marker.stat().st_mtime
    except OSError:
        last = 0.0
    threshold = (configured or DEFAULT_MAX_BYTES) // 16
    if time.time() - last < SCAN_INTERVAL_S and _written_since_scan < threshold:
        return
    _written_since_scan = 0
    try:
        marker.touch()  # first, so other processes do not scan at the same time
    except OSError:
        return  # a store that cannot be written is not growing either
    try:
        enforce(root)
    except OSError as exc:
        log.warn(f"stepscope: could not trim the cache {root}: {exc.strerror or exc}")


def clear(root: Path) -> Removed:
    """Remove every entry of the store at ``root`` (not the saves still being written)."""
    count = freed = 0
    for entry in scan(root):
        if remove(entry):
            count, freed = count + 1, freed + entry.size_bytes
    for kind in KINDS:
        with contextlib.suppress(OSError):
            for fan in (root / kind).iterdir():
                tmpfiles.sweep_stale(fan)
    return Removed(count, freed)
