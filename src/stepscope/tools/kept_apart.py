"""A kept intermediate built by a process of its own (decision 174).

The trace viewer asks for a large profile's step database while the page asks for windows;
built on a server thread it holds the GIL for seconds. `build_apart` starts a child that
builds it and keeps it in the store (`stepscope.tools.kept`), and the caller reads it from
there, or builds it itself when the child failed: nothing depends on the child but speed.
The child runs below the caller's priority (`workers.lower_process_priority`), so that on
busy cores it takes the CPU from no window either (decision 255), and its bound counts its
CPU time, not the time it waits for a core (`ChildBound`, decision 1020).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepscope import workers
from stepscope.store import background

logger = logging.getLogger(__name__)

# A process of its own builds a kept intermediate (`build_apart`) from this many events: the
# step database of a 10M-event trace takes seconds of CPU, and on a thread of a server it
# holds the GIL from the windows asked meanwhile (full views 3-6x slower at 1M-10M events).
APART_MIN_EVENTS = 2_000_000
# How much of the child's time may pass before it is killed and the caller builds in
# process: generous (the build of 10M events is 7-10 s of CPU here), yet bounded, so a child
# that hangs or loops never holds the steps for long. What counts is the child's CPU time and
# the time in which it neither ran nor waited for a core (`ChildBound`), never its wait for
# a core: it runs lowered (decision 980), and on a busy machine it may wait most of the time.
APART_BASE_S = 60.0
APART_S_PER_EVENT = 10e-6
# How often the caller reads the child's times while it waits for it (s).
APART_POLL_S = 0.5
_CHILD = (
    "import sys; from stepscope.tools.kept_apart import child_main; "
    "sys.exit(child_main(sys.argv[1:]))"
)


def apart_timeout_s(n_events: int) -> float:
    """How long `build_apart` waits for a child building from ``n_events`` events."""
    return APART_BASE_S + APART_S_PER_EVENT * n_events


def child_times(pid: int) -> tuple[float, dict[int, int]] | None:
    """The process ``pid``'s CPU seconds (every thread's, those ended too: /proc/PID/stat) and
    each live thread's ns on a core plus ns waiting for one (Linux schedstat): they move
    while the thread runs or is runnable, and stand still while it is blocked. None where
    they cannot be read (not Linux, or no schedstat)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        active: dict[int, int] = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as sched:
                    on_cpu_ns, waited_ns = sched.read().split()[:2]
            except OSError:  # the thread ended meanwhile
                continue
            active[int(tid)] = int(on_cpu_ns) + int(waited_ns)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return cpu_s, active


