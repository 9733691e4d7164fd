"""Steps that do extra work every N steps: a checkpoint, an evaluation, a metric logged now
and then (decision 580).

A loop that saves a checkpoint every 10 steps makes every 10th step slower by the save, but
its other steps are slow too, now and then, for their own reasons (a batch late from the
loader): taken together, the slow steps are neither all of the period nor of one cause, and
the save read as "11 of 60 steps ... mostly in input" (a PyTorch loop with 2 DataLoader
workers, load 3.8: the checkpoint steps spent 9-20 ms more in untraced host work, the
others' stalls were input). The period is found in one limit at a time (`periodic_extra`):
every step at the period's place after the warm-up spends at least `PERIODIC_MIN_EXCESS` of
the median step more in that limit than the limit's median, and few other steps do.
"""

from __future__ import annotations

import numpy as np

from stepscope.records import record

PERIODIC_MIN_STEPS = 3  # steps at the period's place, at least
PERIODIC_MIN_EXCESS = 0.25  # each one's extra time in the limit, of the median step
PERIODIC_MIN_EXCESS_NS = 1_000_000  # ... and at least this
# the other steps with as much extra time in that limit: at most this share of them (the
# extra work is the period's own, not a limit that stalls anywhere)...
PERIODIC_OTHERS_SHARE = 0.1
# ... and the chance that stalls as frequent as theirs fall on every step of some place of
# some period tried, by chance alone, below this: 3 steps of a limit that stalls at 10% of
# the others' steps, among the 209 places of each of the 8 limits in 60 steps, are no period
PERIODIC_CHANCE = 0.01


@record
class Periodic:
    """Steps at one place of a period that spend more time in one limit."""

    every: int  # the period, in steps
    steps: np.ndarray  # their indexes into the step database (the period's place, after warm-up)
    limit: str  # the limit they spend it in (`LIMIT_LABELS`' keys)
    # per step of ``steps``: its time in the limit over the median of the steps elsewhere
    extra_ns: np.ndarray


def periodic_extra(
    step_num: np.ndarray,
    dur_ns: np.ndarray,
    limit_ns: dict[str, np.ndarray],
    warm: int,
) -> Periodic | None:
    """The shortest period (then its place with the most extra time) at which the steps after
    the first ``warm`` spend extra time in one limit, or None. The profile's last step may
    miss it: its end is inferred from its own work (`last_step`), which the work after the
    model (a checkpoint's save) may not be part of."""
    n = len(dur_ns) - warm
    if n < 2 * PERIODIC_MIN_STEPS:
        return None
    num = step_num[warm:].astype(np.int64)
    floor = max(PERIODIC_MIN_EXCESS * float(np.median(dur_ns[warm:])), PERIODIC_MIN_EXCESS_NS)
    extra = {
        name: ns[warm:] - int(np.median(ns[warm:]))
        for name, ns in limit_ns.items()
        if len(ns) == len(dur_ns)
    }
    hits = {name: ex >= floor for name, ex in extra.items()}
    longest = n // PERIODIC_MIN_STEPS
    tried = len(hits) * (longest * (longest + 1) // 2 - 1)  # the (limit, period, place) tried
    # one pass over the steps per (period, limit), counted by place (not a mask per place:
    # a profile of 5,000 steps tries ~1,600 periods)
    last_missed = {name: not bool(hit[-1]) for name, hit in hits.items()}
    counts = {name: int(hit.sum()) for name, hit in hits.items()}
    for every in range(2, longest + 1):
        place_of = num % every
        total = np.bincount(place_of, minlength=every)
        best: tuple[int, int, int, str] | None = None  # (-extra, place, order, name)
        for order, (name, hit) in enumerate(hits.items()):
            # every step at a place (but the last) holds the extra work: a limit with fewer
            # such steps than a place has cannot be periodic at this period
            if counts[name] < max(int(total.min()) - 1, PERIODIC_MIN_STEPS):
                continue
            k = np.bincount(place_of, weights=hit, minlength=every).astype(np.int64)
            missed = total - k
            exempt = np.zeros(every, bool)
            exempt[int(place_of[-1])] = last_missed[name]
            others = (counts[name] - k) / np.maximum(n - total, 1)
            ok = (
                ((missed == 0) | ((missed == 1) & exempt))
                & (k >= PERIODIC_MIN_STEPS)
                & (others <= PERIODIC_OTHERS_SHARE)
                & (tried * others**k < PERIODIC_CHANCE)
            )
            if not ok.any():
                continue
            sums = np.bincount(place_of, weights=np.where(hit, extra[name], 0), minlength=every)
            for place in np.flatnonzero(ok).tolist():
                key = (-int(sums[place]), place, order, name)
                if best is None or key < best:
                    best = key
        if best is not None:
            _, place, _, name = best
            mine = (place_of == place) & hits[name]
            # the extra time against the other steps': with every 2nd step slow, the median
            # of all steps lies between the two kinds and halved it (decision 630)
            ns = limit_ns[name][warm:]
            base = int(np.median(ns[place_of != place]))
            return Periodic(every, np.flatnonzero(mine) + warm, name, ns[mine] - base)
    return None
