"""The last iteration's wait for the computation it launched (decision 1065).

A JAX loop that blocks on its update (``params = update(params, x)``, then
``block_until_ready``) dispatches the update, which returns at once, and waits, untraced, while
XLA runs it on its thread pool. Every step but the last holds that wait: it runs up to the next
iteration's fetch. The last one ended at its last traced event (`last_step`), before its wait:
11.9 and 17.7 ms short of the script's clock for a jitted loop, 3.6 to 4.4 ms for an un-jitted
one (decision 1064). The wait ends when the computation does, and the trace shows that end:
the last event of the compute threads (`stepscope.vocab.waits`) that began within the
iteration.

Only when the loop waited in the other iterations: most of its most common periods but step
0's (the first call compiling) hold an untraced gap on the loop's thread that a computation
ended in (a loop that does not block runs its next dispatch beside the computation, which
runs on without a break). Most, not all: on a loaded machine the computations of two
updates overlapped across threads in one period of 38 (a jaxj0 run at load 2). It ends with
the last computation running after its traced work, never past the next traced event on the
loop's thread nor the capture's end.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.intervals import merge
from stepscope.stats.steps.last_step import Periods
from stepscope.stats.steps.waits import compute_events


def waited_end(
    profile: Profile, thread_line: int, periods: Periods, last_end: int, limit: int
) -> int | None:
    """Where the last iteration's wait for its computation ends (ns), after its traced work's
    end ``last_end`` and at most ``limit``; None when the loop did not wait (module docstring)
    or the computation ended before ``last_end``."""
    step_lines = np.zeros(len(profile.lines), dtype=bool)
    step_lines[thread_line] = True
    work = compute_events(profile, np.ones(len(profile.name), dtype=bool), step_lines)
    if not work.size:
        return None
    lo, hi = merge(profile.start_ns[work], profile.end_at(work))
    held = np.flatnonzero(periods.held)
    held = held[held > 0]  # step 0's period holds the first call's compiling, no wait
    waited = [_waited(periods, k, hi) for k in held.tolist()]
    if 2 * sum(waited) <= len(waited):
        return None
    after = (hi > last_end) & (lo < limit)
    if not after.any():
        return None
    return min(int(hi[after].max()), limit)


def _waited(periods: Periods, k: int, hi: np.ndarray) -> bool:
    """Whether in period ``k`` the loop's thread waited for the computation: an untraced gap
    between its events (the lead of period ``k + 1`` included) that a computation ended in
    (the thread went on once it had ended). Not one that no computation outlasted: on a
    loaded machine an Eigen worker's event of the same update may end after the thread went
    on (12 of 38 periods of a jaxj0 run at load 2)."""
    a, b = int(periods.pos[k]), int(periods.pos[k + 1])
    reach = np.maximum.accumulate(periods.end[a:b])
    gap_lo, gap_hi = reach, periods.start[a + 1 : b + 1]
    for g_lo, g_hi in zip(gap_lo.tolist(), gap_hi.tolist(), strict=True):
        if g_hi <= g_lo:
            continue
        if ((hi > g_lo) & (hi <= g_hi)).any():
            return True
    return False
