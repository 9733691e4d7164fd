"""The slow-step trigger: when it arms, what counts as slow, and when a worse step escalates.

- **Warm-up**: the first ``warmup_steps`` steps (compilation, cold caches, a DataLoader
  starting its workers) are never part of the baseline.
- **Arming**: the trigger arms once the typical step has stopped moving: the median of the
  last ``settle_steps`` steps after the warm-up is within ``settle_spread`` times the median
  of the ``settle_steps`` before them. A pipeline still filling, or another job starting on
  the machine, moves the median; the trigger waits. Steps whose 99th percentile (`tail_ns`)
  is also within ``settle_spread`` of that median arm then (at step 60 with the defaults); steps
  with a wider tail arm once the ``median_steps`` steps of the baseline are there to show
  it (step 120), since the threshold is set from that tail (below). Once armed it stays
  armed. The tail no longer keeps it off (decision 675): a fast PyTorch CPU loop's steps
  had a 90th percentile 13-20x their median on a loaded machine (runqueue waits), and the
  old rule (arm only when that is at most ``settle_spread``) never armed there, so a 280x
  stall was not saved.
- **Slow**: a step longer than ``slow_step_factor`` times the 99th percentile of the
  ``median_steps`` steps before it, leaving their longest out (`tail_ns`; recomputed every
  `MEDIAN_EVERY` steps). For steady steps that is the median's multiple as before; for a
  heavy-tailed loop the threshold rises with the tail the loop has shown, so its usual
  noise is not saved (a machine where one step in four is 3x: slow above ~9x the median),
  and leaving the longest step out keeps one stall from hiding the next.
- **Floor**: a slow step is also at least ``slow_floor_s`` (0.1 s) longer than the median,
  whatever the tail (decision 677): waits for a CPU of 4-65 ms came after calm stretches
  whose tail was 1-5 ms, and 5 of 10 stall-free runs of a fast loop saved one.
- **Escalation**: within ``min_interval_s`` of a saved slow step, a step at least
  ``escalation_factor`` times worse (its ratio to the median over the saved one's) is
  saved despite the rate limit, so the recorder keeps the worst step, not only the first.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import math
import threading
from typing import Any

from stepscope.capture.recorder.config import Triggers
from stepscope.records import record

MEDIAN_EVERY = 10  # steps between two computations of the running median and tail
# The tail a slow step is measured against: this quantile of the steps before it (nearest
# rank), leaving out at least their longest (`tail_ns`).
TAIL_QUANTILE = 0.99
# Steps after the warm-up before a step can be called slow at all (to tell the user of a
# slow step the unarmed trigger let pass; an armed trigger has ``settle_steps`` >= 3).
MIN_BASELINE = 3
# Why an unarmed trigger let a slow step pass (`SlowStep.unarmed`).
NOT_READY = "baseline not ready"
NOISY = "machine too noisy"
RATE_LIMITED = "rate-limited"  # the armed trigger's save was skipped by the rate limit
TELL_AGAIN = 2.0  # a missed slow step this many times worse than the last told is told too


@record
class SlowStep:
    step_num: int
    dur_ns: int
    median_ns: float
    window: int  # steps the median was taken over
    # "" when the armed trigger judged it; else why it was not saved (`NOT_READY`, `NOISY`)
    unarmed: str = ""
    # how long the recorder's own save ran during the step: judged without it
    saver_ns: int = 0
    tail_ns: float = 0.0  # the steps' 99th percentile it was judged against (`tail_ns`)

    @property
    def ratio(self) -> float:
        return self.dur_ns / self.median_ns


@dataclasses.dataclass
class MissedSlowSteps:
    """Slow steps seen and not saved for one reason (`Recorder.status`): how many, the
    first and the worst (step number and ratio to the median), and why."""

    why: str
    count: int = 0
    first_step: int = -1
    first_ratio: float = 0.0
    worst_step: int = -1
    worst_ratio: float = 0.0

    def add(self, found: SlowStep) -> None:
        if not self.count:
            self.first_step, self.first_ratio = found.step_num, round(found.ratio, 2)
        if found.ratio > self.worst_ratio:
            self.worst_step, self.worst_ratio = found.step_num, round(found.ratio, 2)
        self.count += 1


class MissedSteps:
    """The slow steps seen and not saved, by reason (decision 320): a user who left the
    recorder on to catch one must hear of it, and a noisy machine must not flood the log,
    so `add` says to tell the first of each reason and one `TELL_AGAIN` times worse than
    the last told (a 25x stall after a 3.5x blip)."""

    def __init__(self) -> None:
        self.by_reason: dict[str, MissedSlowSteps] = {}
        self._told: dict[str, float] = {}  # reason -> ratio of the last step told
        self._lock = threading.Lock()  # the watchdog adds, `Recorder.status` reads

    def add(self, found: SlowStep, kind: str, why: str) -> bool:
        """Counts ``found``; whether to tell it at WARNING."""
        with self._lock:
            missed = self.by_reason.get(kind)
            if missed is None:
                missed = self.by_reason[kind] = MissedSlowSteps(why)
            missed.add(found)
            told = self._told.get(kind)
            tell = told is None or found.ratio >= TELL_AGAIN * told
            if tell:
                self._told[kind] = found.ratio
            return tell

    def as_dict(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {kind: dataclasses.asdict(m) for kind, m in self.by_reason.items()}


def tail_ns(ordered: list[int]) -> float:
    """The tail a slow step must exceed ``slow_step_factor`` times: the `TAIL_QUANTILE`
    (nearest rank) of the ``ordered`` step times, leaving out at least the longest (so one
    stall in the window, already saved or told, does not hide the next), and never below
    their median (a window too short to have a tail)."""
    n = len(ordered)
    left_out = max(1, n - math.ceil(TAIL_QUANTILE * n))
    return float(ordered[max(0, n - 1 - left_out)]) if n > 1 else float(ordered[0])


def median_of(ordered: list[int]) -> float:
    """The median of the sorted ``ordered`` as `statistics.median` gives it (the middle
    value, or the mean of the two middle ones), without sorting them again."""
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


class SortedWindow:
    """The last ``size`` step times in their order (`values`) and sorted (`ordered`), kept
    sorted as each arrives (a bisection and a shift of at most ``size`` pointers) so that a
    median or a tail is read, not sorted for: sorting the 100 steps every `MEDIAN_EVERY`
    steps, twice (`statistics.median` sorts its own copy), was half of what the trigger
    cost per step, and while it was not armed the settle windows were sorted every step
    (decision 720)."""

    def __init__(self, size: int) -> None:
        self.values: collections.deque[int] = collections.deque(maxlen=size)
        self.ordered: list[int] = []

    def __len__(self) -> int:
        return len(self.values)

    def push(self, value: int) -> int | None:
        """Add ``value``; the oldest value, when the window was full and let it go."""
        gone = None
        if len(self.values) == self.values.maxlen:
            gone = self.values[0]
            del self.ordered[bisect.bisect_left(self.ordered, gone)]
        self.values.append(value)
        bisect.insort(self.ordered, value)
        return gone

    def clear(self) -> None:
        self.values.clear()
        self.ordered.clear()


def slow_above(found: SlowStep, triggers: Triggers) -> str:
    """What made ``found`` slow, for its reason: the floor or the tail, whichever set the
    threshold, when it was not ``slow_step_factor`` x the median (steady steps: "")."""
    factor, floor_s = triggers.slow_step_factor, triggers.slow_floor_s
    by_floor = found.median_ns + floor_s * 1e9
    if floor_s and by_floor >= factor * found.tail_ns:
        return f" (slow above {by_floor / 1e6:.1f} ms: {floor_s:g} s over the median)"
    if found.tail_ns > 1.05 * found.median_ns:  # a tail worth naming
        return f" (slow above {factor:g}x their 99th percentile {found.tail_ns / 1e6:.1f} ms)"
    return ""


def slow_reason(
    found: SlowStep, triggers: Triggers, worse: float | None
) -> tuple[str, dict[str, Any]]:
    """A slow step's save reason and details; ``worse``: how much worse than the slow step
    saved before it, when that lifts the rate limit (`SlowStepTrigger.escalation`)."""
    reason = (
        f"step {found.step_num} took {found.dur_ns / 1e6:.1f} ms, {found.ratio:.1f}x the "
        f"median {found.median_ns / 1e6:.1f} ms of the {found.window} steps before"
    )
    reason += slow_above(found, triggers)
    details: dict[str, Any] = {
        "step": found.step_num,
        "dur_ns": found.dur_ns,
        "median_ns": int(found.median_ns),
    }
    if found.saver_ns:
        reason += f" (the recorder's own save ran {found.saver_ns / 1e6:.1f} ms of it)"
        details["saver_ns"] = found.saver_ns
    if worse is not None:
        reason += f" ({worse:.1f}x worse than the slow step saved before it"
        reason += ": saved despite the rate limit)"
        details["escalation"] = round(worse, 2)
    return reason, details


def missed_text(found: SlowStep, kind: str, why: str) -> str:
    """A slow step seen and not saved, in one line (``kind``: why, in a word)."""
    return (
        f"step {found.step_num} took {found.dur_ns / 1e6:.1f} ms, "
        f"{found.ratio:.1f}x the median {found.median_ns / 1e6:.1f} ms, NOT saved ({kind}): "
        f"{why}"
    )


class SlowStepTrigger:
    """The state of the slow-step trigger; fed one finished step at a time (watchdog)."""

    def __init__(self, triggers: Triggers) -> None:
        self.triggers = triggers
        self._window = SortedWindow(triggers.median_steps)
        self.recent = self._window.values  # the baseline's steps, oldest first (read only)
        self.seen = 0
        self.armed = False
        self.armed_note = ""  # how it armed, or why it has not yet
        self._median: float | None = None
        self._tail = 0.0  # `tail_ns` of the steps the median was taken over
        # the steps after the warm-up while it is not armed: the last `settle_steps` and the
        # `settle_steps` before them, which the last pass their oldest step on to
        self._last = SortedWindow(triggers.settle_steps)
        self._before = SortedWindow(triggers.settle_steps)
        self._median_age = 0
        # the last arming check found the typical step moving (`NOISY`); not when it waits
        # for steps, to settle or to fill the baseline that shows a tail (`NOT_READY`)
        self._moving = False
        self._saved: tuple[float, float] | None = None  # (monotonic s, ratio) of the last save
        self._arming_told = ""  # what `arming_news` said: "", "armed", "not armed"

    def arming_news(self) -> str:
        """Its arming note, once when it arms and once if it still has not after five times
        the steps it needs (step times that never settle: it stays off); "" otherwise."""
        if self.armed:
            if self._arming_told == "armed":
                return ""
            self._arming_told = "armed"
        else:
            needs = self.triggers.warmup_steps + 5 * self.triggers.settle_steps
            if self._arming_told or self.seen < needs:
                return ""
            self._arming_told = "not armed"
        return self.armed_note

    def observe(self, step_num: int, dur_ns: int) -> SlowStep | None:
        """The step, when it is slow (``unarmed`` says why an unarmed trigger lets it pass,
        so the recorder can tell the user); None otherwise."""
        self.seen += 1
        if self.seen <= self.triggers.warmup_steps:
            return None
        found = self.judge(step_num, dur_ns)
        self._window.push(dur_ns)
        self._median_age += 1
        if not self.armed:
            gone = self._last.push(dur_ns)
            if gone is not None:
                self._before.push(gone)
            self._try_arm()
            if self.armed:
                self._median = None  # judged from the steps up to now, not an older median
        return found

    def observe_armed(self, step_nums: list[int], durs: list[int]) -> list[tuple[int, SlowStep]]:
        """`observe` each step in turn, once the trigger is armed: (index, step) of the slow
        ones. One loop with `judge` and the window's push written out: the watchdog judges
        every step, and five Python calls a step (`observe`, `judge`, `_threshold`, `push`
        and the saver's check) were most of what it did between two wake-ups."""
        if not self.armed:
            raise RuntimeError("observe_armed: the trigger is not armed (use observe)")
        found: list[tuple[int, SlowStep]] = []
        window = self._window
        values, ordered = window.values, window.ordered
        full = values.maxlen
        median, age = self._median, self._median_age
        threshold = 0.0 if median is None else self._threshold(median)
        factor = self.triggers.slow_step_factor
        floor_ns = self.triggers.slow_floor_s * 1e9
        left, insort = bisect.bisect_left, bisect.insort
        for k, dur_ns in enumerate(durs):
            # `judge`: armed, the warm-up is behind (`observe` counted it)
            if len(values) >= MIN_BASELINE:
                if median is None or age >= MEDIAN_EVERY:
                    median, self._tail = median_of(ordered), tail_ns(ordered)
                    threshold = max(factor * self._tail, median + floor_ns)  # `_threshold`
                    age = 0
                if median > 0 and dur_ns > threshold:
                    slow = SlowStep(step_nums[k], dur_ns, median, len(values), tail_ns=self._tail)
                    found.append((k, slow))
            # `SortedWindow.push`
            if len(values) == full:
                del ordered[left(ordered, values[0])]
            values.append(dur_ns)
            insort(ordered, dur_ns)
            age += 1
        self._median, self._median_age = median, age
        self.seen += len(durs)
        return found

    def judge(self, step_num: int, dur_ns: int) -> SlowStep | None:
        """The step, when a step of ``dur_ns`` is slow against the steps before it; the
        baseline is left as it is (`observe` adds the step to it)."""
        if len(self.recent) < MIN_BASELINE:
            return None
        if self._median is None or self._median_age >= MEDIAN_EVERY:
            ordered = self._window.ordered
            self._median, self._tail = median_of(ordered), tail_ns(ordered)
            self._median_age = 0
        median = self._median
        if median <= 0 or dur_ns <= self._threshold(median):
            return None
        unarmed = ""
        if not self.armed:
            unarmed = NOISY if self._moving else NOT_READY
        return SlowStep(step_num, dur_ns, median, len(self.recent), unarmed, tail_ns=self._tail)

    def threshold_ns(self) -> float | None:
        """The step time above which the armed trigger calls a step slow now (None until it
        is armed and has a median)."""
        median = self._median
        if not self.armed or median is None or median <= 0:
            return None
        return self._threshold(median)

    def _threshold(self, median: float) -> float:
        """``slow_step_factor`` x the tail, and at least ``slow_floor_s`` over the median: on
        a busy machine a 0.6 ms step waits 4-65 ms for a CPU now and then, and a calm
        100 steps' tail (0.7-5 ms) made those slow steps (decision 677)."""
        floor_ns = self.triggers.slow_floor_s * 1e9
        return max(self.triggers.slow_step_factor * self._tail, median + floor_ns)

    def _try_arm(self) -> None:
        settle = self.triggers.settle_steps
        seen, needs = len(self._before) + len(self._last), 2 * settle
        if seen < needs:
            self.armed_note = f"not armed: {seen} of the {needs} steps after the warm-up seen"
            return
        before, last = median_of(self._before.ordered), median_of(self._last.ordered)
        low = min(before, last)
        drift = max(before, last) / low if low > 0 else float("inf")
        spread = self.triggers.settle_spread
        self._moving = drift > spread
        if self._moving:
            self.armed_note = (
                f"not armed: the median of the last {settle} steps, {last / 1e6:.1f} ms, is "
                f"{drift:.2f}x that of the {settle} before, {before / 1e6:.1f} ms (arms "
                f"within {spread:g}x)"
            )
            return
        # The baseline's tail as the slow rule reads it: steady steps arm now; a wider tail
        # arms on a full baseline, which the threshold then comes from (bursts in 3% of the
        # steps would otherwise be saved, the first after arming).
        baseline = self._window.ordered
        typical = median_of(baseline)
        tail = tail_ns(baseline) / typical if typical > 0 else float("inf")
        window = self.triggers.median_steps
        if tail > spread and len(self.recent) < window:
            self.armed_note = (
                f"not armed: the steps' 99th percentile is {tail:.2f}x their median "
                f"{typical / 1e6:.1f} ms; it arms once {window} steps show their tail "
                f"({len(self.recent)} seen)"
            )
            return
        self.armed = True
        self._before.clear()
        self._last.clear()
        self.armed_note = (
            f"armed after {self.seen} steps: the median of the last {settle} steps, "
            f"{last / 1e6:.1f} ms, is within {drift:.2f}x of the {settle} before"
        )
        if tail > spread:
            self.armed_note += (
                f"; their 99th percentile is {tail:.2f}x it, so a slow step is one longer "
                f"than {self.triggers.slow_step_factor:g}x the 99th percentile of the last "
                f"{window} steps"
            )

    def escalation(self, ratio: float, now_s: float) -> float | None:
        """How many times worse than the slow step saved within ``min_interval_s`` this one
        is, when that is at least ``escalation_factor`` (it is then saved anyway); None when
        no such save is that recent or this step is not that much worse."""
        factor = self.triggers.escalation_factor
        if not factor or self._saved is None:
            return None
        when, saved_ratio = self._saved
        if now_s - when >= self.triggers.min_interval_s:
            return None
        worse = ratio / saved_ratio
        return worse if worse >= factor else None

    def saved(self, ratio: float, now_s: float) -> None:
        self._saved = (now_s, ratio)
