"""Gradient accumulation told: the optimizer steps every N inferred steps.

A loop that accumulates gradients over N micro-batches runs ``N`` forward and backward
passes per optimizer step. The steps stepscope finds without markers are the loop's
iterations (one batch each), so each is a micro-batch, and the user's "step" (an optimizer
step) is N of them. PyTorch's profiler names each optimizer call (``Optimizer.step#SGD.step``);
when the steps hold one such call every N-th step, always the same N >= 2, the step
description says so and gives the time of an optimizer step (decision 458). Other
frameworks' optimizers leave no event of their own, so nothing is said there.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.vocab.pytorch import OPTIMIZER_STEP_PREFIX

MIN_OPTIMIZER_STEPS = 3  # fewer cannot show a period


def accumulation_note(profile: Profile, start_ns: np.ndarray, dur_ns: np.ndarray) -> str:
    """``Optimizer.step ran in 20 of the 80 steps, every 4th: ...`` for steps (in start
    order) that hold an optimizer step every N-th one, N >= 2; "" otherwise."""
    n = len(start_ns)
    ids = profile.strings.ids_matching(lambda s: s.startswith(OPTIMIZER_STEP_PREFIX))
    if n < 2 * MIN_OPTIMIZER_STEPS or not len(ids):
        return ""
    ev = np.flatnonzero(np.isin(profile.name, ids))
    at = profile.start_ns[ev]
    k = np.searchsorted(start_ns, at, side="right") - 1
    inside = (k >= 0) & (at < start_ns[np.maximum(k, 0)] + dur_ns[np.maximum(k, 0)])
    counts = np.bincount(k[inside], minlength=n)
    has = np.flatnonzero(counts)
    if len(has) < MIN_OPTIMIZER_STEPS or counts.max() > 1:
        return ""
    every = np.diff(has)
    period = int(every[0])
    # the steps before the first and after the last optimizer step are at most a group: its
    # optimizer call can fall outside the capture, or after the last step's traced work
    if period < 2 or (every != period).any() or has[0] > period or n - 1 - has[-1] > period:
        return ""
    per_update_ms = period * float(dur_ns.mean()) / 1e6
    return (
        f"Optimizer.step ran in {len(has)} of the {n} steps, every {period}th: gradient "
        f"accumulation, each step is one micro-batch and one optimizer step is {period} "
        f"steps ({per_update_ms:.2f} ms on average)"
    )


@record
class OptimizerSteps:
    """The optimizer steps of a loop that accumulates gradients: whole groups of ``period``
    consecutive iterations, each ending with the iteration that ran the optimizer."""

    first: np.ndarray  # int64: per optimizer step, its first iteration
    last: np.ndarray  # int64: per optimizer step, its last iteration (the optimizer's)
    period: int  # iterations per optimizer step
    name: str  # the optimizer's annotation, e.g. ``Optimizer.step#AdamW.step``
    left_out: int  # iterations in no whole group (before the first, after the last)


def optimizer_steps(
    profile: Profile, line: int, start_ns: np.ndarray, end_ns: np.ndarray
) -> OptimizerSteps | None:
    """The inferred iterations ``start_ns``-``end_ns`` (in start order) of one thread grouped
    into the optimizer's steps, when the thread's ``Optimizer.step#`` annotation falls in
    every N-th iteration, always the same N >= 2, one per iteration, at least 3 times, with
    fewer than N iterations before the first and after the last; None otherwise.

    A user's step is the optimizer's: a loop that runs 4 micro-batches per ``opt.step()``
    measures one step per ``opt.step()``, and its steps alternate 3 short iterations and a
    long one (decision 535)."""
    n = len(start_ns)
    ids = profile.strings.ids_matching(lambda s: s.startswith(OPTIMIZER_STEP_PREFIX))
    if n < 2 * MIN_OPTIMIZER_STEPS or not len(ids):
        return None
    ev = np.flatnonzero(np.isin(profile.name, ids) & (profile.line == line))
    if not len(ev):
        return None
    at = profile.start_ns[ev]
    k = np.searchsorted(start_ns, at, side="right") - 1
    inside = (k >= 0) & (at < end_ns[np.maximum(k, 0)])
    counts = np.bincount(k[inside], minlength=n)
    has = np.flatnonzero(counts)
    if len(has) < MIN_OPTIMIZER_STEPS or counts.max() > 1 or (~inside).sum() > 2:
        return None  # outside the iterations: at most one before and one after them
    every = np.diff(has)
    period = int(every[0])
    if period < 2 or (every != period).any() or has[0] > period or n - 1 - has[-1] >= period:
        return None
    # the iterations before the first whole group: the capture began inside an accumulation
    whole = has[has >= period - 1]
    if len(whole) < MIN_OPTIMIZER_STEPS:
        return None
    first = whole - (period - 1)
    names = profile.strings[int(profile.name[ev[inside][0]])]
    return OptimizerSteps(
        first.astype(np.int64), whole.astype(np.int64), period, names, n - period * len(whole)
    )
