"""The "bound by" limits of each step (`limits`), measured beside the step breakdown.

The pairs (event, step) of the breakdown give every traced event its limit; the intervals the
analysis adds, all on the steps' threads and few, give input staged in the step
(`staging`), the step's thread held up while the input pipeline's Python runs
(`pipeline_python`), the model's ops slowed beside that Python (`slowed_ops`), waits for a
computation and idle waits (`waits`) and dispatch runs (`dispatch`). Every instant goes to
the highest limit active then. So that the pairs' columns are not copied (the breakdown's
peak), the added intervals are swept together with the pairs of the limits they compete with
(those at or above dispatch: device work, input, compilation, launches, usually few on the
host), and the host limits below them keep what is left, in the proportions the pairs alone
give them.
"""

from __future__ import annotations

from dataclasses import field, replace

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import host_lines
from stepscope.stats.gpu.device import fed_by_dataloader, framework_of, never_trains
from stepscope.stats.intervals import intersect_sets, merge, subtract_sets, union_of
from stepscope.stats.steps.compiled_host import CompiledHost
from stepscope.stats.steps.dispatch import DispatchEvidence, evidence, find_runs
from stepscope.stats.steps.eager import EagerJax, calls_overhead, eager_jax, find_stretches
from stepscope.stats.steps.limits import N_LIMIT_COLUMNS, LimitType
from stepscope.stats.steps.pipeline_python import held_by_pipeline_python
from stepscope.stats.steps.slowed_ops import (
    PythonBeside,
    holds_gil,
    slowed_beside_pipeline_python,
)
from stepscope.stats.steps.staged_frames import frame_label, staged_frames
from stepscope.stats.steps.staging import staged_windows
from stepscope.stats.steps.type_sweep import type_time
from stepscope.stats.steps.waits import find_waits

# the limits an eager stretch's overhead is counted in: dispatch and host (`eager`)
_EAGER_CAP = (LimitType.UNTRACED, LimitType.HOST, LimitType.DISPATCH)
_COMPUTE_HOST = int(LimitType.COMPUTE_HOST) // 10
_DISPATCH = int(LimitType.DISPATCH) // 10
# the limits below every added interval
_LOW = tuple(t for t in LimitType if LimitType.UNTRACED < t < LimitType.DISPATCH)


@record
class LimitTable:
    """Per kept step, time per limit column; the evidence behind dispatch and waits."""

    ns: np.ndarray  # (steps, N_LIMIT_COLUMNS), int64
    dispatch: DispatchEvidence
    waited_for: tuple[str, ...]  # threads of the computation the steps waited for
    framework: str = ""  # the profile's (`stats.device.framework_of`), for the advice
    # the traced Python functions building the batch in the steps (`staged_frames`): (name,
    # total ns over the kept steps), the outermost first
    staged_frames: tuple[tuple[str, int], ...] = ()
    # per step, the input limit's time held up by the pipeline's Python and by no other
    # input (`pipeline_python`)
    held_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # JAX run op by op (an update not under jax.jit): its dispatch and host time per step
    eager: EagerJax = field(default_factory=EagerJax)
    # the run is known to train (False: PyTorch ops, none of a backward pass or an optimizer,
    # `stats.device.never_trains`): its advice names no optimizer
    trains: bool = True
    # and fed by no DataLoader (`stats.device.fed_by_dataloader`): its input advice is about
    # preparing requests
    serves: bool = False
    # the trace records Python calls as events (PyTorch's with_stack=True, stepscope's Python
    # tracer): the host advice points at them rather than asking to record them (decision 544)
    python_frames: bool = False
    # per step, the input limit's time of the model's ops slowed beside the pipeline's Python
    # and in no other input (`slowed_ops`); what the trace showed of that Python
    slowed_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    python: PythonBeside = field(default_factory=PythonBeside)
    # the kinds of collective the steps' collective limit was spent in, (kind, ns) the most
    # time first (`collective_kinds`)
    collectives: tuple[tuple[str, int], ...] = ()
    # with a device, the share of the traced host limit inside compiled calls (torch.compile,
    # jax.jit, tf.function: `compiled_host`), whose fix is not "compile the step"
    compiled: CompiledHost = field(default_factory=CompiledHost)

    @classmethod
    def empty(cls) -> LimitTable:
        return cls(np.zeros((0, N_LIMIT_COLUMNS), np.int64), DispatchEvidence(), ())