class ChildBound:
    """Whether a child has had its ``limit_s``: its CPU time, plus the time in which its
    threads neither ran nor waited for a core (blocked: a hang), reach it. The time it waited
    for a core counts for nothing, so a child starved by a busy machine (it runs lowered,
    decision 980) is never stopped for that (decision 1020). Where its times cannot be read
    (`child_times` None) the wall clock counts, as a bound of last resort."""

    def __init__(self, limit_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit_s = limit_s
        self.clock = clock
        self.last_s = clock()  # when it was last read
        self.active: dict[int, int] = {}  # per thread, ns run or runnable, at that read
        self.blocked_s = 0.0
        self.wall_s = 0.0  # the time its times could not be read, summed
        self.cpu_s = 0.0

    def over(self, times: tuple[float, dict[int, int]] | None) -> bool:
        """Counts the time since the last call with ``times`` read now; whether it is over."""
        now = self.clock()
        elapsed_s, self.last_s = max(0.0, now - self.last_s), now
        if times is None:
            self.wall_s += elapsed_s
            return self.spent_s() > self.limit_s
        self.cpu_s, active = times
        moved_s = sum(ns - self.active.get(tid, 0) for tid, ns in active.items()) / 1e9
        self.active = active
        # The time no thread ran or waited: what of the interval their activity leaves. A
        # wait for a core is counted when it ends, so an interval can seem blocked and the
        # next show more than its length: the surplus is given back (two threads busy at
        # once give back too; never below zero, so nothing is saved for a later hang).
        self.blocked_s = max(0.0, self.blocked_s + elapsed_s - moved_s)
        return self.spent_s() > self.limit_s

    def spent_s(self) -> float:
        return self.cpu_s + self.blocked_s + self.wall_s


def build_apart(
    run_path: str, host: str, names: tuple[str, ...], cache_dir: Path | None, timeout_s: float
) -> bool:
    """Builds the kept intermediates ``names`` of ``host`` (`KEPT_APART`) in a new process,
    which keeps them in the store; whether it did. The caller then reads them from the store
    or, when this failed, builds them itself: nothing depends on the child but speed. The
    converted profile must be in the store already, or the child would convert the file
    again. The child never outlives this call: past ``timeout_s``, or when the caller is
    interrupted, it is killed; and it watches its stdin, a pipe from this process, and exits
    when that closes, so it dies with this process too (a server killed meanwhile).
    ``timeout_s`` bounds the child's CPU time and the time it hangs (`ChildBound`), not its
    wait for a core."""
    import subprocess
    import sys
    import tempfile

    argv = [sys.executable, "-c", _CHILD, run_path, host, str(cache_dir or ""), *names]
    with tempfile.TemporaryFile() as errors:
        try:
            child = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors
            )
        except (OSError, subprocess.SubprocessError) as exc:
            logger.info("could not build %s in a process of its own: %s", names, exc)
            return False
        # below the threads that answer: the windows the page asks for meanwhile come first
        # on busy cores (decision 255); the child still gets every idle moment
        workers.lower_process_priority(child.pid)
        bound = ChildBound(timeout_s)
        try:
            while True:
                try:
                    code = child.wait(timeout=APART_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    if bound.over(child_times(child.pid)):
                        logger.info(
                            "building %s apart took over %.0f s (CPU %.1f s): stopped",
                            names,
                            timeout_s,
                            bound.cpu_s,
                        )
                        return False
        finally:
            if child.poll() is None:  # timed out, or this thread was interrupted
                child.kill()
                child.wait()
            if child.stdin is not None:
                child.stdin.close()
        if code:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-1:]
            logger.info("building %s apart failed (exit %s): %s", names, code, tail)
    return code == 0


def _exit_when_orphaned() -> None:
    """In the child: exits at once when the parent's end of stdin closes (the parent died, or
    gave up waiting), so a child never runs on for nobody."""
    # the file descriptor, not sys.stdin: a daemon thread blocked in a buffered read holds
    # its lock, and the interpreter's shutdown aborts on it
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    os._exit(3)


def child_main(argv: list[str]) -> int:
    """The process `build_apart` starts: RUN HOST CACHE_DIR NAME... (names of `KEPT_APART`)."""
    threading.Thread(target=_exit_when_orphaned, name="stepscope-orphan-watch", daemon=True).start()
    # a scheduling group of its own, lowered: its parent's lowered its nice value, which
    # weighs only inside the parent's group (decision 980)
    workers.lower_own_group()
    from stepscope.model import open_run
    from stepscope.tools.context import ProfileStore, ToolContext

    run_path, host, cache_dir, *names = argv
    run = open_run(run_path)
    store = ProfileStore(max_profiles=1, cache_dir=Path(cache_dir) if cache_dir else None)
    for name in names:
        KEPT_APART[name](ToolContext(run, host, store))
    background.wait()
    return 0


def _step_db(ctx: Any) -> None:
    from stepscope.tools._analysis import step_db

    step_db(ctx, ctx.host)


def _trace_steps(ctx: Any) -> None:
    """The trace viewer's steps, and with them the step database they come from: both kept."""
    from stepscope.tools._analysis import trace_steps

    trace_steps(ctx, ctx.host)


# What `build_apart` can build: its name -> how (on a context with the default options).
KEPT_APART = {"step_db:auto": _step_db, "trace_steps:auto": _trace_steps}
