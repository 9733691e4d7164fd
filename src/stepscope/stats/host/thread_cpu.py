"""A sampled thread's CPU time, as the stack sampler read it (the ``Thread CPU`` lines,
docs/formats/python_samples.md): in each interval between two samples, the thread's time on
a CPU and its time runnable but waiting for one (Linux schedstat).

What it tells that no traced event can: a thread whose ops ran longer than the same ops on
another rank either ran the whole time (a slower core, larger inputs) or was off its core,
runnable but waiting while other processes held the cores; and a thread with no reading for
longer than the sampler's interval was not running at all, nor was the sampler of its
process (the process stopped, or every one of its threads kept off the cores).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.vocab.profiler import ON_CPU_STAT, RUNNABLE_STAT, THREAD_CPU_LINE


def _empty() -> np.ndarray:
    return np.zeros(0, np.int64)


@record
class ThreadCpu:
    """One thread's readings: intervals [start, end) between two samples, in time order, on
    the host's clock (ns), with the thread's time on a CPU and runnable in each."""

    start_ns: np.ndarray = field(default_factory=_empty)
    end_ns: np.ndarray = field(default_factory=_empty)
    on_cpu_ns: np.ndarray = field(default_factory=_empty)
    runnable_ns: np.ndarray = field(default_factory=_empty)

    @property
    def read(self) -> bool:
        return len(self.start_ns) > 0

    def interval_ns(self) -> int:
        """The sampler's usual interval: the median reading's length."""
        return int(np.median(self.end_ns - self.start_ns)) if self.read else 0

    def within(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per window [lo, hi): (time covered by readings, on a CPU, runnable), each reading
        shared out in proportion to its overlap with the window (a reading spans one sampler
        interval: windows shorter than that get its average)."""
        lo = np.asarray(lo, np.int64)
        hi = np.asarray(hi, np.int64)
        out = [np.zeros(len(lo)) for _ in range(3)]
        if not self.read or not len(lo):
            return tuple(out)
        start, end = self.start_ns, self.end_ns
        span = np.maximum(end - start, 1).astype(np.float64)
        first = np.searchsorted(end, lo, side="right")
        last = np.searchsorted(start, hi, side="left")
        for w in range(len(lo)):
            k = slice(int(first[w]), int(last[w]))
            if k.start >= k.stop:
                continue
            part = np.clip(np.minimum(end[k], hi[w]) - np.maximum(start[k], lo[w]), 0, None).astype(
                np.float64
            )
            out[0][w] = part.sum()
            share = part / span[k]
            out[1][w] = (share * self.on_cpu_ns[k]).sum()
            out[2][w] = (share * self.runnable_ns[k]).sum()
        return tuple(out)

    def shares(self, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float, float] | None:
        """(runnable share, on-a-core share, runnable ns) over the windows [lo, hi) together
        (a host's steps); None when the readings cover half of them or less (the sampler
        stopped or started late: a share of the rest would be a guess)."""
        covered, on, rq = (float(x.sum()) for x in self.within(lo, hi))
        span = float((np.asarray(hi, np.int64) - np.asarray(lo, np.int64)).sum())
        if span <= 0 or covered <= 0.5 * span:
            return None
        return rq / covered, on / covered, rq

    def unread_ns(self, lo: int, hi: int) -> int:
        """The longest time in [lo, hi) inside one reading at least twice the usual
        interval: the sampler did not run then (its process stopped, or kept off the
        cores), beyond the one interval it would have slept anyway."""
        if not self.read:
            return 0
        long = (self.end_ns - self.start_ns) >= 2 * self.interval_ns()
        overlap = np.minimum(self.end_ns, hi) - np.maximum(self.start_ns, lo)
        gap = np.where(long, overlap, 0)
        return int(max(int(gap.max(initial=0)), 0))


def thread_cpu(profile: Profile, thread_lines: list[int]) -> ThreadCpu:
    """The readings of the first of ``thread_lines`` (line indices) that has any."""
    wanted = {(profile.lines[t].plane, profile.lines[t].id): t for t in thread_lines if t >= 0}
    found = [
        ln.index
        for ln in profile.lines
        if ln.name == THREAD_CPU_LINE and (ln.plane, ln.display_id) in wanted and ln.event_count
    ]
    if not found:
        return ThreadCpu()
    events = np.flatnonzero(profile.line == found[0])
    events = events[np.argsort(profile.start_ns[events], kind="stable")]
    return ThreadCpu(
        profile.start_ns[events].astype(np.int64),
        profile.end_at(events).astype(np.int64),
        profile.stat_at(ON_CPU_STAT, events).as_int(0).astype(np.int64),
        profile.stat_at(RUNNABLE_STAT, events).as_int(0).astype(np.int64),
    )
