"""Jobs of ranks late at some steps, shared by the straggler tests: a rank running the
same ops slower at some steps (decision 602), and one pausing before some steps' all-reduce,
at the end of the step before or inside the step (decision 600)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, job

LATE = tuple(range(4, 30, 3))  # 9 of 30 steps

STEP_NS = 60 * MS  # every step on the job's grid; all ranks leave each all-reduce at 50 ms
HELD = (6, 16, 26, 36)  # the steps whose all-reduce rank "p" arrives late at
PAUSE_MS = 35


def slowed(host_ms: int, late_ops: int, untraced_ms: int = 0, ops_each: int = 100) -> list[Rank]:
    """Three ranks, 30 steps: each runs ``ops_each`` host ops in 4 ms before its all-reduce;
    rank "d" at `LATE` steps runs ``late_ops`` in ``host_ms`` (and ``untraced_ms`` untraced
    first)."""

    def late(r: int, s: int) -> bool:
        return r == 1 and s in LATE

    def ready(r: int, s: int) -> int:
        return (host_ms + untraced_ms if late(r, s) else 4) * MS

    def runup(r: int, s: int) -> dict[str, int]:
        if late(r, s):
            return {"host_compute": host_ms * MS, "other": untraced_ms * MS}
        return {"host_compute": 4 * MS}

    def ops(r: int, s: int) -> dict[str, int]:
        return {"host_compute": late_ops if late(r, s) else ops_each}

    return job(3, 30, ready, end=19 * MS, runup=runup, ops=ops, hosts=["a", "d", "c"])


def pausing(at_the_end: tuple[int, ...]) -> list[Rank]:
    """Three ranks of 40 steps, ready 4 ms into each step from host compute; rank "p" idle
    (untraced) 35 ms more before the all-reduce of each `HELD` step: at the end of the step
    before (``at_the_end``: its step table's step k - 1 lasts 35 ms longer and step k begins
    35 ms late) for the steps k in ``at_the_end``, else at the start of step k (a fetch
    inside it)."""
    hosts = ["a", "p", "c"]

    def ready(r: int, s: int) -> int:
        return (4 + (PAUSE_MS if hosts[r] == "p" and s in HELD else 0)) * MS

    def runup(r: int, s: int) -> dict[str, int]:
        extra = ready(r, s) - 4 * MS
        return {"host_compute": 4 * MS, "other": extra} if extra else {"host_compute": 4 * MS}

    ranks = job(3, 40, ready, end=50 * MS, runup=runup, hosts=hosts, step_ns=STEP_NS)
    if not at_the_end:
        return ranks
    p = ranks[1]
    start = p.steps.start_ns.copy()
    held = np.array(at_the_end)
    start[held] += PAUSE_MS * MS  # its step k begins after the pause...
    dur = np.diff(np.r_[start, start[-1] + STEP_NS])  # ...which ends its step k - 1
    ranks[1] = replace(p, steps=replace(p.steps, start_ns=start, dur_ns=dur))
    return ranks
