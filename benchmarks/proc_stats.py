"""A server process's threads read from /proc while a benchmark asks it for windows: their
CPU to the nanosecond, its minor page faults, whether it runs a child (Linux only)."""

from __future__ import annotations

import os


def thread_cpu(pid: int, nice: int | None) -> dict[int, float]:
    """CPU seconds of each of ``pid``'s threads (those at priority ``nice`` only), to the
    nanosecond (schedstat's time on a core; stat's ticks are 10 ms, a window's whole CPU)."""
    out: dict[int, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as sched:
                on_cpu_ns = int(sched.read().split()[0])
        except (OSError, IndexError, ValueError):  # the thread ended meanwhile
            continue
        # After the ')' of comm: state is field 0, nice 16.
        if nice is None or int(fields[16]) == nice:
            out[int(tid)] = on_cpu_ns / 1e9
    return out


def minor_faults(pid: int) -> int:
    """The process' minor page faults so far (all threads: /proc/PID/stat's minflt)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[7])
    except (OSError, IndexError, ValueError):
        return 0


def has_child(pid: int) -> bool:
    """Whether ``pid`` has a child process now (the steps' child of decision 174: any of its
    threads may have started it, and each thread lists its own children)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as children:
                if children.read().strip():
                    return True
        except OSError:
            continue
    return False


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    # A thread that ended between the two reads takes its CPU with it: never below zero.
    return max(0.0, sum(after.values()) - sum(before.get(t, 0.0) for t in after))
