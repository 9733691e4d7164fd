"""Tool outputs kept on disk, so asking again for a run analysed before costs a file read.

`stepscope tool RUN TOOL` writes what it printed here; the next identical command (a new
process) finds it before importing NumPy or any tool, which is what keeps a cached answer
within the time of an interpreter start (see docs/decisions.md, "Cached tool answers").

Key: the command (run path, tool, host, options, format as typed), the stepscope code (its
version and the newest modification time of its files, so an upgrade or an edited checkout
computes again), and every file under the run path with its size and modification time (a
changed, added or removed host or HLO file computes again). URLs are never cached here (the
profile cache still applies to them). Entries are the store's ``results`` kind
(`stepscope.store`), beside the converted profiles, written atomically; a damaged entry is
just a miss.

Standard library only: the CLI reads it before it imports anything else.
"""

from __future__ import annotations

import os

from stepscope.store import location

RESULT_SCHEMA = 1
KIND = "results"  # the store's name for these entries
MAX_RUN_ENTRIES = 4096  # a run path with more files than this (a whole log tree) is not keyed


def _inputs(path: str) -> list[tuple[str, int, int]] | None:
    """(relative name, size, mtime_ns) of the file or of every entry under the directory;
    None when the path cannot be keyed (a URL, missing, too many files)."""
    if "://" in path:
        return None
    try:
        top = os.stat(path)
    except OSError:
        return None
    found = [("", top.st_size, top.st_mtime_ns)]
    if not os.path.isdir(path):
        return found
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files) + dirs:
            full = os.path.join(folder, name)
            try:
                st = os.stat(full)
            except OSError:
                return None
            found.append((os.path.relpath(full, path), st.st_size, st.st_mtime_ns))
            if len(found) > MAX_RUN_ENTRIES:
                return None
    return found


def result_key(path: str, command: tuple[str, ...]) -> str | None:
    """The key of ``command``'s answer for the run at ``path`` as it is now, or None when
    such an answer is not kept (a URL, a path that cannot be read)."""
    inputs = _inputs(path)
    if inputs is None:
        return None
    return location.key(
        KIND, RESULT_SCHEMA, location.code_stamp(), os.path.abspath(path), command, inputs
    )


def _entry(key: str) -> str:
    return os.path.join(location.root_dir(), location.entry_name(KIND, key))


def exists(key: str) -> bool:
    """Whether an answer is kept under ``key``."""
    return os.path.exists(_entry(key))


def read(key: str) -> bytes | None:
    path = _entry(key)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # Read now: the store's eviction (store.budget, not imported on this path) takes it last.
    # (try, not contextlib.suppress: contextlib is a tenth of a kept answer's imports)
    try:  # noqa: SIM105
        os.utime(path)
    except OSError:
        pass
    return data


def write(key: str, data: bytes) -> None:
    """Keeps ``data`` as the answer for ``key``; a cache that cannot be written is skipped."""
    import contextlib

    from stepscope import tmpfiles
    from stepscope.store import budget

    # A read-only or full cache directory must not fail the command.
    with contextlib.suppress(OSError):
        budget.after_write(tmpfiles.write_bytes(_entry(key), data, durable=False), len(data))
