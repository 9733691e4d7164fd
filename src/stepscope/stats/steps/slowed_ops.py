"""The model's ops slowed beside the input pipeline's busy Python (decision 525).

A tf.data map that runs Python (``tf.py_function``) holds a core while it runs. On a host
with few free cores the model's ops that run meanwhile wait for one: Keras ``fit`` over a
4 ms map on a 2-core host (/tmp/keras12, 09:32 UTC) took 5.44 ms of compute a step against
3.70 ms with the map doing nothing, and one ``_MklNativeFusedMatMul`` that takes 0.5 ms ran
4.3 ms, ending when the map's Python ended. Counted as compute, that time made the run read
"bound by compute" though without the map's work the step took 4.1 ms of its 8.3.

The trace shows it by comparing each op with itself: per op name, the instances at least half
of whose time the pipeline's Python ran beside ("beside") against those with none of it
("alone"). Their pooled excess, the sum over names of (beside instances) x (mean beside - mean
alone), is counted only when it exceeds twice its standard error (the alone instances' spread
says how much the ops vary anyway, with the host's other load). Each beside instance is then
slowed by its time over its name's mean alone, at most the time the Python ran beside it,
scaled so that the total is at most the pooled excess; that time, the end of the op (where it
waited), is input (`limit_table`). A map that sleeps (I/O, the GIL released) takes no core:
its ops are not slower, nothing is counted. Ops with no instance alone (a parallel map whose
Python runs all the time) give no measure: nothing is counted, and
`PythonBeside.unmeasured_ns` says how much of the model's time ran beside the Python with
nothing to compare it with (the report says it, decision 525).

Whether that Python keeps the GIL from the step's thread is measured the same way, on the
ends of the thread's calls from Python, where it takes the GIL back (`holds_gil`, decision
526).
"""

from __future__ import annotations

from dataclasses import field, replace

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import used_names
from stepscope.stats.intervals import merge
from stepscope.stats.nesting import nesting_parents
from stepscope.stats.steps.pipeline_python import pipeline_python
from stepscope.stats.steps.waits import compute_events
from stepscope.vocab import tensorflow as tf_names

# an op with at least this share of its time beside the pipeline's Python is "beside" it
BESIDE_SHARE = 0.5
# instances of an op name alone needed for its mean (and spread) alone
MIN_ALONE = 3
# the pooled excess counts only beyond this many standard errors
MIN_Z = 2.0


@record
class PythonBeside:
    """What the trace shows of the pipeline's Python beside the steps (for the evidence)."""

    # the model's ops' time beside the Python over the same ops' mean time alone (0: no op
    # name had both); whether their excess was counted (beyond `MIN_Z` standard errors)
    ratio: float = 0.0
    counted: bool = False
    # the model's op time beside the Python, of the names compared / with none alone (ns)
    beside_ns: int = 0
    unmeasured_ns: int = 0
    # the step threads' calls from Python take longer to return beside the Python than
    # without it (`holds_gil`): it keeps the GIL
    holds_gil: bool = False


@record
class SlowedOps:
    """The model's ops' time slowed beside the pipeline's Python: sorted, disjoint
    intervals (the slowed ends of the ops), and how the ops compared."""

    lo: np.ndarray
    hi: np.ndarray
    beside: PythonBeside = field(default_factory=PythonBeside)

    @classmethod
    def none(cls, beside: PythonBeside | None = None) -> SlowedOps:
        empty = np.zeros(0, np.int64)
        return cls(empty, empty.copy(), beside or PythonBeside())


@record
class _Compared:
    """Instances of names compared beside the Python and alone (`_compare`)."""

    name: np.ndarray  # per instance, its name's index
    used: np.ndarray  # per name index: compared (`MIN_ALONE` alone, one beside)
    mean_alone: np.ndarray  # per name index (ns)
    excess: float  # the pooled excess beside (ns)
    ratio: float  # time beside over the same names' mean time alone (0: none compared)
    shown: bool  # the excess beyond `MIN_Z` standard errors


def _compare(
    names: np.ndarray, dur: np.ndarray, beside: np.ndarray, alone: np.ndarray
) -> _Compared:
    """Per name, the instances beside against those alone; pooled: the sum over names of
    (instances beside) x (mean beside - mean alone), and its standard error from the
    spread of each (one instance beside has no spread of its own: the spread alone stands
    for it)."""
    uniq, name = np.unique(names, return_inverse=True)
    k = len(uniq)
    n_a = np.bincount(name[alone], minlength=k).astype(np.float64)
    n_b = np.bincount(name[beside], minlength=k).astype(np.float64)
    s_a = np.bincount(name[alone], weights=dur[alone], minlength=k)
    q_a = np.bincount(name[alone], weights=dur[alone] ** 2, minlength=k)
    s_b = np.bincount(name[beside], weights=dur[beside], minlength=k)
    q_b = np.bincount(name[beside], weights=dur[beside] ** 2, minlength=k)
    used = (n_a >= MIN_ALONE) & (n_b >= 1)
    mean_a = np.where(used, s_a / np.maximum(n_a, 1), 0.0)
    if not used.any():
        return _Compared(name, used, mean_a, 0.0, 0.0, False)
    var_a = np.where(used, (q_a - n_a * mean_a**2) / np.maximum(n_a - 1, 1), 0.0)
    mean_b = np.where(used, s_b / np.maximum(n_b, 1), 0.0)
    var_b = np.where(n_b > 1, (q_b - n_b * mean_b**2) / np.maximum(n_b - 1, 1), var_a)
    excess = float((n_b * (mean_b - mean_a))[used].sum())
    spread = np.maximum(var_a, 0) / np.maximum(n_a, 1) + np.maximum(var_b, 0) / np.maximum(n_b, 1)
    error = float(np.sqrt((n_b**2 * spread)[used].sum()))
    ratio = float(s_b[used].sum() / max((n_b * mean_a)[used].sum(), 1.0))
    return _Compared(name, used, mean_a, excess, ratio, excess > 0 and excess >= MIN_Z * error)


