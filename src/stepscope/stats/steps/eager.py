"""JAX run op by op: an update that is not under ``jax.jit``.

A JAX user's first loop often calls ``update(p, x, y)`` un-jitted: ``jax.grad`` then traces
the function again on every call and dispatches each ``jnp`` op as its own
``PjitFunction(<op>)`` call, with JAX's Python (autodiff, dispatch) between them and, for
an op called with autodiff's tracers, inside the call too (`calls_overhead`). A two-layer
MLP's update on the CPU: 24 such outermost calls a step, 60-840 µs apart (median 60 µs;
load 2). Decision 91's dispatch runs (ops at most 200 µs apart) held only part of it, the
longer gaps were "Python / host" and the calls' own Python "compute", so no one limit said
what ``jax.jit`` removes (the update traced once and run as one program).

An eager stretch is a group of outermost JAX calls inside the steps, on one host thread,
each starting less than `EAGER_GAP_NS` after the previous one's end (`_breaks`: a delay
inside the update does not end it), at least `MIN_OPS` of them per step it touches; from
its first call's start to its last call's end it is the update running op by op. Its time
in each step that the step's limits give to dispatch or to "host" (not to a wait for the
computation, input, compilation: what the limits cover otherwise) is the eager overhead, at
most that step's dispatch and host time. The function that ran it is named from the stack
sampler's samples in the stretches: the caller of JAX's public API wrapper
(`JAX_API_FRAME`), when one caller holds at least half of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field

import numpy as np

from stepscope.distinct import distinct
from stepscope.event_order import start_order
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.host.python_samples import function_key, sample_points, sampled_thread_line
from stepscope.stats.intervals import intersect_sets, merge, subtract_sets
from stepscope.vocab.dispatch import JAX_API_FRAME, JAX_EXECUTE_PREFIXES, JAX_PREFIXES

# JAX's Python between two eager calls took up to 0.84 ms at load 2 (two loops, 1,680
# calls); a longer gap ends the stretch where the loop's own work sits (`_breaks`)
EAGER_GAP_NS = 2_000_000
MIN_OPS = 8  # fewer JAX calls a step is a jitted step (one call) and its helpers


def _empty() -> np.ndarray:
    return np.zeros(0, np.int64)


@record
class EagerJax:
    """Per kept step (in the limit table's order): JAX run op by op."""

    span_ns: np.ndarray = field(default_factory=_empty)  # the stretches' time, compute included
    ns: np.ndarray = field(default_factory=_empty)  # dispatch and host time in the stretches
    dispatch_ns: np.ndarray = field(default_factory=_empty)  # its part in dispatch runs
    ops: np.ndarray = field(default_factory=_empty)  # JAX calls in the stretches
    top_ops: tuple[tuple[str, int], ...] = ()  # (call name, count over the steps)
    caller: str = ""  # the function that called JAX's API there, when the sampler saw one

    def ops_per_step(self) -> float:
        return float(self.ops.mean()) if len(self.ops) else 0.0


@record
class Stretches:
    """Eager stretches: [lo, hi) per stretch and its thread line, and the JAX calls in them."""

    lo: np.ndarray
    hi: np.ndarray
    line: np.ndarray
    events: np.ndarray


def _breaks(start: np.ndarray, end: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Per gap between consecutive calls (sorted, outermost, each in step ``step``): whether
    it ends a stretch. A gap of `EAGER_GAP_NS` or more does, unless it is a delay inside the
    update: in a step of the usual number of calls, at a place in the step's call sequence
    where the gap is usually short and which is not the usual place of the longest gap (the
    loop between two updates: the batch's fetch, the wait for the result). On a loaded
    machine the thread is descheduled for 3-8 ms inside the update now and then (a loop of
    39 steps: 2 such gaps a step in some steps); the loop's own work recurs at one place."""
    gap = start[1:] - end[:-1]
    long = gap >= EAGER_GAP_NS
    if not long.any():
        return long
    first = np.searchsorted(step, step, "left")  # each call's place in its step
    place = np.arange(len(step)) - first
    calls = np.bincount(step)[step]
    usual = int(np.median(calls))
    regular = (calls == usual)[:-1]
    if usual < MIN_OPS or regular.sum() < MIN_OPS:
        return long
    where = place[:-1][regular]
    order = np.argsort(where, kind="stable")
    sorted_gap = gap[regular][order]
    bounds = np.searchsorted(where[order], np.arange(usual + 1))
    median = np.array(
        [
            float(np.median(sorted_gap[a:b])) if b > a else 0.0
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
        ]
    )
    loop_place = median >= EAGER_GAP_NS
    loop_place[int(np.argmax(median))] = True
    inside = regular & ~loop_place[np.minimum(place[:-1], usual - 1)]
    return long & ~inside


def find_stretches(
    profile: Profile, host_line: np.ndarray, s_lo: np.ndarray, s_hi: np.ndarray
) -> Stretches:
    """The eager stretches inside the steps [s_lo, s_hi) (sorted, disjoint), on the lines
    where ``host_line`` is True."""
    none = Stretches(_empty(), _empty(), _empty(), _empty())
    ids = profile.strings.ids_matching(lambda s: s.startswith(JAX_PREFIXES))
    if not len(ids) or not len(s_lo):
        return none
    is_jax = np.zeros(len(profile.strings), bool)
    is_jax[ids] = True
    candidate = np.flatnonzero(is_jax.take(profile.name) & host_line.take(profile.line))
    parts: list[tuple[np.ndarray, ...]] = []
    line_of = profile.line[candidate]
    for line in distinct(line_of).tolist():  # not np.unique: numpy.ma (decision 201)
        ev = candidate[line_of == line]
        ev = ev.take(start_order(profile.start_ns.take(ev), profile.dur_ns.take(ev)))
        start, end = profile.start_ns.take(ev), profile.end_at(ev)
        # outermost only: an eager op's jvp is a call inside the call
        reach = np.maximum.accumulate(end)
        outer = np.r_[True, start[1:] >= reach[:-1]]
        ev, start, end = ev[outer], start[outer], end[outer]
        k = np.searchsorted(s_lo, start, "right") - 1
        inside = (k >= 0) & (start < s_hi[np.maximum(k, 0)])
        ev, start, end, k = ev[inside], start[inside], end[inside], k[inside]
        if len(ev) < MIN_OPS:
            continue
        # not cut at the steps' bounds: an inferred step can begin inside the update (at
        # its loss's first op), and its first ops, alone after the batch's fetch, would be
        # too few for a stretch of their own
        new = np.r_[True, _breaks(start, end, k)]
        group = np.cumsum(new) - 1
        size = np.bincount(group)
        # at least `MIN_OPS` calls in each step it touches: a jitted step's one call, a
        # step every 0.5 ms, is no stretch however many of them follow each other
        steps = np.bincount(group, weights=np.r_[True, (k[1:] != k[:-1]) | new[1:]])
        ok = size[group] >= MIN_OPS * steps[group]
        if not ok.any():
            continue
        heads = np.flatnonzero(new & ok)
        tails = np.flatnonzero(np.r_[new[1:], True] & ok)
        parts.append((start[heads], end[tails], np.full(len(heads), line, np.int64), ev[ok]))
    if not parts:
        return none
    lo, hi, lines, events = (np.concatenate(c) for c in zip(*parts, strict=True))
    return Stretches(lo, hi, lines, events)


def _caller(profile: Profile, found: Stretches) -> str:
    """The function that called JAX's API (`JAX_API_FRAME`) on at least half of the stack
    samples taken in the stretches, on their threads; "" without one."""
    thread_of = sampled_thread_line(profile)
    lines = [ln for ln in range(len(profile.lines)) if thread_of[ln] in set(found.line.tolist())]
    if not lines:
        return ""
    sample_ev, at, _, _ = sample_points(profile, lines)
    thread = thread_of[profile.line[sample_ev]]
    hit = np.zeros(len(at), bool)
    for lo, hi, line in zip(found.lo.tolist(), found.hi.tolist(), found.line.tolist(), strict=True):
        hit |= (at >= lo) & (at < hi) & (thread == line)
    if not hit.any():
        return ""
    callers: Counter[str] = Counter()
    for sid in profile.stat_at("stack", sample_ev[hit]).string_ids().tolist():
        frames = [function_key(f) for f in profile.strings[sid].split(";")] if sid >= 0 else []
        first = next((i for i, f in enumerate(frames) if f.startswith(JAX_API_FRAME)), 0)
        if first > 0:
            callers[frames[first - 1]] += 1
    if not callers:
        return ""
    name, count = callers.most_common(1)[0]
    return name if 2 * count >= int(hit.sum()) else ""


def calls_overhead(
    profile: Profile, found: Stretches, above: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The JAX calls' own time that is not their program running: sorted, disjoint
    intervals. An eager op called with autodiff's tracers takes JAX's Python path inside
    its ``PjitFunction`` (498 µs for a matmul whose inner call and program took 78 µs); on
    a host-only profile the limits count that call as the model's compute, and the jitted
    program's time is 1-60 µs of it. So each outermost call holding a program's execution
    (`JAX_EXECUTE_PREFIXES`) is overhead but for its executions and what the limits give to
    a limit above dispatch (``above``: a wait for a computation, input, compilation); a
    call with no execution traced in it is left as the limits have it (a large op whose
    program runs inline is compute)."""
    ids = profile.strings.ids_matching(lambda s: s.startswith(JAX_EXECUTE_PREFIXES))
    if not len(ids) or not len(found.events):
        return _empty(), _empty()
    lines = np.unique(found.line)
    runs = np.flatnonzero(np.isin(profile.name, ids) & np.isin(profile.line, lines))
    if not len(runs):
        return _empty(), _empty()
    x_lo, x_hi = merge(profile.start_ns.take(runs), profile.end_at(runs))
    c_lo = profile.start_ns.take(found.events)
    c_hi = profile.end_at(found.events)
    holds = np.searchsorted(x_lo, c_lo, "left") < np.searchsorted(x_lo, c_hi, "left")
    j_lo, j_hi = merge(c_lo[holds], c_hi[holds])
    j_lo, j_hi = subtract_sets(j_lo, j_hi, x_lo, x_hi)
    return subtract_sets(j_lo, j_hi, above[0], above[1])


def eager_jax(
    profile: Profile,
    found: Stretches,
    s_lo: np.ndarray,
    s_hi: np.ndarray,
    covered: tuple[np.ndarray, np.ndarray],
    dispatch: tuple[np.ndarray, np.ndarray],
    cap_ns: np.ndarray,
) -> EagerJax:
    """The eager overhead of the stretches ``found`` in the steps [s_lo, s_hi) (sorted):
    ``covered``, the sorted disjoint intervals the limits give to anything but "host"
    (dispatch included), ``dispatch`` the dispatch limit's (sorted, disjoint: the runs and
    `calls_overhead`), ``cap_ns`` each step's dispatch and host time."""
    n = len(s_lo)
    if not len(found.lo):
        zeros = np.zeros(n, np.int64)
        return EagerJax(zeros, zeros.copy(), zeros.copy(), zeros.copy())
    st_lo, st_hi = merge(found.lo, found.hi)
    other_lo, other_hi = subtract_sets(covered[0], covered[1], dispatch[0], dispatch[1])
    e_lo, e_hi = subtract_sets(st_lo, st_hi, other_lo, other_hi)
    d_lo, d_hi = intersect_sets(st_lo, st_hi, dispatch[0], dispatch[1])

    def per_step(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        lo, hi = intersect_sets(lo, hi, s_lo, s_hi)  # stretches of touching steps merged
        k = np.searchsorted(s_lo, lo, "right") - 1
        return np.bincount(k, weights=hi - lo, minlength=n).astype(np.int64)

    span = per_step(st_lo, st_hi)
    ns = np.minimum(per_step(e_lo, e_hi), cap_ns)
    d_ns = np.minimum(per_step(d_lo, d_hi), ns)
    start = profile.start_ns.take(found.events)
    ops = np.bincount(np.searchsorted(s_lo, start, "right") - 1, minlength=n).astype(np.int64)
    uniq, counts = np.unique(profile.name.take(found.events), return_counts=True)
    names = Counter({profile.strings[int(i)]: int(c) for i, c in zip(uniq, counts, strict=True)})
    return EagerJax(span, ns, d_ns, ops, tuple(names.most_common(3)), _caller(profile, found))
