"""Every file stepscope writes, and removing the temporary files a killed process left.

Every save (a profile, an export, a cache entry, a host summary, a baseline) goes through
`output`, `write_bytes` or `directory`. What happens depends on what is already at the target
(decision 100):

- nothing, or a regular file: the data goes to ``.tmp-<host>-<pid>-<random>`` beside it, is
  flushed to disk (``durable``) and renamed into place, so readers see the old file or the
  new one, never half of it;
- anything else, where stepscope chose the name (a capture's host file, a recorder save, an
  imported host, a cache entry): refused (`RefusedTarget`, an OSError naming the path and
  what is there). A symlink there is not followed (in a shared log directory it could point
  at another user's file) and is never replaced;
- anything else, where the user named the file (``export -o``, ``summary -o``, ``diff
  --json/--markdown``: ``user_output``): a symlink is followed (the file it names is written
  as above, the link stays); a FIFO or a device is written into as a stream, in place;
  ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` and ``/proc/self/fd/N`` write into that open
  descriptor (so ``>>`` appends); a directory or a socket is refused.

A process killed mid-save (SIGKILL, power loss) leaves its temporary file or directory
behind; `sweep_stale` removes such leftovers of processes that no longer run on this host,
and any leftover older than a day (another host's, or a reused pid). Standard library only:
capture, model and xspace all use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

T = TypeVar("T")

PREFIX = ".tmp-"
MAX_AGE_S = 24 * 3600
_OURS = re.compile(r"^\.tmp-(?P<host>[A-Za-z0-9_.-]*)-(?P<pid>\d+)-")


# shutil is imported where used, tempfile and socket (on POSIX) not at all: every analysis
# imports this module, few of them save anything, and the three cost about 6 ms and 1.6 MB.


def _host() -> str:
    # os.uname's node name is what socket.gethostname answers on POSIX (glibc reads it
    # there), without the socket module's import: 2 ms of every command that saves.
    uname = getattr(os, "uname", None)
    if uname is not None:
        name = uname().nodename
    else:  # pragma: no cover - Windows
        import socket

        name = socket.gethostname()
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def tmp_prefix() -> str:
    """The prefix for this process's temporary files (host and pid say whose they are)."""
    return f"{PREFIX}{_host()}-{os.getpid()}-"


