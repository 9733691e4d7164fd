"""The Python stack sampler's lines (docs/formats/python_samples.md) and what they explain.

A ``Python samples`` line of the ``/host:CPU`` plane holds runs of identical Python stacks of
one thread (``display_id`` = that thread's line id). Its events are not work of their own (the
thread's traced events are): event typing leaves them out, and they are used to say which
Python functions took the time that no traced event covers ("All Others") on a step's thread.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.intervals import overlap_with

SAMPLES_LINE = "Python samples"
PYTHON_OP_TYPE = "Python"


def sample_lines(profile: Profile) -> np.ndarray:
    """Per line: True for the sampler's lines."""
    return np.array(
        [
            ln.name == SAMPLES_LINE and profile.planes[ln.plane].name == "/host:CPU"
            for ln in profile.lines
        ],
        dtype=bool,
    )


def sampled_thread_line(profile: Profile) -> np.ndarray:
    """Per line: for a samples line, the index of the thread line it samples (same plane,
    line id = its display_id), else -1 (also when the thread recorded no event)."""
    out = np.full(len(profile.lines), -1, dtype=np.int64)
    by_id = {(ln.plane, ln.id): ln.index for ln in profile.lines if ln.name != SAMPLES_LINE}
    for ln, is_samples in zip(profile.lines, sample_lines(profile).tolist(), strict=True):
        if is_samples:
            out[ln.index] = by_id.get((ln.plane, ln.display_id), -1)
    return out


@record
class PythonTime:
    """Untraced time of the steps' threads, by the Python function the sampler saw there."""

    function: tuple[str, ...]  # innermost frame, "func (file:line)"
    stack: tuple[str, ...]  # its most common full stack (outermost first, ';'-joined)
    ns: np.ndarray  # int64: time in "All Others" over the steps given
    samples: np.ndarray  # int64: samples behind it

    @classmethod
    def empty(cls) -> PythonTime:
        z = np.zeros(0, np.int64)
        return cls((), (), z, z)

    def __len__(self) -> int:
        return len(self.function)


def _inside(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Whether each time ``at`` lies in one of the sorted, disjoint [starts, ends)."""
    k = np.searchsorted(starts, at, "right") - 1
    ok = k >= 0
    ok[ok] = at[ok] < ends[k[ok]]
    return ok


def _step_of(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Index of the sorted, disjoint [starts, ends) holding each time, else -1."""
    k = np.searchsorted(starts, at, "right") - 1
    ok = k >= 0
    ok[ok] = at[ok] < ends[k[ok]]
    return np.where(ok, k, -1)


def _covered_in(
    lo: np.ndarray, hi: np.ndarray, covered_start: np.ndarray, covered_end: np.ndarray
) -> np.ndarray:
    """Per span [lo, hi): its overlap with the sorted, disjoint covered intervals."""
    return overlap_with(lo, hi, covered_start, covered_end).astype(np.float64)


def untraced_python_time(
    profile: Profile,
    step_lines: tuple[int, ...],
    span_start: np.ndarray,
    span_end: np.ndarray,
    covered_start: np.ndarray,
    covered_end: np.ndarray,
) -> PythonTime:
    """Time of the threads ``step_lines`` inside the step spans and outside the traced
    intervals ``covered_*`` (sorted, disjoint), by innermost Python function.

    Estimated from the samples, not from the runs' spans: a run of n samples over d ns stands
    for n samples d/n apart, each counting d/n where it falls in untraced step time. (A run's
    span also covers the interval after its last sample, which may hold other work: 2 ms
    data fetches seen by one 10 ms sample must not take the 8 ms of Python after them.)
    """
    thread_of = sampled_thread_line(profile)
    lines = [ln for ln in range(len(profile.lines)) if thread_of[ln] in step_lines]
    if not lines or not len(span_start):
        return PythonTime.empty()
    ev = np.concatenate(
        [
            np.arange(sl.start, sl.stop, dtype=np.int64)
            for sl in (profile.events_of_line(profile.lines[ln]) for ln in lines)
        ]
    )
    count = np.maximum(profile.stat("samples").as_int(1)[ev], 1)
    each = profile.dur_ns[ev] / count
    sample_ev = np.repeat(ev, count)
    k = np.arange(len(sample_ev)) - np.repeat(np.cumsum(count) - count, count)
    weight = np.repeat(each, count)
    at = profile.start_ns[sample_ev] + (k * weight).astype(np.int64)
    order = np.argsort(span_start, kind="stable")
    s_lo, s_hi = span_start[order], span_end[order]
    in_step = _inside(s_lo, s_hi, at)
    # A run's samples are spread evenly over it, but a run that began outside a step (or in
    # another step) was seen there: a Python-level sampler gets the GIL when the thread
    # blocks, so a loader's sleep before the step can be the only stack it saw around a
    # short burst of Python inside the step. Such samples say nothing about the step.
    first = np.repeat(profile.start_ns[ev], count)
    same = _step_of(s_lo, s_hi, at) == _step_of(s_lo, s_hi, first)
    free = in_step & same & ~_inside(covered_start, covered_end, at)
    if not free.any():
        return PythonTime.empty()
    sample_ev, weight = sample_ev[free], weight[free]
    # No step gets more sampled Python time than it has untraced time.
    step = _step_of(s_lo, s_hi, at[free])
    untraced = (s_hi - s_lo) - _covered_in(s_lo, s_hi, covered_start, covered_end)
    given = np.bincount(step, weights=weight, minlength=len(s_lo))
    scale = np.minimum(1.0, untraced / np.maximum(given, 1.0))
    weight = weight * scale[step]
    name = profile.name[sample_ev]
    stack = profile.stat("stack").string_ids()[sample_ev]
    uniq, inverse = np.unique(name, return_inverse=True)
    inverse = inverse.reshape(-1)
    total = np.bincount(inverse, weights=weight, minlength=len(uniq)).round().astype(np.int64)
    samples = np.bincount(inverse, minlength=len(uniq)).astype(np.int64)
    # the stack seen most often with each function
    pair = np.stack([inverse, stack], axis=1)
    kinds, pair_count = np.unique(pair, axis=0, return_counts=True)
    best = kinds[np.lexsort((-pair_count, kinds[:, 0]))]
    best = best[np.r_[True, best[1:, 0] != best[:-1, 0]]]
    stack_of = dict(zip(best[:, 0].tolist(), best[:, 1].tolist(), strict=True))
    rank = np.argsort(-total, kind="stable")
    strings = profile.strings
    return PythonTime(
        tuple(strings[int(uniq[i])] for i in rank.tolist()),
        tuple(strings[stack_of[i]] if stack_of[i] >= 0 else "" for i in rank.tolist()),
        total[rank],
        samples[rank],
    )