def _covered(lo: np.ndarray, hi: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The time of the sorted, disjoint intervals before each time ``t``."""
    before = np.r_[0, np.cumsum(hi - lo)]
    k = np.searchsorted(lo, t, "right")
    last = np.maximum(k - 1, 0)
    inside = np.clip(t - lo[last], 0, (hi - lo)[last]) if len(lo) else np.zeros(len(t))
    return before[last] + np.where(k > 0, inside, 0)


def _leaves(profile: Profile, work: np.ndarray) -> np.ndarray:
    """The events of ``work`` (sorted ids) with no event of ``work`` nested in them: the ops,
    not the executor's spans around them."""
    start, end = profile.start_ns[work], profile.end_at(work)
    parent = nesting_parents(profile.line[work], start, end)
    leaf = np.ones(len(work), dtype=bool)
    leaf[parent[parent >= 0]] = False
    return work[leaf]


def slowed_beside_pipeline_python(
    profile: Profile,
    counted: np.ndarray,
    lines: tuple[int, ...],
    span_lo: np.ndarray,
    span_hi: np.ndarray,
) -> SlowedOps:
    """The model's ops (`waits.compute_events`, off the step ``lines``) slowed beside the
    pipeline's Python, as the module says; every op of the profile is compared, the times
    said (`PythonBeside`) are those of the ops starting in the steps (``span_*``, sorted and
    disjoint)."""
    if not lines:
        return SlowedOps.none()
    py_lo, py_hi = pipeline_python(profile)
    if not len(py_lo):
        return SlowedOps.none()
    on_step = np.zeros(len(profile.lines), dtype=bool)
    on_step[list(lines)] = True
    ops = _leaves(profile, compute_events(profile, counted, on_step))
    if not len(ops):
        return SlowedOps.none()
    start, end = profile.start_ns[ops], profile.end_at(ops)
    dur = (end - start).astype(np.float64)
    beside_ns = (_covered(py_lo, py_hi, end) - _covered(py_lo, py_hi, start)).astype(np.float64)
    beside = beside_ns >= BESIDE_SHARE * dur
    alone = beside_ns == 0
    step = np.searchsorted(span_lo, start, "right") - 1
    said = beside & (step >= 0) & (start < span_hi[np.maximum(step, 0)])
    found = _compare(profile.name[ops], dur, beside, alone)
    unmeasured = int(beside_ns[said & ~found.used[found.name]].sum())
    measured = int(beside_ns[said & found.used[found.name]].sum())
    result = PythonBeside(found.ratio, False, measured, unmeasured)
    if not found.shown:
        return SlowedOps.none(result)
    name, mean_a, excess = found.name, found.mean_alone, found.excess
    pick = beside & found.used[name]
    over = np.clip(dur[pick] - mean_a[name[pick]], 0, beside_ns[pick])
    over *= min(1.0, excess / max(float(over.sum()), 1.0))
    slowed = over.astype(np.int64)
    keep = slowed > 0
    lo, hi = merge(end[pick][keep] - slowed[keep], end[pick][keep])
    return SlowedOps(lo, hi, replace(result, counted=True))


def holds_gil(profile: Profile, lines: tuple[int, ...]) -> bool:
    """Whether the pipeline's Python keeps the GIL from the step threads (``lines``): the
    ends of their calls from Python (`tf_names.is_python_entry`, the outermost), after the
    last event inside (where the thread takes the GIL back to return), take longer beside
    the Python than the same calls' ends without it (`_compare`, as for the ops). A map that
    sleeps (I/O) gives the GIL up; a parallel map's Python, beside every call, shows nothing
    either way (decision 526)."""
    if not lines:
        return False
    py_lo, py_hi = pipeline_python(profile)
    if not len(py_lo):
        return False
    on_step = np.zeros(len(profile.lines), dtype=bool)
    on_step[list(lines)] = True
    ev = np.flatnonzero(on_step[profile.line])
    entry = np.zeros(len(profile.strings), dtype=bool)
    used = used_names(profile)
    entry[used] = [tf_names.is_python_entry(profile.strings[i]) for i in used.tolist()]
    calls = entry[profile.name[ev]]
    if not calls.any():
        return False
    start, end = profile.start_ns[ev], profile.end_at(ev)
    parent = nesting_parents(profile.line[ev], start, end)
    outer = calls & ~((parent >= 0) & calls[np.maximum(parent, 0)])
    # each call's last inner event's end: its tail runs from there to its own end
    inner_end = start.copy()
    child = np.flatnonzero(parent >= 0)
    np.maximum.at(inner_end, parent[child], end[child])
    pick = np.flatnonzero(outer & (inner_end < end))
    if not len(pick):
        return False
    t_lo, t_hi = inner_end[pick], end[pick]
    tail = (t_hi - t_lo).astype(np.float64)
    beside_ns = (_covered(py_lo, py_hi, t_hi) - _covered(py_lo, py_hi, t_lo)).astype(np.float64)
    found = _compare(profile.name[ev[pick]], tail, beside_ns >= BESIDE_SHARE * tail, beside_ns == 0)
    return found.shown
