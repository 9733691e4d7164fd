"""Zero-length events in the step breakdown, as XProf's sweep counts them.

XProf breaks a step down by sweeping the start and end boundaries of its events (ends before
starts at equal times) while counting the active events of each type; the step's type at an
instant is the "current" type, raised when an event of a higher type starts and recomputed
(the highest type with a positive count) only when an event of the current type ends and its
count drops to zero. A zero-length event ends before it starts, so when no event of its type
or a higher one is active, its start makes its type current with a count of zero, and that
type stays current until the next event of that type or a higher one starts (or a zero-length
event of a higher type takes over). On JAX CPU profiles this is most of XProf's host compute
in some steps: the 0 ns ``ThreadpoolListener::StartRegion`` that the step's dispatch
schedules makes the rest of the step, up to the next traced Python event, host compute
(checked event by event against XProf 2.24.2 on `jax/cnn_cpu`, see docs/decisions.md).
XProf's sweep measures only between two boundaries of the step's events, so a type held after
the step's last boundary (start or end of any of its events) holds nothing past it: an instant
that is the step's last event holds nothing at all (decision 740).

This module finds those held spans, so that `breakdown.type_time` can count them like events.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stepscope.distinct import distinct
from stepscope.stats.arrays import unique_many
from stepscope.stats.intervals import merge_sorted

Spans = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # step, lo, hi, type


def _empty() -> Spans:
    z = np.zeros(0, np.int64)
    return z, z.copy(), z.copy(), z.copy()


def held_spans(
    step: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    types: np.ndarray,
    zero_step: np.ndarray,
    zero_ns: np.ndarray,
    zero_type: np.ndarray,
) -> Spans:
    """(step, lo, hi, type) of the spans that zero-length events hold their type current.

    ``step``/``lo``/``hi``/``types``: the step's events of positive length (clipped to the
    step spans is fine: only their starts after a zero-length event matter); ``zero_*``: the
    step's zero-length events (step, time, type). The spans are not clipped to the steps.
    """
    if not zero_ns.size:  # before any copy: most traces have none, and the copies are 4 x 8 B
        return _empty()  # per step event (1.2 s of page faults at 20M events)
    keep = hi > lo
    step, lo, hi, types = step[keep], lo[keep], hi[keep], types[keep]
    # For each type T of a zero-length event: the union of events of types >= T per step, as
    # keys step * width + the time's offset from the earliest, so that one sorted array holds
    # every step; where that is too wide for int64, the time's rank among all the times
    # (ranks keep order and ties, all the rules need, and keep the keys small, but cost a
    # sort and searches: 8 ms of a 0.2M-event Kineto overview).
    key_of, time_of, width = _time_keys(lo, hi, zero_ns, step, zero_step)
    zkey = zero_step * width + key_of(zero_ns)
    covered = np.zeros(len(zero_ns), dtype=bool)
    next_start = np.full(len(zero_ns), np.iinfo(np.int64).max, dtype=np.int64)
    for t in distinct(zero_type).tolist():
        m = types >= t
        z = np.flatnonzero(zero_type == t)
        if not m.any():
            continue
        k_lo = step[m] * width + key_of(lo[m])
        k_hi = step[m] * width + key_of(hi[m])
        order = np.argsort(k_lo, kind="stable")
        _, u_lo, u_hi = merge_sorted(k_lo[order], k_hi[order])
        i = np.searchsorted(u_lo, zkey[z], "right")  # unions starting at or before t
        covered[z] = (i > 0) & (zkey[z] < u_hi[np.maximum(i - 1, 0)])
        nxt = u_lo[np.minimum(i, len(u_lo) - 1)]
        same_step = (i < len(u_lo)) & (nxt // width == zero_step[z])
        next_start[z[same_step]] = time_of(nxt[same_step] % width)
    cand = np.flatnonzero(~covered)
    if not cand.size:
        return _empty()
    return _hold(zero_step[cand], zero_ns[cand], zero_type[cand], next_start[cand])


def _time_keys(
    lo: np.ndarray, hi: np.ndarray, zero_ns: np.ndarray, step: np.ndarray, zero_step: np.ndarray
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray], int]:
    """(time -> key within a step, key -> time, width): keys of one order and ties as the
    times, below ``width``; ``max step * width`` fits in int64."""
    base = int(min(lo.min(initial=zero_ns.min()), zero_ns.min()))
    top = int(max(hi.max(initial=zero_ns.max()), zero_ns.max()))
    width = top - base + 1
    steps = int(max(step.max(initial=0), zero_step.max(initial=0))) + 1
    if steps * width < 1 << 62:
        return (lambda t: t - base), (lambda k: k + base), width
    times = unique_many(np.concatenate([lo, hi, zero_ns]))  # many distinct: sort, not hash
    return (lambda t: np.searchsorted(times, t)), (lambda k: times[k]), len(times) + 1


def _hold(z_step: np.ndarray, z_ns: np.ndarray, z_type: np.ndarray, z_next: np.ndarray) -> Spans:
    """Walk the uncovered zero-length events in time order (higher types first at equal
    times): each one takes over unless a held type at least as high is still current."""
    order = np.lexsort((-z_type, z_ns, z_step))
    out: list[tuple[int, int, int, int]] = []
    cur: tuple[int, int, int, int] | None = None  # step, type, start, clearing time
    # the columns as Python ints in walk order, not four NumPy scalars a step (held_spans
    # 3.5 -> 2.5 ms on the V100 Kineto trace's 2,000 walked events, decision 313)
    walk = (column[order].tolist() for column in (z_step, z_ns, z_type, z_next))
    for s, t, ty, nxt in zip(*walk, strict=True):
        if cur is not None and cur[0] == s and t < cur[3]:
            if ty <= cur[1]:
                continue  # a held type at least as high stays current
            out.append((cur[0], cur[2], t, cur[1]))
        elif cur is not None:
            out.append((cur[0], cur[2], cur[3], cur[1]))
        cur = (s, ty, t, nxt)
    if cur is not None:
        out.append((cur[0], cur[2], cur[3], cur[1]))
    cols = np.array(out, dtype=np.int64).reshape(-1, 4)
    return cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3]


def until_last_boundary(
    h_step: np.ndarray, h_hi: np.ndarray, step: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """``h_hi`` no later than the last boundary of its step's events: ``step``/``hi`` are every
    pair of the breakdown with its end clipped to the step's span (so an event ending after
    the span, or one starting after it, is a boundary at the span's end). Only held spans that
    no later event of their type ends (those reaching past ``hi``'s range) can change, and only
    their steps' pairs are read (most profiles have none)."""
    tail = np.flatnonzero(h_hi == np.iinfo(np.int64).max)
    if not tail.size:
        return h_hi
    steps = distinct(h_step[tail])  # sorted
    mine = np.flatnonzero(np.isin(step, steps))
    last = np.full(len(steps), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, np.searchsorted(steps, step[mine]), hi[mine])
    out = h_hi.copy()
    out[tail] = last[np.searchsorted(steps, h_step[tail])]
    return out
