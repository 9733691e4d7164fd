"""Steps of a profile without step markers, inferred from the repeating structure of the trace.

A training loop repeats: on the thread that drives it, the same top-level event (a
``tf.function`` call, a ``multi_step_on_iterator``, a DataLoader ``__next__``, an optimizer
step) comes back once per step at a steady period. Each (thread, name) pair of top-level
events with at least three occurrences is a candidate; it qualifies when its periods are
regular: periods within [0.5, 2] x the median cover at least half of the time between its
first and last occurrence (one slow step is fine; an op that runs many times inside a step
and then waits is not), or the same work fills them: periods holding the same top-level
events of the thread (the same names, as often, beside the candidate's own) cover at least
half of that time. A loop on a busy machine has steps of 20 to 250 ms, no steady period, and
the same fetch and ops in every one; an op in bursts has between two of its calls nothing
else, or another thing each time.

Among qualifying candidates the coarsest period wins (a per-step event over per-layer ones),
then events that wait for input (a step starts by fetching its batch), then events that fill
more of their period (a step function rather than a launch call), then more total time. The
thread with the most ``_r`` roots (else the busiest one, collectives aside) is tried first;
other host threads only when it has no candidate. Step k is the window from the k-th
occurrence to the next one, so N occurrences give N - 1 steps, each bounded by observed
events at both ends.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.model import Profile
from stepscope.stats.events import host_lines, is_input_wait_name, loader_worker_lines
from stepscope.stats.nesting import nesting_parents
from stepscope.stats.steps.types import StepMarkers
from stepscope.vocab.collectives import is_host_collective

MIN_OCCURRENCES = 3
REGULAR_SHARE = 0.5
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # odd: a name's id times it is a well-spread hash


def _main_line(profile: Profile, top: np.ndarray) -> int | None:
    """The thread with the most ``_r`` roots, else the one whose top-level events take the
    most time (the loop's driver: an optimizer thread or a launch thread is busy in bursts),
    collectives left out: a communication thread (gloo's) of a rank that waits for another
    is busier than the loop's, in all-reduces that start in the middle of its steps."""
    roots = profile.stat("_r").present
    if roots.any():
        host = host_lines(profile)[profile.line] & roots
        if host.any():
            return int(np.bincount(profile.line[host]).argmax())
    if not top.size:
        return None
    names = profile.name[top]
    kinds, kind_of = distinct_inverse(names)
    talk = np.array([is_host_collective(profile.strings[int(k)]) for k in kinds.tolist()])
    work = np.where(talk[kind_of], 0, profile.dur_ns[top])
    if not work.any():
        work = profile.dur_ns[top]
    return int(np.bincount(profile.line[top], weights=work).argmax())


def _candidates(
    profile: Profile, top: np.ndarray
) -> list[tuple[tuple[float, int, float, int], int, np.ndarray, int]]:
    """Qualifying (score, name id, sorted starts, line) among the top-level events ``top``."""
    out: list[tuple[tuple[float, int, float, int], int, np.ndarray, int]] = []
    if top.size < MIN_OCCURRENCES:
        return out
    by_start = np.argsort(profile.start_ns[top], kind="stable")
    work = _work_before(profile.name[top[by_start]])
    position = np.empty(len(top), np.int64)
    position[by_start] = np.arange(len(top))
    order = np.lexsort((profile.start_ns[top], profile.name[top]))
    top, position = top[order], position[order]
    names = profile.name[top]
    bounds = np.flatnonzero(np.r_[True, names[1:] != names[:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if hi - lo < MIN_OCCURRENCES:
            continue
        events = top[lo:hi]
        starts = profile.start_ns[events]
        periods = np.diff(starts)
        median = float(np.median(periods))
        if median <= 0:
            continue
        granularity = median
        if not _steady(periods, median):
            if not _same_work(work, position[lo:hi], periods):
                continue
            # Uneven periods: their median is one of them, another per-step event's median
            # another one; the mean period is the same for every event once a step.
            granularity = float(periods.mean())
        busy = int(profile.dur_ns[events].sum())
        duty = busy / float(starts[-1] - starts[0] + profile.dur_ns[events[-1]])
        name = profile.strings[int(names[lo])]
        # Periods within 20% count as the same granularity (log buckets of 1.2x).
        score = (
            float(np.floor(np.log(granularity) / np.log(1.2))),
            int(is_input_wait_name(name)),
            round(duty, 1),
            busy,
        )
        out.append((score, int(names[lo]), starts, int(profile.line[events[0]])))
    return out


def _steady(periods: np.ndarray, median: float) -> bool:
    """Whether periods within [0.5, 2] x their median cover `REGULAR_SHARE` of the time."""
    regular = (periods >= 0.5 * median) & (periods <= 2 * median)
    return bool(periods[regular].sum() >= REGULAR_SHARE * periods.sum())


def _work_before(names: np.ndarray) -> np.ndarray:
    """Per position of a thread's top-level events in time order (and one past the last):
    a hash of the names before it, summed, so that the events between two positions have
    the difference of their hashes (order aside) and their count the difference of
    positions."""
    with np.errstate(over="ignore"):
        hashed = names.astype(np.uint64) * _GOLDEN
        hashed ^= hashed >> np.uint64(29)
        return np.r_[np.uint64(0), np.cumsum(hashed, dtype=np.uint64)]


def _same_work(work: np.ndarray, position: np.ndarray, periods: np.ndarray) -> bool:
    """Whether the periods between consecutive occurrences (at ``position`` in time order)
    that hold the most common work, and some work beside the occurrence itself, cover at
    least `REGULAR_SHARE` of their time."""
    count = np.diff(position)
    with np.errstate(over="ignore"):
        content = work[position[1:]] - work[position[:-1]]
    kinds, inverse, seen = np.unique(
        np.stack([content.view(np.int64), count]), axis=1, return_inverse=True, return_counts=True
    )
    common = int(np.argmax(seen))
    if int(kinds[1, common]) < 2:
        return False
    return bool(periods[inverse.reshape(-1) == common].sum() >= REGULAR_SHARE * periods.sum())


def infer_steps(profile: Profile) -> StepMarkers | None:
    """Steps from the repeating structure of the host threads, or None when nothing repeats."""
    if profile.n_events == 0:
        return None
    # a DataLoader worker's batches repeat too, in another process: not the loop's steps
    threads = host_lines(profile) & ~loader_worker_lines(profile)
    host = threads[profile.line] & (profile.dur_ns > 0)
    events = np.flatnonzero(host)
    if events.size < MIN_OCCURRENCES:
        return None
    parent = nesting_parents(profile.line[events], profile.start_ns[events], profile.end_at(events))
    top = events[parent < 0]
    main = _main_line(profile, top)
    found = []
    if main is not None:
        found = _candidates(profile, top[profile.line[top] == main])
    if not found:
        for line in distinct(profile.line[top]).tolist():
            found += _candidates(profile, top[profile.line[top] == line])
    if not found:
        return None
    _, name_id, starts, line = max(found, key=lambda c: c[0])
    count = len(starts) - 1
    periods = np.diff(starts)
    name = profile.strings[name_id]
    median = float(np.median(periods))
    every = f"every {median / 1e6:.1f} ms"
    if not _steady(periods, median):
        every = (
            f"every {float(periods.mean()) / 1e6:.1f} ms on average ({periods.min() / 1e6:.1f}"
            f" to {periods.max() / 1e6:.1f} ms apart, the same work each time)"
        )
    return StepMarkers(
        "inferred",
        f"{len(starts)} repeats of top-level event '{name}' {every} (no step markers in the "
        "profile)",
        np.full(count, -1, dtype=np.int64),
        np.arange(count, dtype=np.int64),
        tuple(f"step {k}" for k in range(count)),
        starts[:-1].copy(),
        starts[1:].copy(),
        use_groups=False,
        drop_incomplete=False,
        lines=(line,),
    )
