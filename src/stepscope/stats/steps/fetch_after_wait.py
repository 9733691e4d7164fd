"""Where a blocked loop's fetch begins: after its wait for the computation (decision 1084).

A JAX loop whose update is not jitted (``jax.grad`` called eagerly, then
``block_until_ready``, then ``next()`` of a Python generator) waits, untraced, for XLA's
threads, runs a little of its own Python, fetches (untraced), then runs the next update's
untraced Python (``jax.grad``'s tracing of the function, 0.6-0.8 ms a step) before its first
traced op. `fetch_bounds` began each step the probe did not time at the fetch's estimated
time (`fetch_share`) before that op: 1.08 ms after the script's ``next()`` in a run with a
generator sleeping 20 ms (the post-fetch Python in the step before, and the estimate 0.4 ms
short, learnt from the first calls, whose post-fetch Python was longer). Middle steps' times
were right (the shift cancels); the first one after the timed steps and the last were not.

The trace has a better anchor: the wait ends when the computation does, on the compute
threads (`stepscope.vocab.waits`), and the loop's own Python from there to its ``next()`` is
the same code every iteration. The loop blocked when at least `MIN_TIMED` of the timed
fetches after the first call's began after a computation ended in their untraced gap, with
hardly any computation during any timed fetch (one that does not block, decision 725,
fetches beside its computation). Then the loop's thread was free to go on at the later of
that end and the gap's start (the end of its own last traced event: XLA now and then ran the
update's last small ops inline on the loop's thread, 2 iterations of 40 in a run), the
median time from there to the timed fetches' starts is the loop's own Python, and a later
step begins that long after the same point of its tail (the last computation end in its
gaps, else their start): the fetch cannot begin before the wait it follows ends.

Not where a computation began after that point and before the tail's end (the loop went on
beside it), nor past the tail's end, nor where the estimate's start lies later than that by
more than in the other steps (their median, and 4 median deviations or 0.1 ms more): there
the loop's thread went on well after the computation ended (a loaded machine's thread not
scheduled, the collector), which the script's clock has in the step before; the estimate
keeps it there (decision 1084's four runs at load 3-7: 13 steps of 160 left to the
estimate, nearer the script's in 12 of them).
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.intervals import merge, overlap_with, union_of
from stepscope.stats.steps.waits import compute_events

# timed fetches after a wait (the first call's aside) needed to learn the loop's Python
# between the wait and its fetch
MIN_TIMED = 2
# a computation's time during a timed fetch, of the fetch's: more, and the loop fetched beside
# it. Not none: an XLA Eigen worker's last event (``end: wrapped_subtract``, 0.5 us) came
# 0.02 ms into a blocked loop's fetch (the loop's thread went on when the client's thread
# finished)
BESIDE = 0.05
# a step's lateness (its estimated start less its start from the wait) over the steps' median
# by more than this many median absolute deviations, and at least `TOLERANCE_NS`: its thread
# went on late after the wait
SPREADS = 4.0
TOLERANCE_NS = 100_000


def after_waits(
    profile: Profile,
    lines: tuple[int, ...],
    t_lo: np.ndarray,
    t_hi: np.ndarray,
    first_lo: np.ndarray,
    hi: np.ndarray,
    begins: np.ndarray,
) -> np.ndarray:
    """Per tail (its first gap's start ``first_lo``, its end ``hi``, and where the fetch's
    estimated time before its gaps' ends ``begins``): where the fetch began, the loop's own
    Python after its wait (module docstring), as the timed fetches ``t_lo``, ``t_hi`` (sorted)
    show it; -1 where unknown."""
    none = np.full(len(hi), -1, np.int64)
    if len(t_lo) < MIN_TIMED or not len(hi):
        return none
    on_steps = np.zeros(len(profile.lines), dtype=bool)
    on_steps[np.asarray(lines, np.int64)] = True
    work = compute_events(profile, np.ones(len(profile.name), dtype=bool), on_steps)
    if not len(work):
        return none
    c_lo, c_hi = merge(profile.start_ns[work], profile.end_at(work))
    # hardly any computation running during a timed fetch: the loop blocked before it fetched
    running = overlap_with(t_lo, t_hi, c_lo, c_hi)
    if (running > BESIDE * (t_hi - t_lo)).any():
        return none
    on = np.flatnonzero(on_steps[profile.line])
    u_lo, u_hi = union_of(profile.start_ns[on], profile.end_at(on))
    # each timed fetch's untraced gap begins at the steps' threads' last traced end before it;
    # the first call's fetch aside (nothing ran before it)
    k = np.searchsorted(u_lo, t_lo[1:], "right") - 1
    gap_lo = np.where(k >= 0, u_hi[np.maximum(k, 0)], -1)
    ended = _last_end(c_hi, gap_lo, t_lo[1:])
    if int((ended >= 0).sum()) < MIN_TIMED:
        return none  # the loop did not wait for a computation before its fetches
    # the loop's own Python from where its thread was free to go on to its next()
    free = np.maximum(gap_lo, ended)
    own = int(np.median((t_lo[1:] - free)[free >= 0]))
    c = _last_end(c_hi, first_lo, hi)
    anchor = np.maximum(c, first_lo)
    # a computation begun after that and before the tail's end: the loop did not wait for it
    later = np.searchsorted(c_lo, hi, "left") > np.searchsorted(c_lo, anchor, "right")
    out = anchor + own
    ok = ~later & (out < hi)
    if not ok.any():
        return none
    # The estimate is late by about as much in every step (the next update's Python after the
    # fetch, the share learnt where it was longer); a step whose start from the wait lies
    # further before its estimate than the others' had its thread go on long after the
    # computation ended (a loaded machine's thread not scheduled, the collector): the
    # estimate stays there
    lateness = begins - out
    typical = float(np.median(lateness[ok]))
    spread = float(np.median(np.abs(lateness[ok] - typical)))
    ok &= lateness <= typical + max(SPREADS * spread, TOLERANCE_NS)
    return np.where(ok, out, -1).astype(np.int64)


def _last_end(c_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval [``lo``, ``hi``]: the last computation end (``c_hi``, sorted) inside it,
    -1 where none."""
    j = np.searchsorted(c_hi, hi, "right") - 1
    got = np.where(j >= 0, c_hi[np.maximum(j, 0)], -1)
    return np.where(got > lo, got, -1).astype(np.int64)
