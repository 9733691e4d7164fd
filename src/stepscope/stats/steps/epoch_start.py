"""An epoch's first step begins where its DataLoader starts its workers (decision 562).

Inferred steps begin at their batch's fetch. A new pass over a DataLoader with workers first
makes its iterator, ``iter(loader)``, which starts the worker processes (100-300 ms on a
loaded host), and only then fetches: that time was in no step, between the previous epoch's
last step (or the validation loop) and the epoch's first fetch. A user timing each batch from
the epoch's start (Lightning's ``on_train_epoch_start``, a loop's ``for batch in loader:``
timed from the line before) counts it in the epoch's first batch, as input. stepscope's
capture marks that ``iter()`` (`vocab.pytorch.DATALOADER_ITER`, an input wait), so a step
whose fetch follows such a mark, with no other fetch between them and after the previous
step's end, begins at the mark. A validation loader's ``iter()`` in the same gap is followed
by its own fetches, so it moves nothing; a persistent loader's workers start once, and its
later passes have no mark.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.vocab.pytorch import is_dataloader_iter, is_dataloader_next


def from_iterators(
    profile: Profile, top: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, int]:
    """``starts`` (steps 1 on, of one thread whose top-level events ``top`` are in start order)
    moved back to the ``iter()`` mark just before each, and how many moved."""
    ids = profile.strings.ids_matching(is_dataloader_iter)
    if not ids.size or len(starts) < 2:
        return starts, 0
    names = profile.name[top]
    at = profile.start_ns[top]
    marks = at[np.isin(names, ids)]
    if not marks.size:
        return starts, 0
    fetches = at[np.isin(names, profile.strings.ids_matching(is_dataloader_next))]
    out = starts.copy()
    moved = 0
    for k in range(1, len(starts)):
        lo, hi = int(ends[k - 1]), int(starts[k])
        inside = marks[(marks >= lo) & (marks < hi)]
        if not inside.size:
            continue
        mark = int(inside[-1])  # the last loader started before the step: its own
        if np.any((fetches > mark) & (fetches < hi)):
            continue  # another loop fetched from it first (a validation pass)
        out[k] = mark
        moved += 1
    return out, moved
