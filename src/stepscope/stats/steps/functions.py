"""Which concrete function each ``tf.function`` call from Python ran (decision 597).

Keras names the step function it wraps in ``tf.function`` after the Python function, the same
for training and for evaluation: a ``model.fit(..., validation_data=...)`` calls
``multi_step_on_iterator`` once a training batch and once a validation batch, and the two are
one top-level name on the loop's thread. TF's runtime span inside each call names the
concrete function the call ran (``EagerLocalExecute: __inference_multi_step_on_iterator_247``
for training, ``..._436`` for evaluation), so the calls of the two loops can be told apart.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.model import Profile
from stepscope.vocab import tensorflow

_CALLED = tensorflow.EAGER_OP_PREFIX + tensorflow.FUNCTION_PREFIX


def other_functions(profile: Profile, calls: np.ndarray) -> np.ndarray | None:
    """For the calls ``calls`` (event indexes of one name on one thread, sorted by start): a
    mask of those that ran another concrete function (`_ran`) than the first of them did, or None
    when they are no tf.function calls (stat `tensorflow.FUNCTION_CALL_STAT` on each) or all
    ran one function (or none is named). The first, not the most called: a fit trains
    before it validates, and its validation may take more batches than its training."""
    if len(calls) < 2 or profile.strings.id_of(tensorflow.FUNCTION_CALL_STAT) < 0:
        return None
    if not profile.stat_at(tensorflow.FUNCTION_CALL_STAT, calls).present.all():
        return None
    ran = _ran(profile, calls)
    named = ran >= 0
    if not named.any():
        return None
    first = ran[named][0]
    other = named & (ran != first)
    return other if other.any() else None


def _ran(profile: Profile, calls: np.ndarray) -> np.ndarray:
    """Per call: the name id of the last runtime span of a concrete function that starts
    inside it on its thread, not nested in another such span, or -1. The last, not the
    first: a plain loop's ``tf.function`` that creates its variables on its first call (a
    Keras model and optimizer built lazily) runs ``__inference_initialize_variables_N``
    first, then its own ``__inference_train_M``, in that call; taking the first made every
    later call "another function", no call of the loop a step, and a TF worker thread's
    ``ExecutorDoneCallback`` the steps: 17 for the script's 30 (decision 1046)."""
    # the thread's own events only (a line's events are contiguous, sorted by start), and
    # the names of those events tested, not every string of the profile
    on_line = profile.events_of_line(profile.lines[int(profile.line[calls[0]])])
    names, of_event = distinct_inverse(profile.name[on_line])
    called = np.array([profile.strings[n].startswith(_CALLED) for n in names.tolist()], bool)
    spans = np.flatnonzero(called[of_event]) + on_line.start
    out = np.full(len(calls), -1, dtype=np.int64)
    if not spans.size:
        return out
    # the outermost spans: each starts at or after every earlier one's end
    ends = profile.end_at(spans)
    before = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(ends)[:-1]]
    spans = spans[profile.start_ns[spans] >= before]
    begin = profile.start_ns[spans]
    last = np.searchsorted(begin, profile.end_at(calls), "left") - 1
    hit = np.maximum(last, 0)
    inside = (last >= 0) & (begin[hit] >= profile.start_ns[calls])
    out[inside] = profile.name[spans[hit[inside]]]
    return out


Spans = tuple[np.ndarray, np.ndarray]  # sorted, disjoint [begin, end) in ns


def other_loop_spans(profile: Profile, calls: np.ndarray, other: np.ndarray) -> Spans:
    """Where the other loop runs among the calls ``calls`` (sorted by start; ``other``: the
    mask `other_functions` gave): for each run of its calls, from the end of the call of
    the main function before it (its first call's start when none) to the start of the
    next one (no end when none). Its set-up, its compile and the iterators' deletions
    after it are the other loop's too, outside the main loop's iterations."""
    begin, end = profile.start_ns[calls], profile.end_at(calls)
    edges = np.diff(np.r_[0, other.astype(np.int8), 0])
    first, stop = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # runs [first, stop)
    lo = np.where(first > 0, end[np.maximum(first - 1, 0)], begin[first])
    hi = np.where(
        stop < len(calls), begin[np.minimum(stop, len(calls) - 1)], np.iinfo(np.int64).max
    )
    return lo.astype(np.int64), hi.astype(np.int64)


def clear_of(spans: Spans, bounds: np.ndarray) -> np.ndarray:
    """Per period between consecutive ``bounds`` (sorted ns): whether it overlaps none of
    ``spans`` (a mask)."""
    lo, hi = spans
    if not lo.size:
        return np.ones(max(len(bounds) - 1, 0), dtype=bool)
    k = np.searchsorted(hi, bounds[:-1], "right")  # the first span ending after the start
    hit = k < len(lo)
    hit[hit] = lo[k[hit]] < bounds[1:][hit]
    return ~hit


def other_calls_note(profile: Profile, calls: np.ndarray, other: np.ndarray) -> str:
    """The other loop's own batch times, said (decision 643): its calls (``calls[other]``,
    ``calls`` sorted by start) are in no step, and a fit's validation batches were reported
    nowhere. Each call is one batch of that loop (Keras calls its evaluation step function
    once a batch, as the training one): how many, in how many runs, the first (it traces and
    compiles when the loop's function is new) and the median of the others, with their
    range."""
    dur = profile.dur_ns[calls[other]].astype(np.int64)
    runs = int((np.diff(np.r_[0, other.astype(np.int8)]) == 1).sum())
    n = len(dur)
    where = f"in {runs} runs" if runs > 1 else "in one run"
    text = (
        f"; the other function's {n} call{'s' if n > 1 else ''} (validation or evaluation "
        f"batches, {where}) are in no step: "
    )
    if n == 1:
        return text + f"{dur[0] / 1e6:.2f} ms"
    rest = dur[1:]
    return text + (
        f"the first {dur[0] / 1e6:.2f} ms, the others {float(np.median(rest)) / 1e6:.2f} ms"
        f" (median; {rest.min() / 1e6:.2f} to {rest.max() / 1e6:.2f})"
    )
