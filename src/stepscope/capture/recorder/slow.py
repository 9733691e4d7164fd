"""The slow-step trigger: when it arms, what counts as slow, and when a worse step escalates.

- **Warm-up**: the first ``warmup_steps`` steps (compilation, cold caches, a DataLoader
  starting its workers) are never part of the baseline.
- **Arming**: the trigger arms once the last ``settle_steps`` steps after the warm-up have
  settled: their 90th percentile is at most ``settle_spread`` times their median. A machine
  where step times still swing (another job's load, a pipeline filling) would otherwise
  save its noise: on a loaded machine the trigger fired in every recorder start, a 3.5x
  step 16 steps after the warm-up. Once armed it stays armed.
- **Slow**: a step longer than ``slow_step_factor`` times the median of the
  ``median_steps`` steps before it (recomputed every `MEDIAN_EVERY` steps).
- **Escalation**: within ``min_interval_s`` of a saved slow step, a step at least
  ``escalation_factor`` times worse (its ratio to the median over the saved one's) is
  saved despite the rate limit, so the recorder keeps the worst step, not only the first.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import threading
from typing import Any

from stepscope.capture.recorder.config import Triggers
from stepscope.records import record

MEDIAN_EVERY = 10  # steps between two computations of the running median
SETTLE_QUANTILE = 0.9
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


class SlowStepTrigger:
    """The state of the slow-step trigger; fed one finished step at a time (watchdog)."""

    def __init__(self, triggers: Triggers) -> None:
        self.triggers = triggers
        self.recent: collections.deque[int] = collections.deque(maxlen=triggers.median_steps)
        self.seen = 0
        self.armed = False
        self.armed_note = ""  # how it armed, or why it has not yet
        self._median: float | None = None
        self._median_age = 0
        self._saved: tuple[float, float] | None = None  # (monotonic s, ratio) of the last save

    def observe(self, step_num: int, dur_ns: int) -> SlowStep | None:
        """The step, when it is slow (``unarmed`` says why an unarmed trigger lets it pass,
        so the recorder can tell the user); None otherwise."""
        self.seen += 1
        if self.seen <= self.triggers.warmup_steps:
            return None
        found = self.judge(step_num, dur_ns)
        self.recent.append(dur_ns)
        self._median_age += 1
        if not self.armed:
            self._try_arm()
            if self.armed:
                self._median = None  # judged from the steps up to now, not an older median
        return found

    def judge(self, step_num: int, dur_ns: int) -> SlowStep | None:
        """The step, when a step of ``dur_ns`` is slow against the steps before it; the
        baseline is left as it is (`observe` adds the step to it)."""
        if len(self.recent) < MIN_BASELINE:
            return None
        if self._median is None or self._median_age >= MEDIAN_EVERY:
            self._median, self._median_age = statistics.median(self.recent), 0
        median = self._median
        if median <= 0 or dur_ns <= self.triggers.slow_step_factor * median:
            return None
        unarmed = ""
        if not self.armed:
            enough = len(self.recent) >= self.triggers.settle_steps
            unarmed = NOISY if enough else NOT_READY
        return SlowStep(step_num, dur_ns, median, len(self.recent), unarmed)

    def threshold_ns(self) -> float | None:
        """The step time above which the armed trigger calls a step slow now (None until it
        is armed and has a median)."""
        median = self._median
        if not self.armed or median is None or median <= 0:
            return None
        return self.triggers.slow_step_factor * median

    def _try_arm(self) -> None:
        settle = self.triggers.settle_steps
        if len(self.recent) < settle:
            self.armed_note = (
                f"not armed: {len(self.recent)} of the {settle} steps after the warm-up seen"
            )
            return
        last = sorted(list(self.recent)[-settle:])
        median = statistics.median(last)
        high = last[min(len(last) - 1, int(SETTLE_QUANTILE * len(last)))]
        spread = high / median if median > 0 else float("inf")
        if spread <= self.triggers.settle_spread:
            self.armed = True
            self.armed_note = (
                f"armed after {self.seen} steps: the last {settle} steps' 90th percentile "
                f"is {spread:.2f}x their median {median / 1e6:.1f} ms"
            )
        else:
            self.armed_note = (
                f"not armed: the last {settle} steps' 90th percentile is {spread:.2f}x their "
                f"median {median / 1e6:.1f} ms (arms at {self.triggers.settle_spread:g}x)"
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
