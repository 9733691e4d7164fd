"""Every rank waiting for CPU cores: the whole job, not one rank (decision 687).

Ranks that together want more cores than the machine has (4 ranks of 2 threads each on 2
cores, another process spinning beside them) are all slow: each rank's steps' thread is
runnable but waiting for a core much of its time, and which rank arrives last at a
collective is whichever the scheduler ran last, by turns. The straggler rules then name
nobody or a rank of the moment, and the ranks' mean says "collectives" (each waits in its
all-reduce for the others, themselves waiting for a core). The stack sampler's CPU readings
(`stats.host.thread_cpu`, decision 646) tell it: over the steps, every rank's steps' thread
waited for a core at least `CORE_WAIT` of the time, or `CORE_WAIT_WANTING` of it and at least
as long as it ran (`waits_for_a_core`, decision 1039).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.records import record
from stepscope.stats.steps.pairing import StepPairing
from stepscope.stats.stragglers_types import Rank

CORE_WAIT = 0.25  # every rank's steps' thread runnable, not running, this share at least
# ... or this share, waiting at least as long as it ran (decision 1039): the steps' time holds
# the thread asleep in its collectives (gloo's threads, unread, move the data) 30-40% of it,
# so a job starved of cores read 21-23% on a quiet machine and 50-56% on a busy one
CORE_WAIT_WANTING = 0.15

# The note when every rank waits for a core: the job headline says it first (decision 734)
CORES_NOTE = "Every rank waits for a core"
CORES_FIX = (
    "Give the ranks as many threads "
    "as cores between them (torch.set_num_threads or OMP_NUM_THREADS at most the cores / "
    "ranks on that machine; tf.config.threading for TensorFlow), run fewer ranks per "
    "machine, and stop other processes that compete for its cores (top, pidstat -t 1)."
)


def _shares(rank: Rank, rows: np.ndarray) -> tuple[float, float, float] | None:
    """`ThreadCpu.shares` of rank's steps ``rows`` (its step table's rows), by its steps'
    thread's readings; None without readings there."""
    cpu = rank.calls.cpu if rank.calls is not None else None
    if cpu is None or not cpu.read or not len(rows):
        return None
    lo = rank.steps.start_ns[rows]
    return cpu.shares(lo, lo + rank.steps.dur_ns[rows])


@record
class CoresWait:
    """Every rank's steps' thread waiting for a core (see the module docstring)."""

    runnable: np.ndarray  # (ranks,) share of its steps' time runnable, waiting for a core
    on_cpu: np.ndarray  # (ranks,) share on a core
    runnable_ns: int  # the ranks' runnable time over their steps, summed
    text: str


def cores_wait(ranks: Sequence[Rank], pairing: StepPairing, step_ns: float) -> CoresWait | None:
    """Every rank waiting for a core over its steps, or None (a rank without readings, or
    one not waiting for a core by `waits_for_a_core`)."""
    if len(ranks) < 2:
        return None
    shares = []
    for rank, rows in zip(ranks, pairing.rows, strict=True):
        found = _shares(rank, rows[rows >= 0])
        if found is None:
            return None  # a rank without readings: "every rank" is not known
        shares.append(found)
    rq = np.array([x[0] for x in shares])
    on = np.array([x[1] for x in shares])
    if not waits_for_a_core(rq, on).all():
        return None
    text = (
        f"{CORES_NOTE}: each rank's steps' thread was runnable but waiting for "
        f"a core {_pct(rq)} of its steps' time and on a core {_pct(on)} (the stack sampler's "
        "CPU readings): the job's threads and the machine's other processes want more cores "
        f"than it has, so every rank's steps (median {step_ns / 1e6:.2f} ms) are slow, their "
        "compute and collectives mostly this wait, and a rank late at a collective may be "
        "late by the machine's doing, not its own"
    )
    return CoresWait(rq, on, int(sum(x[2] for x in shares)), text)


def waits_for_a_core(runnable: np.ndarray, on_cpu: np.ndarray) -> np.ndarray:
    """Per rank, whether its steps' thread waited for a core: runnable `CORE_WAIT` of its
    steps' time, or `CORE_WAIT_WANTING` and at least as long as it was on a core (of the
    time it wanted a core, it waited half or more)."""
    return (runnable >= CORE_WAIT) | ((runnable >= CORE_WAIT_WANTING) & (runnable >= on_cpu))


def cores_held(ranks: Sequence[Rank], pairing: StepPairing, step_ns: float) -> str:
    """The job's note when every rank waits for a core, else ""."""
    found = cores_wait(ranks, pairing, step_ns)
    return found.text if found is not None else ""


def _pct(shares: np.ndarray) -> str:
    """ "80-83%", or "4%" when the ranks' shares round alike."""
    lo, hi = round(100 * float(shares.min())), round(100 * float(shares.max()))
    return f"{lo}%" if lo == hi else f"{lo}-{hi}%"
