"""A loop's lone call: the one top-level event of its thread in each iteration (decision 741).

A loop that calls one ``tf.function`` (or one jitted function) per iteration and does the rest
of its step in untraced Python (a generator's next(), NumPy) leaves a thread with that call
alone between two of its calls: no other top-level work for `infer._same_work` to find the
same each time. On a loaded machine its periods are not steady either: the load comes and
goes, and a run of 61 calls had periods from 5 to 108 ms, 15 ms for half of the run and 5 ms
for the rest (at most 44% of the time within [0.5, 2] x the median, in 4 of 34 captures at
load 5.1-13.4), so no step was inferred, or another thread's were. What holds is the loop's
shape: the load stretches the whole iteration, the call and the Python around it together, so
the call's share of its period stays steady while the period does not (0.27-0.94 of it,
within [0.5, 2] x the median share for 98% of the time, in that run). An op in bursts has a
constant length and periods that jump (a share of 0.5 within a burst, 0.005 across the wait),
and so do calls at uneven times with nothing between.
"""

from __future__ import annotations

import numpy as np

from stepscope.stats.steps.cycle import common_work

LONE_SHARE = 0.5  # of the judged periods' time: periods with a share near the median's


def lone_call_steady(
    work: np.ndarray,
    position: np.ndarray,
    periods: np.ndarray,
    dur_ns: np.ndarray,
    judged: np.ndarray,
) -> bool:
    """Whether a candidate is a loop's lone call: its most common period holds nothing but
    the call itself (``work``/``position``: `cycle.work_before` of the thread's top-level
    names and the calls' places among them), and the periods (a mask ``judged`` of
    ``periods``, each from a call of ``dur_ns`` to the next) whose call takes within [0.5, 2] x
    the median share of its period, two at least, cover `LONE_SHARE` of their time."""
    judged = judged & (periods > 0)  # two calls at one instant: no share of a period
    if int(judged.sum()) < 2 or common_work(work, position)[2] != 1:
        return False
    span = periods[judged].astype(np.float64)
    share = dur_ns[:-1][judged] / span
    median = float(np.median(share))
    if median <= 0:
        return False
    steady = (share >= 0.5 * median) & (share <= 2 * median)
    return bool(int(steady.sum()) >= 2 and span[steady].sum() >= LONE_SHARE * span.sum())