# `tempfile`'s flags for a new temporary file: created here or not at all, never through a
# link, not inherited by child processes
_NEW_FILE = (
    os.O_RDWR
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_TRIES = 100  # names tried before giving up (`tempfile` tries 10,000 of its shorter ones)


def _new_entry(directory: Path | str, make: Callable[[str], T]) -> tuple[T, str]:
    """``make(path)`` for a path of ours not taken in ``directory`` (its prefix, then 64
    random bits), as `tempfile` picks names, without `tempfile` and its `random` (2.5 ms of
    the first store write of every analysing command: decision 298)."""
    for _ in range(_TRIES):
        name = os.path.join(directory, f"{tmp_prefix()}{os.urandom(8).hex()}")
        try:
            return make(name), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", os.fspath(directory))


def mkstemp(directory: Path | str) -> tuple[int, str]:
    """`tempfile.mkstemp` in ``directory`` with our prefix, and the permissions a plain
    ``open()`` would give (mkstemp's 0600 would make a saved profile private by accident)."""
    return _new_entry(directory, lambda name: os.open(name, _NEW_FILE, 0o666))


def mkdtemp(directory: Path | str) -> str:
    """`tempfile.mkdtemp` in ``directory`` with our prefix (mode 0700, as there)."""
    return _new_entry(directory, lambda name: os.mkdir(name, 0o700))[1]


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


def sweep_stale_runs(root: Path) -> int:
    """`sweep_stale` in every directory directly inside ``root`` (a log directory's
    ``plugins/profile``): a save killed in a run directory nothing writes to again leaves
    its temporary file there for good otherwise. A run directory that held nothing else is
    removed too (rmdir: only when empty). How many entries went."""
    removed = 0
    try:
        runs = [entry.path for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return 0
    for run in runs:
        try:
            if not any(name.startswith(PREFIX) for name in os.listdir(run)):
                continue
        except OSError:
            continue
        gone = sweep_stale(Path(run))
        if gone:
            removed += gone
            with contextlib.suppress(OSError):
                os.rmdir(run)  # fails unless empty: a run's files are never touched
    return removed


class RefusedTarget(OSError):
    """A write refused because of what is at the target (see the module's docs)."""


_KINDS = (
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)
# Paths that name an open descriptor of this process: written through that descriptor.
_DESCRIPTOR = re.compile(
    r"^/(?:dev/(?:std(?P<std>in|out|err)|fd/(?P<fd>\d+))|proc/self/fd/(?P<pfd>\d+))$"
)
_STD = {"in": 0, "out": 1, "err": 2}


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _descriptor(path: str) -> int | None:
    match = _DESCRIPTOR.match(path)
    if match is None:
        return None
    return _STD[match["std"]] if match["std"] else int(match["fd"] or match["pfd"])


@contextlib.contextmanager
def _streamed(fd: int, path: str) -> Iterator[BinaryIO]:
    with os.fdopen(fd, "wb") as out:
        yield out
        if not out.closed:
            out.flush()


def _open_stream(
    path: str, user_output: bool
) -> contextlib.AbstractContextManager[BinaryIO] | None:
    """A stream into ``path`` when it is to be written in place, None when it is to be
    replaced (missing or a regular file: the path to replace is then ``_replaced(path)``);
    RefusedTarget / IsADirectoryError when it may not be written at all."""
    number = _descriptor(path) if user_output else None
    if number is not None:
        try:
            return _streamed(os.dup(number), path)
        except OSError:
            raise RefusedTarget(
                errno.EBADF, "is not an open descriptor of this process", path
            ) from None
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    if not user_output:
        raise RefusedTarget(
            errno.EEXIST,
            f"is {_kind(mode)}, not a regular file: stepscope writes only regular files here "
            "and never replaces anything else (remove it, or write elsewhere)",
            path,
        )
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            return None  # a dangling link: the file it names is created
        if stat.S_ISREG(mode):
            return None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory; give a file name", path)
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        # in place, as a shell redirection would: no creating, no truncating
        return _streamed(os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC), path)
    raise RefusedTarget(errno.EEXIST, f"is {_kind(mode)}; give a file name", path)


def streams_into(path: str | os.PathLike[str]) -> bool:
    """Whether writing the user's output ``path`` streams into it in place (a FIFO, a device,
    an open descriptor) rather than replacing a regular file."""
    text = os.fspath(path)
    if _descriptor(text) is not None:
        return True
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


@contextlib.contextmanager
def output(
    path: str | os.PathLike[str], *, user_output: bool = False, durable: bool = True
) -> Iterator[BinaryIO]:
    """A binary file to fill that becomes ``path`` when the block ends without error (see the
    module's docs for what is replaced, streamed into or refused). A regular file is written
    beside the target and renamed into place (after an fsync when ``durable``); on error
    nothing is left behind. Parent directories are created; stale temporaries swept first.
    The block may close the file it was given (after flushing what it wrote)."""
    text = os.fspath(path)
    stream = _open_stream(text, user_output)
    if stream is not None:
        with stream as out:
            yield out
        return
    target = Path(os.path.realpath(text) if user_output and os.path.islink(text) else text)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target.parent)
    handle, tmp = mkstemp(target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
            if not out.closed:
                out.flush()
                if durable:
                    os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    user_output: bool = False,
    durable: bool = True,
) -> Path:
    """Write ``data`` as ``path`` through `output`: readers see the old file or the new one,
    never half of it; on failure nothing is left behind and the OSError names the path."""
    with output(path, user_output=user_output, durable=durable) as out:
        out.write(data)
    return Path(path)


def check_replaceable(path: Path) -> None:
    """RefusedTarget unless ``path`` is missing or a regular file (for a rename into a
    directory stepscope manages, done without `output`)."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise RefusedTarget(
                errno.EEXIST, f"is {_kind(mode)}, not a regular file: not replaced", str(path)
            )


@contextlib.contextmanager
def directory(target: Path) -> Iterator[Path]:
    """A temporary directory to fill, renamed over ``target`` when the block ends without
    error and removed otherwise, so readers never see half of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target.parent)
    import shutil

    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(target).st_mode
        if not stat.S_ISDIR(mode):
            raise RefusedTarget(
                errno.EEXIST, f"is {_kind(mode)}, not a directory stepscope wrote", str(target)
            )
    tmp = Path(mkdtemp(target.parent))
    try:
        yield tmp
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_new(path: str | os.PathLike[str], data: bytes) -> Path:
    """Create ``path`` holding ``data``; FileExistsError when something is already there
    (nothing is ever replaced: a capture never overwrites a profile). The data is written
    beside it first and linked into place, so readers never see half of it and of two
    processes creating the same name at once exactly one succeeds. On a file system without
    hard links the file is created exclusively and written in place."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(target.parent)
    handle, tmp = mkstemp(target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some network and FUSE file systems)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target
