"""A loop that runs ahead of its computation (asynchronous dispatch, decision 640).

JAX dispatches a jitted step and returns at once; XLA's CPU client runs it on its own
threads. A loop that blocks only every N steps (``jax.block_until_ready`` every 5th step, a
loss read for logging) has steps of two kinds on its thread: the ones that return before
their computation has run (their time is the dispatch: 0.6 ms), and the ones that wait, for
their own computation and for all that the steps before them queued (9 ms). Timed on the
loop's thread, as the script that times it does, the steps read 0.6 ms and "every 5 steps a
step spends 8 ms more": neither is what a step costs. What a step costs is the loop's rate:
from one wait's end to the next, over the steps between (the computation is serial: each
step's update needs the one before).

Seen in the trace: a step that ends while the framework's compute threads still run (a
program running across its end) returned before its computation ended. Host-only profiles
(a device's queue already stretches its steps' spans, `breakdown`).
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.intervals import merge
from stepscope.vocab.waits import is_compute_thread

# A step ends "with its computation running" when a compute thread's work runs at least this
# long on either side of its end (not an event that ends as the step's wait returns).
_ACROSS_NS = 50_000
# Of the steps after the warm-up, at least this share end with computation running, and at
# least this many; and at least two wait (a group from one wait to the next).
AHEAD_SHARE = 0.5
AHEAD_MIN = 3
WAITS_MIN = 2
# ... and the loop's rate is at least this many times the running-ahead steps' median: where
# the steps already take about the rate (an un-jitted JAX update, whose steps were inferred
# mid-iteration with XLA's threads busy at their ends: 8.29 ms a step against 7.44) their
# times mislead no one
RATE_OVER_DISPATCH = 2.0


@record
class RunAhead:
    """The steps after the warm-up that end with their computation still running, those that
    wait for it, and the loop's rate from one wait to the next."""

    ahead: np.ndarray  # indexes into the step database: steps that end with computation running
    waits: np.ndarray  # indexes: steps after the warm-up that do not (they wait for it)
    per_step_ns: int  # from the first wait's end to the last's, over the steps between
    ahead_median_ns: int  # the running-ahead steps' median time (their dispatch)

    def note(self) -> str:
        """The steps' description's words for it."""
        judged = len(self.ahead) + len(self.waits)
        return (
            f"the loop runs ahead of its computation (asynchronous dispatch): {len(self.ahead)}"
            f" of the {judged} steps after the warm-up (but the last) end with it still running"
            f" (their {self.ahead_median_ns / 1e6:.2f} ms is the dispatch), and the"
            f" {len(self.waits)}"
            " that wait (block_until_ready, a value read) wait for the steps queued before"
            f" them: the loop takes {self.per_step_ns / 1e6:.2f} ms per step from one wait to"
            " the next"
        )


def compute_busy(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """When the framework's compute threads (XLA's CPU client and Eigen pools, TensorFlow's
    executor threads) were running something: their events' union."""
    lines = np.array(
        [is_compute_thread(ln.name) or is_compute_thread(ln.display_name) for ln in profile.lines],
        dtype=bool,
    )
    if not lines.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ev = np.flatnonzero(lines.take(profile.line) & (profile.dur_ns > 0))
    return merge(profile.start_ns[ev], profile.end_at(ev))


def run_ahead(
    profile: Profile, start_ns: np.ndarray, dur_ns: np.ndarray, warm: int, has_device: bool
) -> RunAhead | None:
    """The loop's running ahead (`RunAhead`) over the steps after the first ``warm`` (but the
    last: what follows the loop, a final wait, ends it), or None when it does not."""
    if has_device or len(dur_ns) - warm < AHEAD_MIN + WAITS_MIN + 1:
        return None
    lo, hi = compute_busy(profile)
    if not len(lo):
        return None
    end = (start_ns + dur_ns)[warm:-1]
    k = np.searchsorted(lo, end - _ACROSS_NS, "right") - 1  # the busy run begun before
    running = (k >= 0) & (hi[np.maximum(k, 0)] >= end + _ACROSS_NS)
    ahead = np.flatnonzero(running) + warm
    waits = np.flatnonzero(~running) + warm
    n = len(end)
    if len(ahead) < max(AHEAD_MIN, AHEAD_SHARE * n) or len(waits) < WAITS_MIN:
        return None
    ends = start_ns + dur_ns
    first, last = int(waits[0]), int(waits[-1])
    per_step = (int(ends[last]) - int(ends[first])) // (last - first)
    dispatch = int(np.median(dur_ns[ahead]))
    if per_step < RATE_OVER_DISPATCH * dispatch:
        return None
    return RunAhead(ahead, waits, per_step, dispatch)
