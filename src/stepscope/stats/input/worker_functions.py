"""What DataLoader worker processes spend their batches in, from their Python stack samples
(decision 352).

A captured worker (`stepscope.capture.loader_workers`) has a thread line holding its batch
spans (``Iterator::<loader>::Worker``) and, when the session sampled, a ``Python samples``
line (`stepscope.capture.worker_sampler`; layout: docs/formats/python_samples.md). Only the
samples taken inside the worker's own batch spans count (the rest is the worker waiting for
its next index). A function's share is the share of those samples whose stack holds it
(inclusive, once per sample); of functions seen in exactly the same samples (a caller and its
only callee) the callee is kept, so the frames on every sample are named by the deepest of
them -- the dataset's ``__getitem__`` (100%) when every sample is in it, else torch's worker
loop or fetcher, which says nothing and is left out.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.fields import out
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.host.python_samples import sample_points, sampled_thread_line, tally_stacks
from stepscope.vocab.pytorch import DATALOADER_WORKER_FILES

TOP = 5  # functions listed per loader


def _machinery(key: str) -> bool:
    """Whether ``func (file)`` is torch's worker loop or dataset fetcher."""
    return key.rpartition(" (")[2].rstrip(")") in DATALOADER_WORKER_FILES


@record
class WorkerFunction:
    """A Python function the workers' stack samples saw while they made batches."""

    function: str = out("`func (file)`: every line of the function together")
    percent: float = out(
        "share of the workers' samples taken inside their batches whose stack holds it (inclusive)",
        unit="%",
        digits=3,
    )
    ms_per_batch: float = out("that share of the workers' time per batch", unit="ms", digits=6)
    samples: int = out("samples whose stack holds it")
    stack: str = out("its most common call path, outermost first, `;`-joined")


def worker_functions(
    profile: Profile, batch_ev: np.ndarray, ms_per_batch: float
) -> tuple[tuple[WorkerFunction, ...], int]:
    """(the top `TOP` functions, samples taken inside the batches ``batch_ev``)."""
    thread_of = sampled_thread_line(profile)
    stacks: list[np.ndarray] = []
    for thread in sorted(set(profile.line[batch_ev].tolist())):
        lines = np.flatnonzero(thread_of == thread).tolist()
        if not lines:
            continue
        mine = batch_ev[profile.line[batch_ev] == thread]
        order = np.argsort(profile.start_ns[mine], kind="stable")
        starts, ends = profile.start_ns[mine][order], profile.end_at(mine)[order]
        sample_ev, at, _, _ = sample_points(profile, lines)
        k = np.searchsorted(starts, at, "right") - 1
        inside = k >= 0
        inside[inside] = at[inside] < ends[k[inside]]
        stacks.append(profile.stat_at("stack", sample_ev[inside]).string_ids())
    if not stacks:
        return (), 0
    ids, inverse = distinct_inverse(np.concatenate(stacks))
    counts = np.bincount(inverse, minlength=len(ids))
    total = int(counts.sum())
    if not total:
        return (), 0
    tally = tally_stacks(profile.strings, ids.tolist(), counts.tolist())
    count = tally.count
    groups = tally.distinct()
    # the functions on every sample are one group, named by its deepest: the dataset's
    # __getitem__ when every sample is in it (kept: its own lines' time shows there), torch's
    # worker loop or fetch when the samples split between __getitem__ and collate (dropped,
    # as on fewer samples: a sample between two calls of fetch made it the top function)
    kept = [k for k in groups if not _machinery(k)]
    if not kept:
        kept = [tally.deepest(groups)]
    kept.sort(key=lambda k: (-count[k], k))
    rows = tuple(
        WorkerFunction(
            k,
            round(100.0 * count[k] / total, 3),
            round(ms_per_batch * count[k] / total, 6),
            count[k],
            tally.common_path(k),
        )
        for k in kept[:TOP]
    )
    return rows, total