def _in_steps(
    lo: np.ndarray, hi: np.ndarray, s_lo: np.ndarray, s_hi: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted disjoint intervals cut to the kept steps (sorted): (step of the table, lo, hi)."""
    c_lo, c_hi = intersect_sets(lo, hi, s_lo, s_hi)
    k = np.searchsorted(s_lo, c_lo, "right") - 1
    return keep[k].astype(np.int64), c_lo, c_hi


def _own(
    lo: np.ndarray,
    hi: np.ndarray,
    others: tuple[np.ndarray, np.ndarray],
    s_lo: np.ndarray,
    s_hi: np.ndarray,
    keep: np.ndarray,
    n: int,
) -> np.ndarray:
    """Per step of the table (``n``), the time of the sorted, disjoint intervals inside the
    kept steps (sorted) that ``others`` (sorted, disjoint) leave."""
    if not len(lo):
        return np.zeros(n, np.int64)
    lo, hi = subtract_sets(lo, hi, *others)
    k = np.searchsorted(s_lo, lo, "right") - 1
    return np.bincount(keep[k], weights=hi - lo, minlength=n).astype(np.int64)


@record
class Covered:
    """Sorted, disjoint intervals the steps' limits give to something other than "host" (the
    traced events and the added intervals): the rest of the steps is the "host" limit."""

    lo: np.ndarray  # int64
    hi: np.ndarray  # int64
    # of them, the steps' threads' untraced time given to a computation running meanwhile
    # (`waits`) and to nothing else: where the loop was in its Python iterator instead, it
    # was fetching, not waiting (`fetch_waits`)
    waited_lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    waited_hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def _has_python_frames(profile: Profile) -> bool:
    """Whether events of the profile are Python calls (names, not a stack stat's text: the
    2021 Kineto schema's call stacks end in a frame too)."""
    ids = profile.strings.ids_matching(lambda s: frame_label(s) is not None)
    return bool(ids.size) and bool(np.isin(profile.name, ids).any())


def limit_table(
    profile: Profile,
    lines: tuple[int, ...],
    counted: np.ndarray,
    st: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ltypes: np.ndarray,
    step_line_events: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    keep: np.ndarray,
    has_device: bool,
    staged: bool = True,
) -> tuple[LimitTable, Covered]:
    """The limits of the kept steps ``keep`` (sorted by start) of a step database whose
    pairs are (``st``, ``lo``, ``hi``) with limit types ``ltypes``, and what they cover;
    ``staged``: the time before a step's first model op may be its batch being built
    (`staging`; not in a serving call's step, decision 542)."""
    n = len(span_lo)
    s_lo, s_hi = span_lo[keep], span_hi[keep]
    beside = ltypes == int(LimitType.UNTRACED)  # work beside the steps: in no limit
    if beside.any():  # (copies of the pairs' columns only then)
        st, lo, hi, ltypes = st[~beside], lo[~beside], hi[~beside], ltypes[~beside]
    del beside
    added: list[tuple[np.ndarray, np.ndarray, np.ndarray, LimitType]] = []
    # input staged inside the steps
    none = np.zeros(0, np.int64)
    k, w_lo, w_hi = staged_windows(profile, lines, s_lo, s_hi) if staged else (none,) * 3
    added.append((keep[k].astype(np.int64), w_lo, w_hi, LimitType.INPUT))
    # the step's thread held up while the pipeline's Python runs
    h_lo, h_hi = held_by_pipeline_python(profile, counted, lines, s_lo, s_hi)
    added.append((*_in_steps(h_lo, h_hi, s_lo, s_hi, keep), LimitType.INPUT))
    # the model's ops slowed beside it: their slowed ends
    slowed = slowed_beside_pipeline_python(profile, counted, lines, s_lo, s_hi)
    added.append((*_in_steps(slowed.lo, slowed.hi, s_lo, s_hi, keep), LimitType.INPUT))
    # dispatch runs on every host thread, cut to the steps
    runs = find_runs(profile, host_lines(profile), has_device)
    d_lo, d_hi = runs.intervals()
    added.append((*_in_steps(d_lo, d_hi, s_lo, s_hi, keep), LimitType.DISPATCH))
    # waits of the step threads
    traced = step_line_events[counted[step_line_events]]
    t_lo, t_hi = merge(profile.start_ns[traced], profile.end_at(traced))
    waits = find_waits(profile, counted, lines, t_lo, t_hi, s_lo, s_hi, d_lo, d_hi)
    added.append(
        (*_in_steps(waits.compute_lo, waits.compute_hi, s_lo, s_hi, keep), LimitType.COMPUTE_WAITED)
    )
    added.append((*_in_steps(waits.idle_lo, waits.idle_hi, s_lo, s_hi, keep), LimitType.WAIT))
    x_st = np.concatenate([a[0] for a in added])
    x_lo = np.concatenate([a[1] for a in added]).astype(np.int64)
    x_hi = np.concatenate([a[2] for a in added]).astype(np.int64)
    x_ty = np.concatenate([np.full(len(a[0]), int(a[3]), np.int16) for a in added])
    # the pairs alone, every limit (no copy of the pairs' columns)
    alone = type_time(st, lo, hi, ltypes, n)[:, :N_LIMIT_COLUMNS]
    # the added intervals with the pairs of the limits they compete with
    high = ltypes >= int(LimitType.DISPATCH)
    swept = type_time(
        np.r_[st[high], x_st],
        np.r_[lo[high], x_lo],
        np.r_[hi[high], x_hi],
        np.r_[ltypes[high], x_ty],
        n,
    )[:, :N_LIMIT_COLUMNS]
    del high
    # what the added intervals cover that no pair does
    a_lo, a_hi = merge(x_lo, x_hi)
    p_lo, p_hi = union_of(lo, hi)
    e_lo, e_hi = subtract_sets(a_lo, a_hi, p_lo, p_hi)
    e_step = np.searchsorted(s_lo, e_lo, "right") - 1
    extra = np.bincount(keep[e_step], weights=e_hi - e_lo, minlength=n).astype(np.int64)
    out = np.zeros((n, N_LIMIT_COLUMNS), dtype=np.int64)
    high_cols = [int(t) // 10 for t in LimitType if t >= LimitType.DISPATCH]
    out[:, high_cols] = swept[:, high_cols]
    low_cols = [int(t) // 10 for t in _LOW]
    low_alone = alone[:, low_cols]
    low = alone.sum(axis=1) + extra - swept[:, high_cols].sum(axis=1)  # |all ∪ added| - |high|
    low = np.maximum(low, 0)
    share = low_alone / np.maximum(low_alone.sum(axis=1, keepdims=True), 1)
    split = np.round(share * low[:, None]).astype(np.int64)
    split[:, 0] = low - split[:, 1:].sum(axis=1)  # rounding: the sum stays exact
    out[:, low_cols] = split
    out[:, 0] = (span_hi - span_lo) - out[:, 1:].sum(axis=1)
    c_lo, c_hi = union_of(np.r_[p_lo, a_lo], np.r_[p_hi, a_hi])
    # of it, the time a wait for a computation gives to compute: no other added interval
    # nor a pair of a higher limit covers it (the computation's own pairs, on its threads,
    # are of a lower one)
    y_lo, y_hi = intersect_sets(waits.compute_lo, waits.compute_hi, s_lo, s_hi)
    if len(y_lo):
        other = x_ty != int(LimitType.COMPUTE_WAITED)
        higher = ltypes > int(LimitType.COMPUTE_WAITED)
        y_lo, y_hi = subtract_sets(
            y_lo,
            y_hi,
            *union_of(np.r_[lo[higher], x_lo[other]], np.r_[hi[higher], x_hi[other]]),
        )
    is_input = ltypes == int(LimitType.INPUT)
    i_lo, i_hi = merge(np.r_[lo[is_input], w_lo, h_lo], np.r_[hi[is_input], w_hi, h_hi])
    # of the held time, what no other input and no higher limit takes (the sweep's order);
    # of the slowed ops' time, what none of these nor the held time takes
    over = ltypes >= int(LimitType.INPUT)
    others = union_of(np.r_[lo[over], w_lo], np.r_[hi[over], w_hi])
    held = _own(h_lo, h_hi, others, s_lo, s_hi, keep, n)
    others = union_of(np.r_[others[0], h_lo], np.r_[others[1], h_hi])
    slowed_ns = _own(*intersect_sets(slowed.lo, slowed.hi, s_lo, s_hi), others, s_lo, s_hi, keep, n)
    del over, others
    kept = out[keep]
    # JAX run op by op: its calls' own time beside their programs is dispatch, not compute
    found = find_stretches(profile, host_lines(profile), s_lo, s_hi)
    m_lo = m_hi = np.zeros(0, np.int64)
    if len(found.lo):  # (the pairs above dispatch: only then)
        above = ltypes > int(LimitType.DISPATCH)
        x_above = x_ty > int(LimitType.DISPATCH)
        m_lo, m_hi = calls_overhead(
            profile,
            found,
            union_of(np.r_[lo[above], x_lo[x_above]], np.r_[hi[above], x_hi[x_above]]),
        )
        del above
        m_lo, m_hi = subtract_sets(m_lo, m_hi, d_lo, d_hi)
    if len(m_lo):
        k, m_lo, m_hi = _in_steps(m_lo, m_hi, s_lo, s_hi, np.arange(len(s_lo)))
        moved = np.bincount(k, weights=m_hi - m_lo, minlength=len(s_lo)).astype(np.int64)
        moved = np.minimum(moved, kept[:, _COMPUTE_HOST])
        kept[:, _COMPUTE_HOST] -= moved
        kept[:, _DISPATCH] += moved
        d_lo, d_hi = union_of(np.r_[d_lo, m_lo], np.r_[d_hi, m_hi])
    # the eager overhead is dispatch and host time: at most the step's
    cap = kept[:, [int(t) // 10 for t in _EAGER_CAP]].sum(axis=1)
    trains = not never_trains(profile)
    table = LimitTable(
        kept,
        evidence(profile, runs, s_lo, s_hi, i_lo, i_hi),
        waits.computation,
        framework_of(profile),
        staged_frames(profile, lines, *merge(w_lo, w_hi)),
        held[keep],
        eager_jax(profile, found, s_lo, s_hi, (c_lo, c_hi), (d_lo, d_hi), cap),
        trains,
        not trains and not fed_by_dataloader(profile),
        _has_python_frames(profile),
        slowed_ns[keep],
        replace(slowed.beside, holds_gil=holds_gil(profile, lines)),
    )
    return table, Covered(c_lo, c_hi, y_lo, y_hi)
