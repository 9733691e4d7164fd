"""Which rank is late, at which steps, and why: stragglers of synchronous training.

In data-parallel training every rank's collectives end together, so a rank that is late
(slow input, slow compute...) makes every other rank wait inside its all-reduce. Step times
are therefore equal on all ranks and say nothing; what differs is where the time goes. Per
pod step (steps paired by `pairing.pair_host_steps`):

- ``wait``: a rank's collective time beyond the shortest collective time of any rank in that
  step. The late rank arrives last and waits least, so its collectives are the shortest;
  everything above that is waiting for it (clocks of different hosts are never compared).
- ``own`` = step time - wait: the time the rank spent on its own work.
- ``late`` = own - the median rank's own time. A rank is late in a step when ``late`` is at
  least `LATE_SHARE` of the median (and `LATE_MIN_NS`).
- the **reason** is the breakdown category (input, host compute, device compute...; never
  collectives) in which the late rank exceeds the median rank the most over its late steps.

Waiters are thus never blamed: their extra time is wait, not own time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.records import record
from stepscope.stats.events import CATEGORY_LABELS, CATEGORY_NAMES
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps

LATE_SHARE = 0.10  # late by 10% of the median rank's own time
LATE_MIN_NS = 20_000  # and by at least 20 us (timer noise on short steps)
WAIT_CATEGORY = "device_collectives"


@record
class Straggler:
    host: str
    steps: tuple[int, ...]  # pod step numbers where it is late
    late_ns: int  # own time beyond the median rank's, summed over those steps
    reason: str  # category key (CATEGORY_NAMES) where it differs most
    reason_excess_ns: int  # that category's time beyond the median rank's, summed
    waited_ns: int  # what the other ranks spent waiting in those steps, summed
    waiters: int  # ranks that waited for it
    explanation: str

    @property
    def step_ranges(self) -> str:
        return ranges(self.steps)


@record
class PodLateness:
    hosts: tuple[str, ...]
    step_num: np.ndarray  # (S,) pod step labels
    dur_ns: np.ndarray  # (H, S) float, NaN where a host lacks the step
    wait_ns: np.ndarray  # (H, S) float: waiting for a late rank inside collectives
    late_ns: np.ndarray  # (H, S) float: own time beyond the median rank's (may be < 0)
    late: np.ndarray  # (H, S) bool: late in that step
    stragglers: tuple[Straggler, ...]  # most late time first
    pairing: str


def ranges(numbers: Sequence[int]) -> str:
    """ "3, 10-20, 25" for a sorted list of step numbers."""
    out: list[str] = []
    values = sorted(numbers)
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(out)


def _matrices(
    hosts: Sequence[tuple[str, StepDb]],
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], str]:
    pairing = pair_host_steps(
        [HostSteps(h, db.step_num, db.start_ns, db.dur_ns) for h, db in hosts]
    )
    n_h, n_s = len(hosts), pairing.n_steps
    dur = np.full((n_h, n_s), np.nan)
    cats = {c: np.full((n_h, n_s), np.nan) for c in CATEGORY_NAMES}
    for i, ((_, db), rows) in enumerate(zip(hosts, pairing.rows, strict=True)):
        have = rows >= 0
        if not have.any():
            continue
        dur[i, have] = db.dur_ns[rows[have]]
        for c, values in db.category_ns().items():
            cats[c][i, have] = values[rows[have]]
    return pairing.step_num, dur, cats, pairing.description


def _nan_reduce(values: np.ndarray, how: str) -> np.ndarray:
    """Column-wise nanmin / nanmedian without warnings for all-NaN columns (they give NaN)."""
    out = np.full(values.shape[1], np.nan)
    seen = ~np.isnan(values).all(axis=0)
    if seen.any():
        fn = np.nanmin if how == "min" else np.nanmedian
        out[seen] = fn(values[:, seen], axis=0)
    return out


def find_stragglers(hosts: Sequence[tuple[str, StepDb]]) -> PodLateness:
    """Late ranks of the run and why (see the module docstring); ``hosts``: (name, steps)."""
    names = tuple(h for h, _ in hosts)
    step_num, dur, cats, pairing = _matrices(hosts)
    coll = cats[WAIT_CATEGORY]
    wait = np.nan_to_num(coll - _nan_reduce(coll, "min")[None, :], nan=0.0)
    own = dur - wait
    median = _nan_reduce(own, "median")
    late_ns = own - median[None, :]
    threshold = np.maximum(LATE_SHARE * np.nan_to_num(median), LATE_MIN_NS)
    late = np.nan_to_num(late_ns, nan=-1.0) >= threshold[None, :]
    if len(names) < 2:
        late[:] = False
    medians = {c: _nan_reduce(v, "median") for c, v in cats.items() if c != WAIT_CATEGORY}
    found = []
    for i, host in enumerate(names):
        cols = np.flatnonzero(late[i])
        if not len(cols):
            continue
        excess = {c: float(np.nansum(cats[c][i, cols] - medians[c][cols])) for c in medians}
        reason = max(excess, key=lambda c: (excess[c], -CATEGORY_NAMES.index(c)))
        others = np.ones(len(names), bool)
        others[i] = False
        waited = wait[others][:, cols]
        found.append(
            _straggler(
                host,
                tuple(int(s) for s in step_num[cols]),
                int(np.nansum(late_ns[i, cols])),
                reason,
                int(excess[reason]),
                int(waited.sum()),
                int((waited > 0).any(axis=1).sum()),
                len(step_num),
            )
        )
    found.sort(key=lambda s: (-s.late_ns, s.host))
    return PodLateness(names, step_num, dur, wait, late_ns, late, tuple(found), pairing)


def _straggler(
    host: str,
    steps: tuple[int, ...],
    late_ns: int,
    reason: str,
    reason_ns: int,
    waited_ns: int,
    waiters: int,
    n_steps: int,
) -> Straggler:
    per_step = late_ns / len(steps) / 1e6
    text = (
        f"{host} is late at steps {ranges(steps)} ({len(steps)} of {n_steps} steps) by "
        f"{per_step:.2f} ms per step: its {CATEGORY_LABELS[reason].lower()} takes "
        f"{reason_ns / len(steps) / 1e6:.2f} ms per step longer than the median rank's"
    )
    if waiters:
        text += (
            f"; {waiters} other rank(s) wait for it in their collectives "
            f"({waited_ns / 1e6:.2f} ms in all)"
        )
    return Straggler(host, steps, late_ns, reason, reason_ns, waited_ns, waiters, text + ".")
