"""The straggler rule for runs without collective calls to match: own time.

Without collectives to compare arrivals at (CPU workers that do not communicate, traces
whose collectives were not recorded), a rank's **own** time in a pod step is its step time
less its collective time beyond the shortest collective time of any rank in that step
(waiting for a late rank: the late rank arrives last and waits least). It is late in a step
when its own time exceeds the median rank's by `LATE_SHARE` of the median (and
`LATE_MIN_NS`); the **reason** is the breakdown category (never collectives) in which it
exceeds the median rank the most over its late steps; a loop's fetch from a plain Python
iterator is input there, not "All Others" (decision 387). Clocks of different hosts are never
compared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.steps.pairing import StepPairing
from stepscope.stats.stragglers_types import (
    BY_OWN_TIME,
    LATE_MIN_NS,
    LATE_SHARE,
    ONE_COMPARED,
    FetchTimes,
    PodLateness,
    Rank,
    Straggler,
    costly,
    nan_reduce,
    required_late_steps,
    steps_said,
)
from stepscope.stats.stragglers_words import own_time_words
from stepscope.words import of_steps

WAIT_CATEGORIES = ("collective_wait", "device_collectives")


def by_own_time(
    ranks: Sequence[Rank],
    pairing: StepPairing,
    dur: np.ndarray,
    fetch: FetchTimes | None = None,
) -> PodLateness:
    names = tuple(r.host for r in ranks)
    n_h, n_s = dur.shape
    cats = {c: np.full((n_h, n_s), np.nan) for c in CATEGORY_NAMES}
    for i, (r, rows) in enumerate(zip(ranks, pairing.rows, strict=True)):
        have = rows >= 0
        for c, values in r.steps.category_ns().items():
            cats[c][i, have] = values[rows[have]]
    if fetch is not None:  # the fetch is input, out of its untraced "All Others"
        fetched = np.minimum(fetch.ns, np.maximum(np.nan_to_num(cats["other"]), 0.0))
        cats["input"] = cats["input"] + fetched
        cats["other"] = cats["other"] - fetched
    coll = sum(np.nan_to_num(cats[c]) for c in WAIT_CATEGORIES) + np.where(
        np.isnan(dur), np.nan, 0.0
    )
    wait = np.nan_to_num(coll - nan_reduce(coll, "min")[None, :], nan=0.0)
    own = dur - wait
    median = nan_reduce(own, "median")
    late_ns = own - median[None, :]
    threshold = np.maximum(LATE_SHARE * np.nan_to_num(median), LATE_MIN_NS)
    late = np.nan_to_num(late_ns, nan=-1.0) >= threshold[None, :]
    if n_h < 2:
        late[:] = False
    medians = {c: nan_reduce(v, "median") for c, v in cats.items() if c not in WAIT_CATEGORIES}
    need = required_late_steps(n_s)
    found = []
    for i, host in enumerate(names):
        cols = np.flatnonzero(late[i])
        if len(cols) < need:
            continue
        excess = {c: float(np.nansum(cats[c][i, cols] - medians[c][cols])) for c in medians}
        reason = max(excess, key=lambda c: (excess[c], -CATEGORY_NAMES.index(c)))
        others = np.ones(n_h, bool)
        others[i] = False
        waited = wait[others][:, cols]
        own_reason = float(np.nansum(cats[reason][i, cols]))
        iterator = ""
        if fetch is not None and reason == "input" and fetch.ns[i, cols].any():
            iterator = fetch.of_iterator(i)
        found.append(
            _straggler(
                host,
                tuple(int(s) for s in pairing.step_num[cols]),
                int(np.nansum(late_ns[i, cols])),
                reason,
                int(excess[reason]),
                int(waited.sum()),
                int((waited > 0).any(axis=1).sum()),
                n_s,
                (int(own_reason), int(own_reason - excess[reason])),
                iterator,
            )
        )
    found = costly(
        sorted(found, key=lambda s: (-s.late_ns, s.host)), dur, ~np.isnan(dur).all(axis=0)
    )
    waiting = np.zeros(n_h, bool)
    for s in found:
        in_steps = np.isin(pairing.step_num, s.steps)
        waiting |= wait[:, in_steps].sum(axis=1) > 0
    waiting[[names.index(s.host) for s in found]] = False
    return PodLateness(
        names,
        pairing.step_num,
        dur,
        wait,
        late_ns,
        late,
        tuple(found),
        pairing.description,
        BY_OWN_TIME,
        waiting=waiting,
    )


def _straggler(
    host: str,
    steps: tuple[int, ...],
    late_ns: int,
    reason: str,
    reason_ns: int,
    waited_ns: int,
    waiters: int,
    n_steps: int,
    own_and_peers: tuple[int, int],
    iterator: str = "",
) -> Straggler:
    s = Straggler(
        host,
        steps,
        late_ns,
        reason,
        reason_ns,
        waited_ns,
        waiters,
        "",
        BY_OWN_TIME,
        0,
        *own_and_peers,
        iterator=iterator,
    )
    # its steps in full here; the finding names the same sentence's steps more briefly
    when = f"{steps_said(steps)} ({of_steps(len(steps), n_steps, ONE_COMPARED)})"
    return dataclasses.replace(s, explanation=own_time_words(s, when))
