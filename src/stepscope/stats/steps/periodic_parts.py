"""What the periodic steps' whole extra time is (decision 780).

`periodic_extra` finds a period in the one limit whose extra time stands out cleanly at the
period's place. That limit need not hold most of the extra work: a loop that evaluates over
its own DataLoader every 50 steps (`train_eval.py`, 200 steps at load 1-5) spent each
evaluation's ~20 fetches in input (+18-54 ms a step, clean) and its forward passes in compute
(+61-122 ms a step, but the machine's noise slowed 28 other steps by as much in compute, so
compute was no period). Counting the input alone, the finding lost 123 ms of the 571 ms the
four evaluations cost (1% of the step time, under the finding's floor) and was never shown;
the report blamed "13 slow steps, mostly in compute". So once the period is found, its cost
is each periodic step's whole time over the other steps' median, and the words say which
limits hold it and whether another loader's pass runs inside those steps.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.vocab.pytorch import is_dataloader_next

PART_SHARE = 0.1  # a limit holding at least this share of the periodic steps' extra is named
PART_MIN_NS = 1_000_000  # ... and at least this
# more DataLoader fetches than the other steps' median, at least: another loader's pass runs
# inside those steps (as `other_pass.EXTRA_FETCHES` tells a pass between two steps)
PASS_FETCHES = 2


@record
class PeriodicParts:
    """The periodic steps' extra time, whole and by limit, and the fetches they add."""

    extra_ns: np.ndarray  # per periodic step: its time over the other steps' median (>= 0)
    by_limit: tuple[tuple[str, int], ...]  # (limit, median extra ns), largest first
    extra_fetches: int  # median DataLoader fetches over the other steps' median (0: none)


def periodic_parts(
    profile: Profile,
    start_ns: np.ndarray,
    dur_ns: np.ndarray,
    limit_ns: dict[str, np.ndarray],
    periodic: np.ndarray,
    others: np.ndarray,
    limit_extra_ns: np.ndarray,
) -> PeriodicParts:
    """``periodic``: the periodic steps' indexes; ``others``: a mask of the steps they are
    measured against (after the warm-up, not periodic); ``limit_extra_ns``: each periodic
    step's extra in the limit the period was found in, a floor for its whole extra (the
    others' median step may hold more of that limit's time than the median of its time)."""
    if not others.any():
        others = np.ones(len(dur_ns), bool)
        others[periodic] = False
    base = int(np.median(dur_ns[others])) if others.any() else 0
    whole = np.maximum(dur_ns[periodic] - base, limit_extra_ns).astype(np.int64)
    total = float(np.median(whole))
    parts = []
    for name, ns in limit_ns.items():
        if len(ns) != len(dur_ns):
            continue
        extra = int(np.median(ns[periodic])) - int(np.median(ns[others]))
        if extra >= max(PART_MIN_NS, PART_SHARE * total):
            parts.append((name, extra))
    parts.sort(key=lambda p: -p[1])
    fetches = fetches_inside(profile, start_ns, start_ns + dur_ns)
    more = int(np.median(fetches[periodic])) - int(np.median(fetches[others]))
    return PeriodicParts(whole, tuple(parts), more if more >= PASS_FETCHES else 0)


def fetches_inside(profile: Profile, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per window [lo, hi) (disjoint): the DataLoader ``__next__`` calls starting inside it,
    the loop's fetches whichever loader they ask."""
    ids = profile.strings.ids_matching(is_dataloader_next)
    counts = np.zeros(len(lo), np.int64)
    if not len(ids) or not len(lo):
        return counts
    order = np.argsort(lo, kind="stable")
    begin, end = np.asarray(lo)[order], np.asarray(hi)[order]
    at = profile.start_ns[np.isin(profile.name, ids)]
    k = np.searchsorted(begin, at, "right") - 1
    inside = (k >= 0) & (at < end[np.maximum(k, 0)])
    counts[order] = np.bincount(k[inside], minlength=len(lo))
    return counts


def after_last_fetch(profile: Profile, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per window [lo, hi) (disjoint): its time after the last DataLoader ``__next__`` call
    ending inside it, to its end (a checkpoint saved after a validation's pass, decision
    1013); 0 where none ends inside."""
    ids = profile.strings.ids_matching(is_dataloader_next)
    out = np.zeros(len(lo), np.int64)
    if not len(ids) or not len(lo):
        return out
    ends = np.sort(profile.end_at(np.flatnonzero(np.isin(profile.name, ids))))
    lo, hi = np.asarray(lo), np.asarray(hi)
    last = np.searchsorted(ends, hi, "right") - 1
    ok = last >= 0
    ok[ok] = ends[last[ok]] >= lo[ok]
    out[ok] = hi[ok] - ends[last[ok]]
    return out
