"""How many leading steps are warm-up (`stepscope.stats.warmup`'s rule, decision 362): here,
below the step database, so that the steps' own analyses (`run_ahead`) can leave them out."""

from __future__ import annotations

import numpy as np

WARMUP_RATIO = 3.0
WARMUP_MIN_EXCESS_NS = 1_000_000
MIN_STEADY_STEPS = 3
# a warm-up step stands RECUR_RATIO above the RECUR_STEPS-th longest step after it
RECUR_RATIO = 1.5
RECUR_STEPS = 2


def warmup_count(dur_ns: np.ndarray, *, mid_run: bool) -> int:
    """How many leading steps are warm-up (0 when the first step is no outlier, or when the
    recording began mid-run: ``mid_run``, `StepSummary.mid_run`). Every caller says which:
    a flight recorder save of step 652 on read "Warm-up: step 652 took 10.69 ms" where the
    script's loop had been warm for 650 steps, and left the step out of every average
    (decision 530)."""
    if mid_run:
        return 0
    n = len(dur_ns)
    most = n // 4
    count = 0
    while count < most and n - count - 1 >= MIN_STEADY_STEPS:
        median = float(np.median(dur_ns[count + 1 :]))
        step = float(dur_ns[count])
        if step < WARMUP_RATIO * median or step - median < WARMUP_MIN_EXCESS_NS:
            break
        count += 1
    # a leading step as long as steps that recur later is one of them, not a warm-up: the
    # demo's producers made every other step wait 35 ms, and step 0's 35.6 ms was said as a
    # warm-up ("once warm, 2.38 ms") beside a finding of the same wait every 2 steps
    # (decision 630). One later step as long (a checkpoint) does not make it recur.
    while count:
        recurring = float(np.partition(dur_ns[count:], -RECUR_STEPS)[-RECUR_STEPS])
        below = np.flatnonzero(dur_ns[:count] < RECUR_RATIO * recurring)
        if not len(below):
            break  # every leading step stands above what recurs
        count = int(below[0])
    return count
