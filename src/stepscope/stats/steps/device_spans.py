"""A step's span on a host with devices: its marker, stretched over its device work.

The device runs asynchronously: a step's kernels may run past its marker's end (the host
queued them and went on), or begin well after its start (the host fetched its batch first).
A step then runs from its marker's start to its last device work's end (decision 1056);
XProf times it by its device work alone, which leaves the host's time before the first
kernel (a DataLoader's fetch, the step's Python) in no step. The exception is time the
device spent on earlier work no step holds (a warm-up call's kernels still running when the
first step's marker opened): the step begins when that work ended, not at its marker. Steps
stay sequential: each begins no earlier than the one before ended.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.events import NOT_COUNTED


def stretched_spans(
    profile: Profile,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    ev: np.ndarray,
    st: np.ndarray,
    on_device: np.ndarray,
    types: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per step: the markers' ``span_lo`` / ``span_hi`` stretched over the device
    work of the steps' events ``ev`` (step ``st`` each; ``on_device``, ``types``: per event
    of the profile). ``span_lo`` is updated in place."""
    n = len(span_lo)
    dev = on_device[ev]
    if not dev.any():
        return span_lo, span_hi
    d_lo = np.full(n, np.iinfo(np.int64).max)
    d_hi = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(d_lo, st[dev], profile.start_ns[ev[dev]])
    np.maximum.at(d_hi, st[dev], profile.end_at(ev[dev]))
    # only device work of some length is a span (0 ns events alone leave the marker's)
    has = d_hi > d_lo
    late = has & (d_lo > span_lo)
    if late.any():  # the device busy with earlier work at the marker's start: from its end
        work = np.flatnonzero(on_device & (types != NOT_COUNTED))
        order = np.argsort(profile.start_ns[work], kind="stable")
        starts = profile.start_ns[work][order]
        reach = np.maximum.accumulate(profile.end_at(work[order]))
        k = np.flatnonzero(late)
        before = np.searchsorted(starts, d_lo[k], side="left") - 1
        busy_until = np.where(before >= 0, reach[np.maximum(before, 0)], span_lo[k])
        span_lo[k] = np.clip(busy_until, span_lo[k], d_lo[k])
    np.minimum(span_lo, np.where(has, d_lo, span_lo), out=span_lo)
    span_hi = np.maximum(span_hi, np.where(has, d_hi, span_hi))
    # A device running behind makes device spans overlap the next steps; steps stay
    # sequential (no time counted twice): each starts no earlier than the last one ended
    # (the markers, so the spans, are in start order).
    ends = np.maximum.accumulate(span_hi)
    span_lo[1:] = np.maximum(span_lo[1:], ends[:-1])
    return span_lo, np.maximum(span_hi, span_lo)
