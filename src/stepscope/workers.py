"""How many threads one host's work may use: ``$STEPSCOPE_THREADS`` (default 1), and how
work nobody waits on gives way to the threads that answer (`lower_thread_priority`).

Read by the XSpace decoder (event chunks decoded by that many threads) and by the tool
store (analysis intermediates built on a second thread); both give the same results with
any number.
"""

from __future__ import annotations

import os

THREADS_ENV = "STEPSCOPE_THREADS"


def threads() -> int:
    """``$STEPSCOPE_THREADS`` as a count of at least 1 (1 when unset or not a number)."""
    try:
        return max(1, int(os.environ.get(THREADS_ENV, "1")))
    except ValueError:
        return 1


# How far below the threads that answer requests the work nobody waits on runs (store writes
# queued while an answer was computed, the trace viewer's step database child): a nice value
# of 10 weighs a tenth of 0 in Linux's scheduler, so on busy cores the answers get the CPU
# first, and the background work still gets every idle moment.
BACKGROUND_NICE = 10


def lower_thread_priority() -> None:
    """Runs the calling thread `BACKGROUND_NICE` below its priority now, for good (a thread
    cannot raise it back unprivileged): call it only on a thread made for the work. Linux
    only, where the nice value is the thread's (elsewhere it is the whole process'); never
    raises (a refused change leaves the priority as it is)."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    import threading

    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE)
    except OSError:
        return


def lower_process_priority(pid: int) -> None:
    """Runs the process ``pid`` (a child just started) `BACKGROUND_NICE` below this one; on
    Linux its first thread, whose later threads inherit it. Never raises."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICE)
    except (OSError, AttributeError):  # no setpriority (Windows), or the child is gone
        return
