"""Store writes after the answer: an entry is written on a thread while the caller goes on.

A first open of a large profile used to write the converted profile and the trace index
(about 1 s at 10M events) before it answered; the user waits only for what is drawn. Threads
are not daemons, so the interpreter finishes every write before it exits (the next process
finds the entry); a process killed mid-write leaves only a temporary directory, which the
next write sweeps (`stepscope.tmpfiles.directory`). One write per target at a time: a second
request for a target being written is dropped (the same bytes are on their way).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from stepscope import log

_lock = threading.Lock()
_pending: dict[Path, threading.Thread] = {}


def write_later(target: Path, write: Callable[[], None], what: str) -> None:
    """Run ``write()`` (which writes the entry ``target``) on a thread; an OSError is a
    warning naming ``what`` and the target, as a synchronous write's would be."""

    def run() -> None:
        try:
            write()
        except OSError as exc:  # a read-only or full cache must not stop analysis
            log.warn(f"stepscope: could not write {what} {target}: {exc.strerror or exc}")
        finally:
            with _lock:
                _pending.pop(target, None)

    with _lock:
        if target in _pending:
            return
        thread = threading.Thread(target=run, name=f"stepscope-write-{target.name}")
        _pending[target] = thread
        thread.start()


def pending(target: Path) -> bool:
    """Whether a write of ``target`` is still running."""
    with _lock:
        return target in _pending


def wait(target: Path | None = None) -> None:
    """Return once the write of ``target`` (None: every write started so far) has finished."""
    with _lock:
        threads = list(_pending.values()) if target is None else [_pending.get(target)]
    for thread in threads:
        if thread is not None:
            thread.join()
