"""Each place's share of fetching, from the loop's fetches the capture timed (decisions 505,
730, 1064).

`fetch._timed_gaps` counts, in every step, the share of each place's untraced gaps ("after A,
before B") that the timed fetches covered in the steps they were timed in. A gap of a jitted
JAX loop that blocks on its update (``block_until_ready``) holds the wait for XLA's threads,
then the fetch of the next batch: one share over the whole gap made the fetch longer where the
wait was (step 0's first call, 48 ms of wait in a 79 ms gap: 43 ms of fetch for the 31 the
script timed) and shorter everywhere else (25.4 ms for 30.8), and the steps began 5 ms after
their fetch (decision 1064). The share is therefore taken apart for the gap's part that only
a wait for a computation covers and for the rest: a fetch timed beside the computation (an
un-blocked loop, decision 725) counts there, one timed after it does not. The un-waited part
is taken apart again: its tail, after the gap's last wait, where a blocked loop fetches, and
the pauses between its waits (a long computation's idle moments on XLA's threads), which
the first calls' long waits held more of.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.stats.intervals import intersect_sets, overlap_with

# The steps not timed have a place's gaps this many times longer (median) than the timed
# steps: the first fetches' share there says nothing of theirs. The thread-fed loop of
# decision 730 waited 1.2 ms a fetch in its first 4 (the queue full) and 25 ms later.
UNLIKE = 2.0


def waited_parts(
    g_lo: np.ndarray,
    g_hi: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    waited: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per gap (sorted, disjoint): its time a wait for a computation covers (``waited``:
    sorted, disjoint intervals; None: none) and the fetches' (``lo``, ``hi``) there; its tail,
    after the last such wait in it (the whole gap without one), and the fetches' there."""
    if waited is None or not len(waited[0]):
        zero = np.zeros(len(g_lo), np.int64)
        return zero, zero.copy(), g_hi - g_lo, overlap_with(g_lo, g_hi, lo, hi)
    w_lo, w_hi = waited
    f_lo, f_hi = intersect_sets(lo, hi, w_lo, w_hi)
    last = np.searchsorted(w_lo, g_hi, "left") - 1  # the last wait begun before the gap's end
    ended = np.where(last >= 0, w_hi[np.maximum(last, 0)], g_lo)
    t_lo = np.clip(ended, g_lo, g_hi)
    return (
        overlap_with(g_lo, g_hi, w_lo, w_hi),
        overlap_with(g_lo, g_hi, f_lo, f_hi),
        g_hi - t_lo,
        overlap_with(t_lo, g_hi, lo, hi),
    )


def shared(
    length: np.ndarray,
    over: np.ndarray,
    parts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    place: np.ndarray,
    probed: np.ndarray,
    n_places: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per gap: the time counted as the fetch, and of it what lies in the gap's waited part.
    ``length``/``over``: each gap's time and the timed fetches' in it; ``parts``: the same in
    its waited part and in its tail (`waited_parts`); the rest of a gap lies between its
    waits (the computation's own pauses); ``probed``: the gaps of the steps the fetch was
    timed in. Each part has its own share, as the timed steps' fetches cover it."""
    w_len, w_over, t_len, t_over = parts

    def share(p_len: np.ndarray, p_over: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Per place: the timed fetches' share of this part; ``other`` where the timed steps
        had none of it there (a part only the later steps have keeps the broader share)."""
        seen = np.bincount(place[probed], weights=p_len[probed], minlength=n_places)
        got = np.bincount(place, weights=p_over, minlength=n_places)
        own = np.divide(got, seen, out=np.zeros(n_places), where=seen > 0)
        return np.where(seen > 0, np.minimum(own, 1.0), other)

    whole = share(length, over, np.zeros(n_places))
    unwaited = share(length - w_len, over - w_over, whole)
    tail = share(t_len, t_over, unwaited)
    pauses = share(length - w_len - t_len, over - w_over - t_over, unwaited)
    waited = share(w_len, w_over, whole)
    in_waited = w_len * waited[place]
    counted = t_len * tail[place] + (length - w_len - t_len) * pauses[place] + in_waited
    return counted, in_waited


def unlike(
    length: np.ndarray, place: np.ndarray, step: np.ndarray, probed: np.ndarray, n_places: int
) -> np.ndarray:
    """Per place: whether its time in a step not timed is `UNLIKE` times longer (median over
    those steps) than in a timed one. A step's time at a place is the sum of its gaps there:
    another thread's traced event inside a gap cuts it in pieces of the same place (a
    producer's ``jax.device_put`` just before the queue's ``get`` returns), and the median
    of the pieces was a sliver, not the wait (decision 1011)."""
    out = np.zeros(n_places, dtype=bool)
    for p in np.unique(place[probed]).tolist():
        at_p = place == p
        inside = _per_step(length[at_p & probed], step[at_p & probed])
        outside = _per_step(length[at_p & ~probed], step[at_p & ~probed])
        if len(outside) and np.median(outside) > UNLIKE * max(float(np.median(inside)), 1.0):
            out[p] = True
    return out


def _per_step(length: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The gaps' lengths summed per step (the steps that have one)."""
    steps, inverse = distinct_inverse(step.astype(np.int64))
    return np.bincount(inverse, weights=length, minlength=len(steps))
