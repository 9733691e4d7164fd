"""What the straggler analysis answers (`stepscope.stats.stragglers`), and its thresholds."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from stepscope.records import record
from stepscope.stats.collective_calls import CollectiveCalls
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.runup_python import RunupPython
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.fetch import QUEUE_GET_FRAMES
from stepscope.stats.steps.pairing import StepPairing

LATE_SHARE = 0.10  # late by 10% of the median rank's own time in the step
LATE_MIN_NS = 20_000  # and by at least 20 us (timer noise on short steps)
MIN_LATE_STEPS = 3  # a straggler is late in at least this many steps (all, when fewer)...
MIN_LATE_FRACTION = 0.05  # ...and in at least this share of the steps compared,
PERSISTENT_SHARE = 0.75  # ...and either late in this share of the steps compared
STRONG_SHARE = 0.20  # or late by this share of the own time (median over its late steps)
STANDOUT = 2.0  # ...and then by this many times the other ranks' lateness when they are late
BURST = 5.0  # a straggler's steps late by 5x its median lateness are told apart...
MIN_COST_SHARE = 0.005  # ...and it held the others 0.5% of the job's step time, all told
MIN_REPEATS = 3  # a pause every k steps is a straggler's when seen at least this many times
BY_ARRIVAL = "collective arrival"
BY_OWN_TIME = "own time"


@record
class Rank:
    """One rank (host) as the straggler analysis reads it."""

    host: str
    steps: StepDb
    calls: CollectiveCalls | None = None  # None: not measured (own-time rule only)
    # its GPUs' vendor (`device_caps`): the late GPU's clock check names the vendor's tool
    vendor: str = "nvidia"


@record
class Straggler:
    """A rank that held the others back, in which steps, by how much and why."""

    host: str
    # pod step numbers where it is late: the steps of its own step table whose work made it
    # late (decision 600: work after a step's last collective holds the next step's)
    steps: tuple[int, ...]
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
    # most of its late time in a few of its late steps (`burst`): those steps and the others,
    # each with its own figures and reason, in words ("" when spread evenly)
    focus: str = ""
    # the steps whose collectives it arrived last at, where the others waited; () when they
    # are `steps` (decision 600)
    held_steps: tuple[int, ...] = ()
    # its run-ups held as many traced host ops as the others', run this many times longer
    # (decision 602): the same work, slower (a process off its core); 0.0 when not
    slowed: float = 0.0
    # a rank named for a few long stalls of the job (`stragglers_stalls`, decision 645): what
    # its thread did then, as its CPU readings tell ("stopped", "waiting", "running",
    # "blocked", or "unread" without readings); "" for the other stragglers
    stall: str = ""
    # its stalls inside a collective after every rank arrived: (step number, ns it held the
    # others there), for the pod viewer's heatmap (no arrival of its marks them)
    inside: tuple[tuple[int, int], ...] = ()
    # the own-time rule's input: the Python iterator its loop waited on ("" when none)
    iterator: str = ""
    # its input (the reason) is mostly the tf.data pipeline's Python, which its own limits
    # count as input and XProf's categories as host compute (decision 670)
    pipeline: bool = False

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
    # what held every rank alike rather than one rank, in words (`stragglers_stalls`: a call
    # stalled after every rank arrived, no reading telling who held it, decision 686;
    # `stragglers_cores`: every rank waiting for a core, decision 687)
    notes: tuple[str, ...] = ()

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


# a pod of one compared step (two one-step traces): "step 0 (the one step compared)", not
# "(1 of 1 steps)" (decision 611)
ONE_COMPARED = "the one step compared"


def waiting_for_it(waiters: int) -> str:
    """ "1 other rank waits for it in its collectives", "3 other ranks wait ... their ..."
    (each straggler rule's explanation and the finding said "1 other rank(s) wait")."""
    if waiters == 1:
        return "1 other rank waits for it in its collectives"
    return f"{waiters} other ranks wait for it in their collectives"


def steps_said(numbers: Sequence[int]) -> str:
    """ "step 3" or "steps 3, 10-20" (`ranges`): a one-step pod read "late at steps 0"."""
    return f"{'step' if len(set(numbers)) == 1 else 'steps'} {ranges(numbers)}"


def nan_reduce(values: np.ndarray, how: str) -> np.ndarray:
    """Column-wise nanmin / nanmedian without warnings for all-NaN columns (they give NaN)."""
    out = np.full(values.shape[1], np.nan)
    seen = ~np.isnan(values).all(axis=0)
    if seen.any():
        fn = np.nanmin if how == "min" else np.nanmedian
        out[seen] = fn(values[:, seen], axis=0)
    return out


def costly(found: list[Straggler], dur: np.ndarray, stepped: np.ndarray) -> list[Straggler]:
    """The stragglers of ``found`` that held the others at least `MIN_COST_SHARE` of the
    job's step time (the median rank's step, summed over the ``stepped`` pod steps; ``dur``:
    ranks x pod steps). A rank last by 1.8 ms at 3 steps of 40 (5 ms of a 2.8 s run, beside
    a worker late by 2.5 s from its input) is not one to send the user after; the least a
    rank the rules name can cost is about 1% of its own time (decision 545)."""
    if not found:
        return found
    job_ns = float(np.nansum(nan_reduce(dur, "median")[stepped]))
    return [s for s in found if s.late_ns >= MIN_COST_SHARE * job_ns]


def burst(held_ns: np.ndarray) -> np.ndarray | None:
    """Which of a straggler's late steps (``held_ns``: how long it held the others in each)
    hold most of its late time: those late by `BURST` times the median of them, when they
    are not all of them and hold at least half of the time; else None (decision 546)."""
    if len(held_ns) < 2:
        return None
    big = held_ns >= BURST * float(np.median(held_ns))
    if big.all() or not big.any() or held_ns[big].sum() < 0.5 * held_ns.sum():
        return None
    return big


def required_late_steps(n_steps: int) -> int:
    """Late steps that make a straggler among ``n_steps``: `MIN_LATE_STEPS` (all of them
    when fewer) and `MIN_LATE_FRACTION` of them."""
    return max(min(MIN_LATE_STEPS, n_steps), math.ceil(MIN_LATE_FRACTION * n_steps), 1)


TURNS_LATE_STEPS = 2  # a rank late at two steps or more takes its turns


def by_turns(late: np.ndarray, n_steps: int) -> bool:
    """Whether the ranks take turns at being late (``late``: ranks x pod steps, a mask): more
    than half of them each late in `TURNS_LATE_STEPS` steps (or `required_late_steps`, when
    fewer). Then a rank not late persistently must stand out from the others' lateness
    (`repeatedly_late_rows`, decisions 487, 501); two ranks of six each slow in their own
    few steps are two stragglers. Counted at the fewest steps that make a straggler, four
    balanced ranks late at 4, 3, 2 and 2 steps did not take turns, and the one late by
    2.7-4.1 ms at 3 steps, under another's 8.5 and 38.6 ms, was late "alone" (decision
    559)."""
    least = min(TURNS_LATE_STEPS, required_late_steps(n_steps))
    late_ranks = int((late.sum(axis=1) >= least).sum())
    return late_ranks > late.shape[0] / 2


def late_around(late: np.ndarray, row: int, others: np.ndarray, n_steps: int) -> bool:
    """Whether the ranks ``others`` are late, all told, in `required_late_steps` of the steps
    from rank ``row``'s first late step to its last (``late``: ranks x pod steps): lateness
    that changes hands while it is late, as two ranks of four descheduled by turns on a
    busy machine are (decision 501). Two stragglers each slow in its own block of steps,
    the others never late, are not: each is late alone."""
    steps = np.flatnonzero(late[row])
    if not len(steps) or not len(others):
        return False
    around = late[others][:, int(steps[0]) : int(steps[-1]) + 1].any(axis=0)
    return int(around.sum()) >= required_late_steps(n_steps)


def noise_bar(others_ns: np.ndarray, n_steps: int) -> float:
    """The lateness a rank must exceed, in a step, to stand out from the other ranks taking
    turns (``others_ns``: their lateness in their late steps): `STANDOUT` times its median,
    and at least what they reach in as many steps as make a straggler (the
    `required_late_steps`-th largest): a busy machine's scheduling makes each rank late now
    and then by a few ms, and now and then by a whole time slice."""
    if not len(others_ns):
        return 0.0
    need = required_late_steps(n_steps)
    reached = float(np.sort(others_ns)[-need]) if len(others_ns) >= need else 0.0
    return max(STANDOUT * float(np.median(others_ns)), reached)


def repeatedly_last(held_ns: np.ndarray, threshold_ns: np.ndarray, n_steps: int) -> bool:
    """Whether a rank late in the steps where it held the others ``held_ns`` (each at least
    its step's ``threshold_ns``: `LATE_SHARE` of the median own time) is a straggler: late in
    `required_late_steps`, and persistently (`PERSISTENT_SHARE` of the steps) or strongly
    (its median lateness `STRONG_SHARE` of the own time: twice the late threshold)."""
    if len(held_ns) < required_late_steps(n_steps):
        return False
    if len(held_ns) >= PERSISTENT_SHARE * n_steps:
        return True
    own = threshold_ns / LATE_SHARE
    return bool(np.median(held_ns / np.maximum(own, 1)) >= STRONG_SHARE)


def repeatedly_late_rows(
    late: np.ndarray,
    held: np.ndarray,
    threshold: np.ndarray,
    rows: np.ndarray,
    n_steps: int,
    own_work: OwnWork | None = None,
    stepped: np.ndarray | None = None,
    transient: bool = True,
) -> list[tuple[int, int, np.ndarray]]:
    """(position in ``rows``, row, the steps it is a straggler at) of each of the ranks
    ``rows`` that is a straggler (``late`` and ``held``: ranks x pod steps). One late in
    `PERSISTENT_SHARE` of the steps, or while no other rank is late (`by_turns` among
    ``rows`` and `late_around` it both false), is judged by `repeatedly_last` at every step
    it is late. Otherwise the ranks take turns at being late (a busy machine descheduling
    them), and with ``own_work`` (`OwnWork`, from the run-ups) a rank is a straggler
    (decision 501):

    - at every step it is late, when its run-ups show it doing more than the others in
      most steps (``own_work.steady``): 15% more host compute every step is last only now
      and then when the others are descheduled by more;
    - else at its steps where its own work explains lateness that stands out: traced
      work beyond the `noise_bar` of the others' lateness, untraced time beyond twice the
      longest lateness of any other rank (untraced time is what a thread not scheduled
      leaves), in `required_late_steps` such steps, by `STRONG_SHARE` of the own time
      (median). A rank woken late from its previous collective arrives late with the
      others' run-up: nothing of its own. A rank doing 60 more matmuls in 5 steps is late
      there by 10x the others, whatever its lateness in its other steps;
    - else at the steps of a pause it takes every k steps (`periodic`, over the compared
      pod steps ``stepped``, default all): noise does not come back at a fixed period.

    Not ``transient``: the steps standing out are not enough. A rank hidden behind a
    straggler (`stragglers._next_in_line`) is measured against the noise of the few ranks
    left, and on a busy machine the one descheduled in the first 14 steps stood out from
    the one other rank (decision 558); it is named once it does more every step, or every
    k steps, or at most steps.

    Without ``own_work``, its lateness itself is compared with the `noise_bar`."""
    turns = by_turns(late[rows], n_steps)
    need = required_late_steps(n_steps)
    own = threshold / LATE_SHARE
    out = []
    for j, row in enumerate(rows.tolist()):
        steps = np.flatnonzero(late[row])
        if len(steps) < need:
            continue
        others = np.delete(rows, j)
        alone = not (turns or late_around(late, row, others, n_steps))
        if alone or len(steps) >= PERSISTENT_SHARE * n_steps:
            if repeatedly_last(held[row, steps], threshold[steps], n_steps):
                out.append((j, row, steps))
            continue
        if own_work is not None and bool(own_work.steady[row]):
            out.append((j, row, steps))
            continue
        noise = held[others][late[others]]
        bar = max(noise_bar(noise, n_steps), 1.0)
        traced, every = (own_work.traced, own_work.every) if own_work else (held, held)
        far = max(bar, STANDOUT * float(noise.max())) if len(noise) else bar
        stands = (traced[row] >= bar) | (every[row] >= far)
        mine = np.where(traced[row] >= bar, traced[row], every[row])
        standout = steps[stands[steps]]
        if (
            transient
            and len(standout) >= need
            and (np.median(mine[standout] / np.maximum(own[standout], 1)) >= STRONG_SHARE)
        ):
            out.append((j, row, standout))
            continue
        if own_work is not None:
            every_k = periodic(late[row], own_work.every[row], own, bar, need, stepped)
            if len(every_k):
                out.append((j, row, every_k))
    return out


def periodic(
    late: np.ndarray,
    every: np.ndarray,
    own: np.ndarray,
    bar: float,
    need: int,
    stepped: np.ndarray | None = None,
) -> np.ndarray:
    """The steps of a pause a rank takes every k steps (a checkpoint, an evaluation, a
    garbage collection...), amid ranks late by turns: empty when none. Its lateness there
    is its own work (``every``: what its run-ups explain, untraced time included), so it
    must beat the others' noise (``bar``: `noise_bar`), not twice the longest descheduling
    of any of them as a rank late at scattered steps must: one 32 ms descheduling of
    another rank hid a checkpoint of 34-40 ms written every 10 steps (decision 557). What
    noise does not do is come back at a fixed period: the rank is late (``late``: per pod
    step) at every k-th compared step (``stepped``; k >= 2, at least `MIN_REPEATS` and
    ``need`` of them), its own work beats the bar in ``need`` of them and in most of them
    (the median), and that median is `STRONG_SHARE` of the own time (``own``). The shortest
    such period is the one."""
    cols = np.flatnonzero(stepped) if stepped is not None else np.arange(len(late))
    strong = late[cols] & (every[cols] >= bar)
    if int(strong.sum()) < need:  # the most common case: nothing of its own stands out
        return cols[:0]
    lateness = late[cols]
    least = max(MIN_REPEATS, need)
    for k in range(2, len(cols) // least + 1):
        for r in range(k):
            at = np.arange(r, len(cols), k)
            if not lateness[at].all() or int(strong[at].sum()) < need:
                continue
            steps = cols[at]
            # most of them beat the bar: two ranks late by turns at odd and even steps (by
            # 1, 2 or 4 ms where the bar is 4) come back at a period too, by less
            if float(np.median(every[steps])) >= bar and (
                np.median(every[steps] / np.maximum(own[steps], 1)) >= STRONG_SHARE
            ):
                return steps
    return cols[:0]


@record
class OwnWork:
    """What the ranks' own run-ups show (decision 501), per rank (the run's hosts)."""

    traced: np.ndarray  # (H, S) float: lateness its traced run-up time beyond the others' explains
    every: np.ndarray  # (H, S) float: the same with its untraced time too
    steady: np.ndarray  # (H,) bool: more work than the others by the late threshold, most steps


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
    """What a straggler's input is when its loop waits on a Python iterator, or on a queue's
    ``get`` (another thread's or process's batch, not the loop's iterator: decision 1024)."""
    if iterator in QUEUE_GET_FRAMES:
        return (
            f"its loop waiting for each batch in a queue another thread or process fills, "
            f"{iterator}: untraced, so not input in XProf's categories"
        )
    return (
        f"its loop getting each batch from the Python iterator {iterator}: untraced, so "
        "not input in XProf's categories"
    )


@record
class Matched:
    """The calls every rank with calls made: (ranks, calls) matrices on one clock."""

    rows: np.ndarray  # (R,) index into the run's hosts of each rank here
    pod_step: np.ndarray  # (C,) pod step index of each call, -1 outside the pod steps
    arrive_ns: np.ndarray  # (R, C) int64, shifted by the offsets
    exit_ns: np.ndarray  # (R, C) int64, shifted by the offsets
    runup_ns: np.ndarray  # (R, C, categories) int64
    offsets_ns: np.ndarray  # (R,) int64: each rank's clock minus the median rank's
    exit_spread_ns: float  # median |corrected exit - the call's median exit|
    keyed_by: str  # "sequence number" or "step, kind and position"
    call_index: np.ndarray | None = None  # (R, C) int64: each call's index in its rank's calls
    python: tuple[RunupPython, ...] = ()  # (R,) the samples in each rank's run-ups
    # (R, C) int64: the part of each run-up before the call's step began on that rank (the
    # end of its previous step: work after that step's collectives); None: not measured
    before_ns: np.ndarray | None = None
    # (R, C, categories) int64: traced events starting in each run-up; None: not counted
    runup_ops: np.ndarray | None = None
    # (R,) each rank's steps' thread's CPU readings (`ThreadCpu`, on the rank's own clock:
    # corrected times plus its offset); () when not given
    cpu: tuple[ThreadCpu, ...] = ()
    # (R, C) int64: of each run-up, the input in the tf.data pipeline's Python (decision 670);
    # None: not measured
    pipeline_ns: np.ndarray | None = None
    # the one clock every rank's times count on (their machine and boot, decision 940): the
    # offsets are then where each rank's time zero falls on it, not estimated; "" otherwise
    shared_clock: str = ""


def distinct_keys(lane: np.ndarray, seq: np.ndarray) -> bool:
    """Whether no (lane, sequence number) pair repeats among a rank's calls."""
    key = lane.astype(np.int64) * (1 << 40) + seq
    return len(np.unique(key)) == len(key)
