"""What the straggler analysis answers (`stepscope.stats.stragglers`), and its thresholds."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from stepscope.records import record
from stepscope.stats.collective_calls import CollectiveCalls
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.pairing import StepPairing

LATE_SHARE = 0.10  # late by 10% of the median rank's own time in the step
LATE_MIN_NS = 20_000  # and by at least 20 us (timer noise on short steps)
MIN_LATE_STEPS = 3  # a straggler is late in at least this many steps (all, when fewer)...
MIN_LATE_FRACTION = 0.05  # ...and in at least this share of the steps compared,
PERSISTENT_SHARE = 0.75  # ...and either late in this share of the steps compared
STRONG_SHARE = 0.20  # or late by this share of the own time (median over its late steps)
STANDOUT = 2.0  # ...and then by this many times the other ranks' lateness when they are late
BY_ARRIVAL = "collective arrival"
BY_OWN_TIME = "own time"


@record
class Rank:
    """One rank (host) as the straggler analysis reads it."""

    host: str
    steps: StepDb
    calls: CollectiveCalls | None = None  # None: not measured (own-time rule only)


@record
class Straggler:
    """A rank that held the others back, in which steps, by how much and why."""

    host: str
    steps: tuple[int, ...]  # pod step numbers where it is late
    late_ns: int  # how long it alone held the others in those steps, summed
    reason: str  # category key (CATEGORY_NAMES) where it differs most
    reason_excess_ns: int  # that category's time beyond the other ranks', summed
    waited_ns: int  # what the other ranks spent waiting in those steps, summed
    waiters: int  # ranks that waited for it
    explanation: str
    method: str = BY_OWN_TIME  # BY_ARRIVAL or BY_OWN_TIME
    last_arrivals: int = 0  # collective calls it arrived last at, in those steps
    reason_ns: int = 0  # its own time in the reason's category (run-ups or steps), summed
    reason_peers_ns: int = 0  # the other ranks' (median) time there, summed
    behind: str = ""  # hidden behind these stragglers: last of the others, not of all
    # with untraced host work as the reason: the Python functions the stack sampler saw on
    # this rank in its steps ("" without samples), as the overview names them
    python: str = ""

    @property
    def step_ranges(self) -> str:
        return ranges(self.steps)


@record
class PodLateness:
    """Per host and pod step: durations, waits and lateness, and the stragglers found."""

    hosts: tuple[str, ...]
    step_num: np.ndarray  # (S,) pod step labels
    dur_ns: np.ndarray  # (H, S) float, NaN where a host lacks the step
    wait_ns: np.ndarray  # (H, S) float: waiting for a late rank inside collectives
    late_ns: np.ndarray  # (H, S) float: how late it arrived (see the method; may be < 0)
    late: np.ndarray  # (H, S) bool: late in that step
    stragglers: tuple[Straggler, ...]  # most late time first
    pairing: str
    method: str = BY_OWN_TIME
    offsets_ns: np.ndarray | None = None  # (H,) float: estimated clock offsets, NaN unknown
    exit_spread_ns: float = 0.0  # how closely the corrected exits agree (median)
    calls_matched: int = 0  # collective calls matched on every rank, in pod steps
    last_count: np.ndarray | None = None  # (H,) calls each rank arrived last at (>= 20 us)
    waiting: np.ndarray | None = None  # (H,) bool: waited for a straggler
    clock_note: str = ""  # the offsets and the exits' agreement, in words

    def role(self, i: int) -> str:
        """``straggler``, ``next straggler`` (hidden behind one), ``waiting`` or ``""`` for
        host ``i``."""
        mine = [s for s in self.stragglers if s.host == self.hosts[i]]
        if mine:
            return "next straggler" if mine[0].behind else "straggler"
        if self.waiting is not None and bool(self.waiting[i]):
            return "waiting"
        return ""


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


def nan_reduce(values: np.ndarray, how: str) -> np.ndarray:
    """Column-wise nanmin / nanmedian without warnings for all-NaN columns (they give NaN)."""
    out = np.full(values.shape[1], np.nan)
    seen = ~np.isnan(values).all(axis=0)
    if seen.any():
        fn = np.nanmin if how == "min" else np.nanmedian
        out[seen] = fn(values[:, seen], axis=0)
    return out


def required_late_steps(n_steps: int) -> int:
    """Late steps that make a straggler among ``n_steps``: `MIN_LATE_STEPS` (all of them
    when fewer) and `MIN_LATE_FRACTION` of them."""
    return max(min(MIN_LATE_STEPS, n_steps), math.ceil(MIN_LATE_FRACTION * n_steps), 1)


def by_turns(late: np.ndarray, n_steps: int) -> bool:
    """Whether the ranks take turns at being late (``late``: ranks x pod steps, a mask): more
    than half of them each late in `required_late_steps`. Then a rank not late persistently
    must stand out from the others' lateness (`repeatedly_last`, decision 487); two ranks
    of six each slow in their own few steps are two stragglers."""
    late_ranks = int((late.sum(axis=1) >= required_late_steps(n_steps)).sum())
    return late_ranks > late.shape[0] / 2


def repeatedly_last(
    held_ns: np.ndarray,
    threshold_ns: np.ndarray,
    n_steps: int,
    others_ns: np.ndarray | None = None,
) -> bool:
    """Whether a rank late in the steps where it held the others ``held_ns`` (each at least
    its step's ``threshold_ns``: `LATE_SHARE` of the median own time) is a straggler: late in
    `required_late_steps`, and persistently (`PERSISTENT_SHARE` of the steps) or strongly
    (its median lateness `STRONG_SHARE` of the own time: twice the late threshold) and, when
    the ranks are late by turns (`by_turns`; ``others_ns``: the other ranks' lateness in
    their late steps), by `STANDOUT` times their median (decision 487): ranks
    descheduled by turns on a busy machine are each late in a few steps by a few ms, which
    is 20% of a short step; one rank late in a few steps by much more than the others ever
    are (a check, an evaluation, a slow batch) is a straggler there."""
    if len(held_ns) < required_late_steps(n_steps):
        return False
    if len(held_ns) >= PERSISTENT_SHARE * n_steps:
        return True
    own = threshold_ns / LATE_SHARE
    if np.median(held_ns / np.maximum(own, 1)) < STRONG_SHARE:
        return False
    if others_ns is None or not len(others_ns):
        return True
    return bool(np.median(held_ns) >= STANDOUT * np.median(others_ns))


def repeatedly_late_rows(
    late: np.ndarray, held: np.ndarray, threshold: np.ndarray, rows: np.ndarray, n_steps: int
) -> list[tuple[int, int, np.ndarray]]:
    """(position in ``rows``, row, its late steps) of each of the ranks ``rows`` that is
    `repeatedly_last`, whether they take turns judged among ``rows`` (`by_turns`); ``late``
    and ``held``: ranks x pod steps."""
    turns = by_turns(late[rows], n_steps)
    out = []
    for j, row in enumerate(rows.tolist()):
        steps = np.flatnonzero(late[row])
        others = np.delete(rows, j)
        lateness = held[others][late[others]] if turns else None
        if repeatedly_last(held[row, steps], threshold[steps], n_steps, lateness):
            out.append((j, row, steps))
    return out


@record
class FetchTimes:
    """Per rank and pod step, the time its loop spent getting batches from a plain Python
    iterator (decision 343's fetch, `StepDb.fetched`): input, which XProf's categories count
    in "All Others" (untraced). Decision 387: a straggler's reason counts it as input."""

    ns: np.ndarray  # (H, S) float: 0 where not counted (too few samples, no such step)
    functions: tuple[str, ...]  # per rank: its iterator, "" without

    def moved(self, row: int, cols: np.ndarray, other_ns: float) -> float:
        """Rank ``row``'s fetch time over the pod steps ``cols``, at most ``other_ns`` (its
        untraced time there: the fetch is part of it)."""
        return min(float(self.ns[row, cols].sum()), max(other_ns, 0.0))

    def of_iterator(self, row: int) -> str:
        """``batches (train.py)``: rank ``row``'s iterator, for the explanation."""
        return self.functions[row]


def fetch_times(ranks: Sequence[Rank], pairing: StepPairing) -> FetchTimes | None:
    """The ranks' fetch times on the pod steps, or None when no rank has one counted."""
    ns = np.zeros((len(ranks), pairing.n_steps))
    names = []
    for i, (r, rows) in enumerate(zip(ranks, pairing.rows, strict=True)):
        fetched = r.steps.fetched
        counted = fetched.counted and len(fetched.ns) == r.steps.n_steps
        names.append(fetched.function[0] if counted else "")
        if counted:
            have = rows >= 0
            ns[i, have] = fetched.ns[rows[have]]
    return FetchTimes(ns, tuple(names)) if ns.any() else None


def fetch_words(iterator: str) -> str:
    """What a straggler's input is when its loop waits on a Python iterator."""
    return (
        f"its loop getting each batch from the Python iterator {iterator}: untraced, so "
        "not input in XProf's categories"
    )
