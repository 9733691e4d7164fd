"""What to change in a DataLoader with worker processes that were not captured (decision 881).

A PyTorch profiler trace of a user's own ``torch.profiler`` run names the loop's ``next()``
``enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__``: the batches are made in
worker processes, and the trace holds neither those processes nor ``num_workers``. The
overview told such a loop, input-bound, to "prepare batches ahead of the step
(DataLoader(num_workers=N, persistent_workers=True), ...)": what it already does. What the
trace does show is the rate: a loop that waits in ``next()`` for its batches takes one every
(its other work + its wait), which is, on average, how fast its workers delivered them; for
the wait to go, they must deliver one every (its other work), so they need
(other + wait) / other times the workers' throughput they have: more workers where cores
are idle, or cheaper batches. Captured workers get their own verdict (`loader_verdict`).
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.input.loader_verdict import (
    INPUT_WAIT_PERCENT,
    batches_per_step,
    recorded_cpu,
)
from stepscope.stats.steps.breakdown import StepDb
from stepscope.vocab.pytorch import is_dataloader_next

# The DataLoader iterator of ``num_workers > 0``, as the PyTorch profiler names its ``next()``.
WORKERS_ITER = "_MultiProcessingDataLoaderIter.__next__"


def worker_loader(profile: Profile, db: StepDb | None, first: int = 0) -> str:
    """Advice for a DataLoader whose uncaptured worker processes the steps from ``first`` on
    (the warm-up's end) wait for, ``INPUT_WAIT_PERCENT`` of their time or more; "" otherwise."""
    if db is None or not db.n_steps:
        return ""
    keep = np.arange(db.n_steps) >= (first if first < db.n_steps else 0)
    ids = profile.strings.ids_matching(lambda s: is_dataloader_next(s) and s.endswith(WORKERS_ITER))
    if not len(ids):
        return ""
    total = int(db.dur_ns[keep].sum())
    input_ns = float(db.limit_ns()["input"][keep].sum())
    if not total or 100.0 * input_ns / total < INPUT_WAIT_PERCENT:
        return ""
    # the loop's waits in next() inside the steps judged (the first batches come slower: the
    # workers start), and the rest of a step's time per batch
    calls = np.flatnonzero(np.isin(profile.name, ids))
    at = profile.start_ns[calls]
    lo = int(db.start_ns[keep][0])
    hi = int(db.start_ns[keep][-1] + db.dur_ns[keep][-1])
    judged = calls[(at >= lo) & (at < hi)]
    if not len(judged):
        return ""
    wait_ms = float(profile.dur_ns[judged].mean()) / 1e6
    batches = batches_per_step(profile, db, keep)
    other_ms = total / int(keep.sum()) / 1e6 / batches - wait_ms
    if other_ms <= 0:
        return ""
    times = (other_ms + wait_ms) / other_ms
    which = "the steps once warm" if not keep[0] else "the steps"
    every = "" if round(batches) <= 1 else f" ({batches:.0f} batches a step)"
    cores = recorded_cpu(profile)[0]
    room = (
        f"if the host's {cores} cores have room for them"
        if cores
        else "where cores are idle (the trace records neither)"
    )
    return (
        f"The DataLoader makes its batches in worker processes, and {which} wait for them "
        f"{100.0 * input_ns / total:.1f}% of their time ({wait_ms:.2f} ms a batch in "
        f"next()): the workers delivered a batch every {other_ms + wait_ms:.2f} ms{every}, "
        f"where the steps' {other_ms:.2f} ms of other work would take one. They need about "
        f"{times:.1f}x their throughput: {times:.1f}x the num_workers {room}, otherwise "
        "cheaper batches (the Dataset's __getitem__ and collate_fn); a larger "
        "prefetch_factor does not help workers that are slower on average."
    )
