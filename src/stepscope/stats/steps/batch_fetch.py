"""Inferred steps of a loop over a DataLoader begin where their batch is fetched (decision 606).

The repeat that leads inferred steps (`stepscope.stats.steps.cycle`) is often not the fetch:
a DataLoader's ``__next__`` also called by a validation loop is no member of the cycle, so a
plain loop's steps ran from its loss (``aten::cross_entropy_loss``) to the next one, and a
Lightning fit's from one ``Optimizer.step`` to the next (the forward and backward run in its
closure). Each step then held the next batch's fetch and forward, not its own: a script timing
each iteration from its fetch sees the same totals, but not at an epoch's edges. The epoch's
last step, cut before the validation (decision 585), lacked its own head (0.82 ms for the
script's 1.35, /tmp/loops14/ev1); the next epoch's first step began at its optimizer step and
left out its fetch, and the ``iter()`` that started its workers with it (107.9 ms for the
script's 166.8, /tmp/loops14/lit_p2), since decision 562 moves a start only from a fetch.

So, with the capture begun on the loop's thread and its first iteration seen fetching before
its lead, each step begins at its batch's fetch: the ``n``-th last DataLoader fetch up to its
lead and after the previous step's lead, ``n`` the fetches of the most common period (one, or
one per micro-batch where the optimizer steps every ``n`` batches, decision 535). Step 0
begins there too, or where that batch's pass began when nothing ran between (the ``iter()``
mark of decision 562, or a single-process loader's base seed, ``torch.empty((),
dtype=torch.int64).random_(generator).item()``): the set-up before it (Lightning's sanity check
and hooks, the model's move to its device, code between ``start()`` and the loop) is time
before the first step, in no step, as in the script that times its iterations.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.vocab.pytorch import is_dataloader_iter, is_dataloader_next

# a single-process iterator's base seed, made as the pass begins (``_BaseDataLoaderIter``)
SEED_OPS = ("aten::empty", "aten::random_", "aten::item")


def batch_fetches(
    profile: Profile, names: np.ndarray, lead_pos: np.ndarray, pos: np.ndarray, held: np.ndarray
) -> np.ndarray | None:
    """Per step (its lead at position ``lead_pos[k]`` of one thread's top-level events
    ``names``; ``pos``: every lead's position, ``held``: `cycle.common_work`'s mask), the
    position of its batch's fetch, or -1; None when the loop's first step fetched nothing
    before its lead (its iterations do not begin with a fetch)."""
    fetch_ids = profile.strings.ids_matching(is_dataloader_next)
    if not len(fetch_ids) or not held.any() or not len(lead_pos):
        return None
    at = np.flatnonzero(np.isin(names, fetch_ids))
    if not at.size or at[0] > lead_pos[0]:
        return None
    if np.isin(names[lead_pos[0]], fetch_ids):
        return lead_pos.astype(np.int64)  # the fetch leads: each step begins at it already
    k = int(np.argmax(held))
    # the fetches a common iteration makes: after its lead, up to the next one's
    n = int(((at > pos[k]) & (at <= pos[k + 1])).sum())
    if not n:
        return None
    upto = np.searchsorted(at, lead_pos, "right")
    after = np.r_[0, np.searchsorted(at, lead_pos[:-1], "right")]
    out = np.where(upto - after >= n, at[np.maximum(upto - n, 0)], -1)
    return out.astype(np.int64) if out[0] >= 0 else None


def pass_start(profile: Profile, names: np.ndarray, own: np.ndarray, fetch: int) -> int:
    """The position where the pass of the fetch at ``fetch`` began, when nothing ran between:
    the DataLoader's ``iter()`` mark, or its base seed's ops, just before it (the profiler's
    own work passed over); else ``fetch``."""
    before = [j for j in range(fetch - 1, max(fetch - 8, -1), -1) if not own[j]]
    if not before:
        return fetch
    text = [profile.strings[int(names[j])] for j in before[:3]]
    if is_dataloader_iter(text[0]):
        return before[0]
    seed = list(reversed(SEED_OPS))
    if text[: len(seed)] == seed:
        return before[len(seed) - 1]
    if text[:2] == seed[:2]:  # the seed made without its empty tensor's own event
        return before[1]
    return fetch


def from_fetches(
    start: np.ndarray, starts: np.ndarray, ends: np.ndarray, batches: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Steps 1 on begun at their batch's fetch (``batches``: its position per step, -1 for
    none) where it is before their lead; each step before one moved ends there at the latest
    (contiguous steps stay so; one that ends with its own work keeps its end). How many
    moved."""
    starts, ends = starts.copy(), ends.copy()
    moved = 0
    for k in range(1, len(starts)):
        if batches[k] < 0 or start[int(batches[k])] >= starts[k]:
            continue
        starts[k] = start[int(batches[k])]
        ends[k - 1] = min(int(ends[k - 1]), int(starts[k]))
        moved += 1
    return starts, ends, moved
