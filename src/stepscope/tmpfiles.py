"""Temporary files of atomic saves, and removing the ones a killed process left behind.

Every atomic save (a profile, a cache entry, a host summary, a baseline) goes through
`write_bytes` or `directory`: it writes ``.tmp-<host>-<pid>-<random>`` beside its target and
renames it into place. A process killed mid-save (SIGKILL, power loss) leaves
that file or directory behind; `sweep_stale` removes such leftovers of processes that no
longer run on this host, and any leftover older than a day (another host's, or a reused
pid). Standard library only: capture, model and xspace all use it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

PREFIX = ".tmp-"
MAX_AGE_S = 24 * 3600
_OURS = re.compile(r"^\.tmp-(?P<host>[A-Za-z0-9_.-]*)-(?P<pid>\d+)-")


# shutil, socket and tempfile are imported where used: every analysis imports this module,
# few of them save anything, and the three cost about 6 ms and 1.6 MB at start-up.


def _host() -> str:
    import socket

    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())


def tmp_prefix() -> str:
    """The prefix for this process's temporary files (host and pid say whose they are)."""
    return f"{PREFIX}{_host()}-{os.getpid()}-"


def mkstemp(directory: Path | str) -> tuple[int, str]:
    """`tempfile.mkstemp` in ``directory`` with our prefix, and the permissions a plain
    ``open()`` would give (mkstemp's 0600 would make a saved profile private by accident)."""
    import tempfile

    handle, name = tempfile.mkstemp(prefix=tmp_prefix(), dir=directory)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(handle, 0o666 & ~umask)
    return handle, name


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # exists but not ours, or cannot tell: keep it
    return True


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether ``path`` (a ``.tmp-*`` entry) was left by a save that can no longer finish."""
    try:
        age = (now or time.time()) - path.lstat().st_mtime
    except OSError:
        return False
    if age > MAX_AGE_S:
        return True
    match = _OURS.match(path.name)
    if match is None:  # an older stepscope's name (no pid): only by age, an hour
        return age > 3600
    return (
        match["host"] == _host()
        and int(match["pid"]) != os.getpid()
        and not _alive(int(match["pid"]))
    )


def sweep_stale(directory: Path) -> int:
    """Remove the stale ``.tmp-*`` entries directly inside ``directory``; how many went."""
    removed = 0
    try:
        candidates = [p for p in directory.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return 0
    for path in candidates:
        if not is_stale(path):
            continue
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                import shutil

                shutil.rmtree(path)
            else:
                path.unlink()
            removed += 1
    return removed


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: readers see the old file or the new one, never
    half of it (parent directories created, stale leftovers swept first). On failure nothing
    is left behind and the OSError names the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target.parent)
    handle, tmp = mkstemp(target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@contextlib.contextmanager
def directory(target: Path) -> Iterator[Path]:
    """A temporary directory to fill, renamed over ``target`` when the block ends without
    error and removed otherwise, so readers never see half of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target.parent)
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix=tmp_prefix(), dir=target.parent))
    try:
        yield tmp
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
