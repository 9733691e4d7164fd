"""The first compared step of a job: the ranks begin it at their own times (decision 1038).

Each rank's capture, and its process, begin when they do, and a job's first collectives set
up their connections, so which rank arrives last at the first step's calls says more of its
start than of its step: decision 1001's 2-rank job (rank 1's loader 40 ms a batch) had rank 1
wait 40-63 ms for rank 0 in step 0 while rank 0 waited for rank 1's batch there too, and
either rank was "the one waited for". So (1) a first step every rank waited in, each for
another at some call, is compared for none when the ranks do not all wait in most later
steps: no rank is late there, its waits stay in the figures; and (2) otherwise a rank last
at a call of the first step is late there only by its run-up beyond the others' (each
run-up counts from the rank's own step start, `collective_calls`; a call without run-ups
measured keeps its arrivals' margin, and a capture of one step keeps it all): being last
because its step began later is no lateness of its own.
"""

from __future__ import annotations

import numpy as np

from stepscope.stats.stragglers_types import LATE_MIN_NS, Matched


def first_compared(stepped: np.ndarray) -> int:
    """The first compared step's column, or -1 with none."""
    cols = np.flatnonzero(stepped)
    return int(cols[0]) if len(cols) else -1


def by_own_start(m: Matched, second: np.ndarray, latest: np.ndarray, first: int) -> np.ndarray:
    """``second`` (per call, the next-to-last arrival) with each call of the first compared
    step ``first`` raised so that the last rank's margin is at most its run-up beyond every
    other rank's: (2) of the module docstring."""
    at = np.flatnonzero(m.pod_step == first) if first >= 0 else np.zeros(0, np.int64)
    if not len(at) or m.runup_ns.shape[0] < 2:
        return second
    runup = m.runup_ns[:, at].sum(axis=2)  # (ranks, calls) from each rank's previous exit
    ordered = np.sort(runup, axis=0)
    last = np.argmax(m.arrive_ns[:, at], axis=0)
    mine = runup[last, np.arange(len(at))]
    others = np.where(mine == ordered[-1], ordered[-2], ordered[-1])
    excess = np.maximum(mine - others, 0)
    measured = (runup > 0).all(axis=0)  # a call without run-ups keeps its arrivals' margin
    out = second.copy()
    at, excess = at[measured], excess[measured]
    out[at] = np.maximum(second[at], latest[at] - excess)
    return out


def unless_all_waited(stepped: np.ndarray, wait_ns: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``stepped`` without the first compared step when every rank waited in it for another
    rank (by `LATE_MIN_NS` at least) and did not in most later compared steps (ranks that
    each wait at one of every step's calls take turns: their first step is one of them):
    (1) of the module docstring."""
    first = first_compared(stepped)
    if first < 0 or int(stepped.sum()) < 2 or len(rows) < 2:
        return stepped
    waited = (np.nan_to_num(wait_ns[rows]) >= LATE_MIN_NS).all(axis=0)
    later = stepped.copy()
    later[first] = False
    if not waited[first] or 2 * int(waited[later].sum()) >= int(later.sum()):
        return stepped
    return later
