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


AUTOGROUP = "/proc/self/autogroup"
AUTOGROUP_ENABLED = "/proc/sys/kernel/sched_autogroup_enabled"


def lower_own_group(tries: int = 10) -> bool:
    """In a process made for background work (the steps' child): a session of its own, whose
    scheduling group runs `BACKGROUND_NICE` below the others; whether it did. Linux shares
    the CPU between autogroups (one per session) before nice values count, so a lowered
    child in its parent's session weighs a tenth only against its parent's threads: while
    they are idle (the server between windows) its group takes a busy core's full share
    from every other, the page's browser too (decision 980). Its own group at nice 10
    weighs a tenth against every group. Where the kernel groups no sessions (no
    ``/proc/self/autogroup``, or autogroups off) nothing is done: a session of its own would
    only weigh as much as its parent's. Never raises; a refused write (the kernel takes one
    a tenth of a second from unprivileged callers) is tried again ``tries`` times."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        with open(AUTOGROUP_ENABLED) as enabled:
            if enabled.read().strip() != "1":
                return False
        with open(AUTOGROUP) as group:
            group.read()
        os.setsid()
    except OSError:
        return False
    import errno
    import time

    for _ in range(tries):
        try:
            with open(AUTOGROUP, "w") as group:
                group.write(str(BACKGROUND_NICE))
            return True
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return False
            time.sleep(0.1)
    return False
