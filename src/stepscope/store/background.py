"""Store writes after the answer: an entry is written on a thread while the caller goes on.

A first open of a large profile used to write the converted profile and the trace index
(about 1 s at 10M events) before it answered; the user waits only for what is drawn. Threads
are not daemons, so the interpreter finishes every write before it exits (the next process
finds the entry); a process killed mid-write leaves only a temporary directory, which the
next write sweeps (`stepscope.tmpfiles.directory`). One write per target at a time: a second
request for a target being written is dropped (the same bytes are on their way).

A caller computing an answer can hold the writes back (`foreground`): a write queued meanwhile
starts when no such section is running, so on two busy cores it does not take CPU from the
answer (the trace viewer's first window at 10M events waited about a second for the
converted profile's write and the index's steps). A write someone waits for (`wait`) starts
at once. Such a write also runs below the threads that answer
(`stepscope.workers.lower_thread_priority`): the page asks for more windows while it goes
on (seconds of disk writes at 10M events), and they come first (decision 255). A write
that has started gives way too: between pieces of its bytes (`give_way`) it waits while an
answer is computed, so a near-full trace window after the steps no longer shares the cores
with the trace index's 446 MB save (decision 795).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from stepscope import log, workers

_lock = threading.Lock()
_pending: dict[Path, threading.Thread] = {}
_gate = threading.Condition()  # guards _answering and _urgent
_answering = 0  # `foreground` sections running
_urgent: set[Path] = set()  # writes waited for: they start whatever runs
_writing = threading.local()  # .target: the entry the calling thread writes (`write_later`)
_sections = threading.local()  # .depth: the `foreground` sections the calling thread is in
# The longest a write waits at one `give_way` point: answers back to back (a page asking
# windows while the user pans) slow a write down, never stop it.
PAUSE_LIMIT_S = 1.0
# How long after an answer a write still waits: the answer is then on its way to the page
# (a near-full trace window: 20-40 ms for Chromium to receive and decode its 1.95 MB).
QUIET_S = 0.05
_answered_at = -QUIET_S  # `time.monotonic()` when the last `foreground` section ended


@contextmanager
def foreground() -> Iterator[None]:
    """Writes queued in this section (or by others meanwhile) start once no section runs."""
    global _answering, _answered_at
    with _gate:
        _answering += 1
    _sections.depth = getattr(_sections, "depth", 0) + 1
    try:
        yield
    finally:
        _sections.depth -= 1
        with _gate:
            _answering -= 1
            _answered_at = time.monotonic()
            _gate.notify_all()


def write_later(target: Path, write: Callable[[], None], what: str) -> None:
    """Run ``write()`` (which writes the entry ``target``) on a thread; an OSError is a
    warning naming ``what`` and the target, as a synchronous write's would be. Queued in a
    `foreground` section, it starts once no section runs and runs below the answering
    threads' priority."""

    with _gate:
        behind_answers = _answering > 0

    def run() -> None:
        try:
            if behind_answers:  # this thread is the write's own: it ends with it
                workers.lower_thread_priority()
            with _gate:
                _gate.wait_for(lambda: _answering == 0 or target in _urgent)
            _writing.target = target
            write()
        except OSError as exc:  # a read-only or full cache must not stop analysis
            log.warn(f"stepscope: could not write {what} {target}: {exc.strerror or exc}")
        except Exception as exc:  # a bug in a writer: the answer stands, the cache is skipped
            log.warn(
                f"stepscope: could not write {what} {target}: {type(exc).__name__}: {exc} "
                "(a stepscope bug: the results shown are not affected; please report it)"
            )
        finally:
            _writing.target = None
            with _lock:
                _pending.pop(target, None)
            with _gate:
                _urgent.discard(target)

    with _lock:
        if target in _pending:
            return
        # daemon=False said, not inherited: a thread made by a daemon thread is a daemon too
        # (a `start_server` in a script answers on daemon threads), and the interpreter's exit
        # killed such a write half-way, so each run converted and indexed again (decision 401)
        thread = threading.Thread(target=run, name=f"stepscope-write-{target.name}", daemon=False)
        _pending[target] = thread
        thread.start()


def give_way() -> None:
    """Called by a writer between pieces of its work: on a `write_later` thread, wait while
    an answer is computed (a `foreground` section runs) and `QUIET_S` after it, at most
    `PAUSE_LIMIT_S`; a write
    someone waits for (`wait`) goes on. Elsewhere (a synchronous write) it returns at once.
    The store's writes after a large profile's steps (the trace index's save, 446 MB at
    10.6M events) took p50 15-33 ms of CPU beside each near-full window the page asked then
    (decision 795); paused, they leave the cores to the answer."""
    target = getattr(_writing, "target", None)
    if target is None:
        return
    with _gate:
        until = time.monotonic() + PAUSE_LIMIT_S
        while target not in _urgent:
            now = time.monotonic()
            quiet = _answered_at + QUIET_S
            if (_answering == 0 and now >= quiet) or now >= until:
                return
            _gate.wait(until - now if _answering else min(quiet, until) - now)


def pending(target: Path) -> bool:
    """Whether a write of ``target`` is still running."""
    with _lock:
        return target in _pending


def after(target: Path) -> None:
    """Return once the write of ``target`` now running or queued (if any) has finished,
    without hurrying it as `wait` does: it still waits while answers are computed (the
    steps' child waits so for the converted profile's write, decision 920). Called inside a
    `foreground` section, whose end the write would wait for, it hurries it as `wait` does."""
    if getattr(_sections, "depth", 0):
        wait(target)
        return
    with _lock:
        thread = _pending.get(target)
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def wait(target: Path | None = None) -> None:
    """Return once the write of ``target`` (None: every write started so far) has finished;
    a write held back by `foreground` starts now."""
    with _lock:
        found = dict(_pending) if target is None else {target: _pending.get(target)}
    with _gate:
        _urgent.update(t for t, thread in found.items() if thread is not None)
        _gate.notify_all()
    for thread in found.values():
        if thread is not None:
            thread.join()
