"""A step followed by a pass over another DataLoader ends with its own work (decision 585).

Inferred steps run from one lead to the next (`stepscope.stats.steps.cycle`). When the lead
is the optimizer step, as in a Lightning fit over a single-process DataLoader (its forward
and backward run inside ``Optimizer.step``'s closure, and the fetch is too short to lead),
an epoch's last step ran from its optimizer step to the next epoch's first one, so it held
the validation loop run between them: 32.9 ms for the script's 3.1 (on_train_batch_start to
_end), 237.8 for 107.5 in decision 568's capture. Decision 538 trims it only where the fetch
leads and each validation batch is a period of its own.

A period that holds the common period's optimizer steps but at least two DataLoader fetches
more than it is such a period: another loop fetched batches there and trained on none of
them (a validation or evaluation pass; a pass's end alone, the fetch that raises
StopIteration, is one more, and the next pass's start is decision 562's). Its step ends
where its own iteration's work ends, by the rules of the profile's last iteration
(`stepscope.stats.steps.last_step`, decision 475), and the pass is in no step, as the
script's clock and decision 538 leave it. Only when the next iteration's batch comes from a
new pass (a DataLoader iterator made after the other loop's last fetch): the training epoch
ended before the other loop ran, as Lightning's validation does and as a loop that evaluates
after each epoch does; a loop that evaluates over a loader inside its iteration (every N
steps) fetches its next batch from the same pass, and the script timing that iteration
counts the evaluation, so it stays in the step. Periodic work inside an iteration that fetches
nothing (an evaluation on tensors at hand, a checkpoint) stays in its step: the script that
times the iteration counts it.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.last_step import Periods, last_iteration_end
from stepscope.vocab.pytorch import OPTIMIZER_STEP_PREFIX, is_dataloader_iter, is_dataloader_next

EXTRA_FETCHES = 2  # more fetches than the common period's, at least: another loader's pass
# A new pass over a DataLoader: stepscope's mark of an iter() that starts workers (decision
# 562), or, single-process, the base seed PyTorch's iterator draws as it is made
# (``torch.empty((), dtype=torch.int64).random_(generator)``: a top-level ``aten::random_``)
PASS_SEED = "aten::random_"


def begins_pass(name: str) -> bool:
    """A new pass over a DataLoader begins with this event."""
    return is_dataloader_iter(name) or name == PASS_SEED


def own_ends(profile: Profile, periods: Periods) -> np.ndarray:
    """Per period between consecutive leads: where its step ends, the end of its iteration's
    own work where another loader's pass follows it, else the next lead's start."""
    names, pos, held = periods.names, periods.pos, periods.held
    ends = periods.start[pos[1:]].copy()
    fetch_ids = profile.strings.ids_matching(is_dataloader_next)
    step_ids = profile.strings.ids_matching(lambda s: s.startswith(OPTIMIZER_STEP_PREFIX))
    if not len(fetch_ids) or not len(step_ids) or not held.any():
        return ends
    lo, hi = int(pos[0]), int(pos[-1])
    period = np.searchsorted(pos, np.arange(lo, hi), "right") - 1
    n_periods = len(pos) - 1
    fetches = np.bincount(period[np.isin(names[lo:hi], fetch_ids)], minlength=n_periods)
    steps = np.bincount(period[np.isin(names[lo:hi], step_ids)], minlength=n_periods)
    k = int(np.argmax(held))
    usual_fetches, usual_steps = int(fetches[k]), int(steps[k])
    if not usual_steps:
        return ends
    # never step 0's period: nothing before it says what its own work is
    other = (fetches >= usual_fetches + EXTRA_FETCHES) & (steps == usual_steps)
    other[0] = False
    fetched = lo + np.flatnonzero(np.isin(names[lo:hi], fetch_ids))
    begins = np.isin(names, profile.strings.ids_matching(begins_pass))
    for k in np.flatnonzero(other).tolist():
        # the next iteration's fetch (its period's last) comes from a new pass: the training
        # loop's epoch ended before the other loop ran, as Lightning's validation does; a
        # loop that evaluates inside its iteration fetches its next batch from the same pass
        mine = fetched[period[fetched - lo] == k]
        if not begins[int(mine[-2]) + 1 : int(mine[-1])].any():
            continue
        own = last_iteration_end(periods.upto(k))
        if own is not None:
            ends[k] = min(int(ends[k]), own)
    return ends


def alone_periods(
    profile: Profile, names: np.ndarray, pos: np.ndarray, held: np.ndarray
) -> np.ndarray:
    """Per period between consecutive leads: whether its work may be the last iteration's
    (`last_step.last_iteration_end`'s ``alone``): a period of the most common work, or one
    that begins no new pass over a DataLoader (an epoch's edge: its validation and the next
    epoch's first batch)."""
    ids = profile.strings.ids_matching(begins_pass)
    seen = np.r_[0, np.cumsum(np.isin(names, ids))]
    return held | (seen[pos[1:]] == seen[pos[:-1]])
