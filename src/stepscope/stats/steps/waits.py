"""Waits attributed to the computation they wait for.

A JAX CPU step dispatches its jitted ``train_step`` and blocks in ``block_until_ready`` while
XLA runs it on its thread pool; XProf's grouping does not reach that pool (decision 51), so
the step thread's wait is untraced time ("All Others") though it is the model's compute, to
the microsecond. The same holds for ``.item()``, ``cudaStreamSynchronize`` or a
``tf.function`` call blocking while its ops run on executor threads.

On the steps' threads, the time in a wait event (`stepscope.vocab.waits`: a synchronize, an
``Await``, ``block_until_ready``...) or in an untraced gap, outside dispatch runs, is given to
the computation running meanwhile on a compute thread (XLA's CPU client and Eigen pools,
TensorFlow's executor threads) or as a compiled program (``ThunkExecutor::Execute``): it is
compute. A wait with nothing traced running meanwhile (a wait event, or an untraced gap
that a wait event ends: ``block_until_ready`` shows as a gap closed by an ``Await``) is
"waits": the thread was blocked, on nothing the trace shows (another process, a
descheduled thread, a lock). A device
computation needs nothing here: the breakdown already counts device work over host waits.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import used_names
from stepscope.stats.intervals import intersect_sets, merge, subtract_sets
from stepscope.vocab.waits import COMPUTE_EVENT_PREFIXES, is_compute_thread, is_wait_name

_WAIT_ENDS_GAP_NS = 2_000  # a wait event this close after a gap's end ends that gap


@record
class Waits:
    """The steps' waits: for a computation (compute) and for nothing traced (idle)."""

    compute_lo: np.ndarray
    compute_hi: np.ndarray
    idle_lo: np.ndarray
    idle_hi: np.ndarray
    # what the waited-for computation is: its threads and its most common events
    computation: tuple[str, ...] = field(default_factory=tuple)


def compute_events(profile: Profile, counted: np.ndarray, step_lines: np.ndarray) -> np.ndarray:
    """Counted events of compute threads, or compiled programs running, off the step lines."""
    thread = np.array(
        [is_compute_thread(ln.name) or is_compute_thread(ln.display_name) for ln in profile.lines],
        dtype=bool,
    )
    mask = counted & thread.take(profile.line)
    programs = profile.strings.ids_matching(lambda s: s.startswith(COMPUTE_EVENT_PREFIXES))
    if len(programs):
        mask |= counted & np.isin(profile.name, programs)
    mask &= ~step_lines[profile.line]
    return np.flatnonzero(mask & (profile.dur_ns > 0))


def find_waits(
    profile: Profile,
    counted: np.ndarray,
    lines: tuple[int, ...],
    traced_lo: np.ndarray,
    traced_hi: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    dispatch_lo: np.ndarray,
    dispatch_hi: np.ndarray,
) -> Waits:
    """The steps' waits on ``lines`` (``traced_*``: the union of the step lines' counted
    events, sorted; ``span_*``: the steps, sorted; ``dispatch_*``: dispatch runs, sorted and
    disjoint), split by whether a computation ran meanwhile."""
    none = np.zeros(0, np.int64)
    if not lines or not len(span_lo):
        return Waits(none, none, none, none)
    on_step = np.zeros(len(profile.lines), dtype=bool)
    on_step[list(lines)] = True
    # untraced time of the step lines inside the steps
    gaps_lo, gaps_hi = subtract_sets(span_lo, span_hi, traced_lo, traced_hi)
    # wait events of the step lines
    strings = profile.strings
    used = used_names(profile)
    wait_ids = [i for i in used.tolist() if is_wait_name(strings[i])]
    w = np.flatnonzero(np.isin(profile.name, wait_ids) & on_step[profile.line])
    if len(w):
        w_start = np.sort(profile.start_ns[w])
        w_lo, w_hi = merge(profile.start_ns[w], profile.end_at(w))
        w_lo, w_hi = intersect_sets(w_lo, w_hi, span_lo, span_hi)
        # an untraced gap that a wait event ends (``block_until_ready`` between two
        # ``Await`` marks) is the thread blocked in that wait
        at = np.searchsorted(w_start, gaps_hi, "left")
        next_start = w_start[np.minimum(at, len(w_start) - 1)]
        ended = (at < len(w_start)) & (np.abs(next_start - gaps_hi) <= _WAIT_ENDS_GAP_NS)
        b_lo, b_hi = merge(np.r_[w_lo, gaps_lo[ended]], np.r_[w_hi, gaps_hi[ended]])
    else:
        w_lo = w_hi = b_lo = b_hi = none
    waiting_lo, waiting_hi = merge(np.r_[gaps_lo, w_lo], np.r_[gaps_hi, w_hi])
    waiting_lo, waiting_hi = subtract_sets(waiting_lo, waiting_hi, dispatch_lo, dispatch_hi)
    work = compute_events(profile, counted, on_step)
    if len(work):
        busy_lo, busy_hi = merge(profile.start_ns[work], profile.end_at(work))
        c_lo, c_hi = intersect_sets(waiting_lo, waiting_hi, busy_lo, busy_hi)
    else:
        c_lo = c_hi = none
    # blocked in a wait while nothing traced computes: idle waiting
    i_lo, i_hi = subtract_sets(b_lo, b_hi, c_lo, c_hi)
    i_lo, i_hi = subtract_sets(i_lo, i_hi, dispatch_lo, dispatch_hi)
    return Waits(c_lo, c_hi, i_lo, i_hi, _describe(profile, work, c_lo, c_hi))


def _describe(
    profile: Profile, work: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> tuple[str, ...]:
    """The threads of the computation waited for, most waited-for first (at most 3)."""
    if not len(work) or not len(lo):
        return ()
    start = profile.start_ns[work]
    end = profile.end_at(work)
    k = np.searchsorted(lo, start, "right") - 1
    touching = (end > lo[np.maximum(k, 0)]) & (k >= 0) & (start < hi[np.maximum(k, 0)])
    touching |= np.searchsorted(lo, end, "left") > np.searchsorted(lo, start, "right")
    if not touching.any():
        return ()
    lines = profile.line[work[touching]]
    weight = np.bincount(lines, weights=(end - start)[touching], minlength=len(profile.lines))
    order = np.argsort(-weight, kind="stable")
    names = []
    for line in order.tolist():
        if weight[line] <= 0:
            break
        label = profile.lines[line].name.split("/")[0] or profile.lines[line].label
        if label not in names:
            names.append(label)
    return tuple(names[:3])
