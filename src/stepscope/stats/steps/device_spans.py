"""A step's span on a host with devices: its marker, stretched over its device work.

The device runs asynchronously: a step's kernels may run past its marker's end (the host
queued them and went on), or begin well after its start (the host fetched its batch first).
A step then runs from its marker's start to its last device work's end (decision 1056);
XProf times it by its device work alone, which leaves the host's time before the first
kernel (a DataLoader's fetch, the step's Python) in no step. The exception is time the
device spent on earlier work no step holds (a warm-up call's kernels still running when the
first step's marker opened): the step begins when that work ended, not at its marker. Steps
stay sequential: each begins no earlier than the one before ended.

A device event belongs to the step whose marker holds its host launch (`launch_times`), its
own start without one; the device's backlog, work without a launch that ran before the first
launched one (queued before the capture began), belongs to no step (decision 1072). The step
breakdown, the diagnostics and the collective calls all place device work by this rule.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.stats.events import NOT_COUNTED
from stepscope.stats.gpu.kernels import launch_events

NO_STEP = np.iinfo(np.int64).min  # the placing time of backlog work: before every window


def launch_times(
    profile: Profile, events: np.ndarray, work: np.ndarray, *, cached: bool = False
) -> np.ndarray:
    """Per device event of ``events``, the time that places it in a step: the start of its
    host launch (the same correlation id), else its own start, and `NO_STEP` for the
    device's backlog: work without a launch in the trace that started before the device's
    first launched work, the queue the capture opened on (an MI300X trace's previous step,
    30 ms of all-reduces, ran into its first marker). ``work``: the profile's device work,
    ascending, which finds the first launched work of each device (``events`` are added to
    it). ``cached``: as `launch_events`'s."""
    work = distinct(np.concatenate([work, events])) if len(events) else work
    launch = launch_events(profile, work, cached=cached)
    found = launch >= 0
    start = profile.start_ns[work]
    when = start.copy()
    when[found] = profile.start_ns[launch[found]]
    if found.any():
        plane = profile.line_plane.take(profile.line.take(work))
        first = np.full(len(profile.planes), np.iinfo(np.int64).max)
        np.minimum.at(first, plane[found], start[found])
        when[~found & (start < first[plane])] = NO_STEP
    return when[np.searchsorted(work, events)]


def window_of(when: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Row of the window [lo, hi) holding each time (the latest-starting one where windows
    overlap; ``lo`` ascending), -1 for none (every time, without a window: no steps)."""
    if not len(lo):
        return np.full(len(when), -1, np.int64)
    k = np.searchsorted(lo, when, "right") - 1
    inside = (k >= 0) & (when < hi[np.maximum(k, 0)])
    return np.where(inside, k, -1)


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
