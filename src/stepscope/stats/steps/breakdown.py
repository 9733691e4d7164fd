"""The step database: each step's span and where its time went (XProf's step
events: ``xprof/convert/xplane_to_step_events.cc``, ``xprof/utils/event_span.h``).

1. Attribution: every counted event is paired with the step(s) it works for. With markers,
   an event reached from a step's marker (`stepscope.stats.steps.groups`) belongs to that step;
   events of threads that no root reaches at all, ungrouped device events, and all events of
   inferred or device-line steps belong to the steps whose window they overlap (device events
   by the time of their launch, so a kernel that runs late still counts for the step that
   queued it).
   An input wait left in the gap before a step on its thread feeds that step
   (`stepscope.stats.steps.feeds`).
2. Span: the marker's span (from the fetch that feeds it, if any), or the span of the step's
   device events when the marker does not include it (XProf's rule for asynchronous
   devices); when a device runs behind, a step starts no earlier than the previous one ended,
   so steps never count time twice.
3. Breakdown: pairs are clipped to the span; for each present event type t, from the highest
   priority down, the union length of the intervals of types >= t is measured per step (a
   vectorized merge of sorted intervals); the type's time is the growth of that union, so
   every instant goes to the highest-priority type active then, and uncovered time is UNKNOWN.
4. Selection: a step without compute (device compute when the profile has a device, else host
   compute) is not a step, unless no step has any (then every marker is a step: the user
   marked them); marker steps then follow XProf's drop rule (more than 5 steps:
   drop the first and the last).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, replace

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import (
    CATEGORIES,
    NOT_COUNTED,
    EventType,
    classify_events,
    device_work_lines,
)
from stepscope.stats.gpu.device import framework_of
from stepscope.stats.host.python_samples import functions_in_steps
from stepscope.stats.host.untraced import Untraced, locate_untraced
from stepscope.stats.steps.accumulation import accumulation_note
from stepscope.stats.steps.collective_kinds import kinds_in_steps, pair_kinds
from stepscope.stats.steps.compiled_host import compiled_host, compiled_time
from stepscope.stats.steps.device_spans import launch_times, stretched_spans
from stepscope.stats.steps.executions import batches_note
from stepscope.stats.steps.feeds import fetches_feeding_steps
from stepscope.stats.steps.fetch import Fetched
from stepscope.stats.steps.fetch_bounds import fetch_first, staged_fetches
from stepscope.stats.steps.fetch_waits import fetch_to_input, fetches_beside_compute
from stepscope.stats.steps.groups import build_groups
from stepscope.stats.steps.limit_table import LimitTable, limit_table
from stepscope.stats.steps.limits import LIMIT_NAMES, LimitType, limit_types, limits_ns
from stepscope.stats.steps.markers import began_mid_run, find_step_markers
from stepscope.stats.steps.pass_cut import before_cut, pass_cuts
from stepscope.stats.steps.recorded import recorded_span_ns
from stepscope.stats.steps.run_ahead import run_ahead
from stepscope.stats.steps.sweep import held_spans, until_last_boundary
from stepscope.stats.steps.traced_fetch import traced_fetch_first
from stepscope.stats.steps.type_sweep import N_TYPES, type_time
from stepscope.stats.steps.types import DROP_THRESHOLD, StepMarkers, drop_note, with_note
from stepscope.stats.steps.warm import warmup_count

_CHUNK = 1 << 20  # pairs per slice where a column is gathered by slices
_DEVICE_COMPUTE = (EventType.DEVICE_COMPUTE_16, EventType.DEVICE_COMPUTE_32)


@record
class StepDb:
    """Steps of one host with their breakdown; all times int64 nanoseconds."""

    source: str
    description: str
    attribution: str  # "group" (reachability from markers) or "window" (time overlap)
    has_device: bool
    step_num: np.ndarray
    names: tuple[str, ...]
    start_ns: np.ndarray
    dur_ns: np.ndarray
    type_ns: np.ndarray  # (steps, N_TYPES): time per EventType, column t // 10
    markers_found: int  # candidate steps before selection
    dropped_ill_formed: int  # candidates without compute
    dropped_incomplete: int  # first/last dropped by the XProf rule
    # where the kept steps' "All Others" sits on their thread, and (with the stack sampler's
    # lines) which Python functions ran then
    untraced: Untraced = field(default_factory=lambda: Untraced(""))
    event: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # step markers
    # input staged inside each step beyond its input category: building the batch and copying
    # it to the device before the step's compute (`stepscope.stats.steps.staging`)
    staged_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # what bounds each step: its time per "bound by" limit column, with the evidence behind
    # dispatch and waits (`stepscope.stats.steps.limits`); beside XProf's categories
    limits: LimitTable = field(default_factory=LimitTable.empty)
    # the loop getting its batch from a Python iterator (the stack sampler's evidence,
    # `stepscope.stats.steps.fetch`): per kept step the time counted as input in the limits
    fetched: Fetched = field(default_factory=Fetched)
    # the profile's span, first event's start to last one's end (a one-step profile's
    # description says how much of it the step is, `summary.one_step_note`)
    profile_ns: int = 0
    # the recording began mid-run (a flight recorder save of a running loop: `began_mid_run`):
    # its first steps are no program's warm-up (`stepscope.stats.warmup.warmup_count`)
    mid_run: bool = False
    # the lines of the steps' thread(s) (their markers', or the inferred steps' leads'): the
    # straggler's run-ups count input there as the limits do (`stats.runup_pipeline`)
    lines: tuple[int, ...] = ()
    # (first, last): the steps XProf's rule drops that stepscope keeps, whole as the capture
    # says (decision 671): XProf's own figures (its ALL_HOSTS step time) leave them out
    xprof_trim: tuple[int, int] = (0, 0)
    # per step, the window [lo, hi) whose launches are its device work (its marker's, to a
    # pass's cut): where the diagnostics and the collective calls place device events
    # (`device_spans.launch_times`), as the breakdown did; a step's span may run later
    launch_lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    launch_hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def n_steps(self) -> int:
        return len(self.dur_ns)

    def limit_ns(self) -> dict[str, np.ndarray]:
        """Per "bound by" limit, the time of each step."""
        if len(self.limits.ns) != self.n_steps:  # a database stored without limits
            return {name: np.zeros(self.n_steps, np.int64) for name in LIMIT_NAMES}
        return limits_ns(self.limits.ns)

    def type_time(self, event_type: EventType) -> np.ndarray:
        return self.type_ns[:, int(event_type) // 10]

    def category_ns(self) -> dict[str, np.ndarray]:
        """Per overview category, the time of each step."""
        return {
            name: sum((self.type_time(t) for t in types), np.zeros(self.n_steps, np.int64))
            for name, types in CATEGORIES.items()
        }


def _window_pairs(
    profile: Profile,
    free: np.ndarray,
    win_start: np.ndarray,
    win_end: np.ndarray,
    head: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(event, step) pairs, events int64 and steps int32: the pairs ``head`` first, then every
    event of the mask ``free`` with each window it overlaps (windows sorted by start, window k
    the step k)."""
    reach = np.maximum.accumulate(win_end)  # sorted even if windows overlap
    head_ev, head_st = head
    events = np.flatnonzero(free)
    lo = np.searchsorted(reach, profile.start_ns[events], "right")
    hi = np.searchsorted(win_start, profile.end_at(events), "left")
    counts = hi - lo
    np.maximum(counts, 0, out=counts)
    if counts.max(initial=0) <= 1:  # no event spans two steps
        one = counts == 1
        events, windows = events[one], lo[one]
    else:
        first = np.cumsum(counts) - counts
        windows = np.repeat(lo - first, counts) + np.arange(int(counts.sum()))
        events = np.repeat(events, counts)
    steps = windows.astype(np.int32)
    return _joined([head_ev, events], np.int64), _joined([head_st, steps], np.int32)


def _point_pairs(
    events: np.ndarray, when: np.ndarray, win_start: np.ndarray, win_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(event, step) for the window containing each event's time ``when``."""
    k = np.searchsorted(win_start, when, "right") - 1
    ok = k >= 0
    ok[ok] = when[ok] < win_end[k[ok]]
    return events[ok], k[ok]


def _attribute(
    profile: Profile,
    markers: StepMarkers,
    types: np.ndarray,
    on_device: np.ndarray,
    work: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(event, step) pairs, the type each pair counts as, and the attribution mode.
    ``work``: the profile's device work (`launch_times`)."""
    counted = types != NOT_COUNTED
    free = counted.copy()  # events left to attribute by time
    mode = "window"
    ev_grouped = st_grouped = np.zeros(0, np.int64)
    if markers.use_groups:
        marker_events = markers.event
        groups = build_groups(profile, marker_events)
        # step numbers in int32 (4 B/pair): a step count fits
        step_of_group = np.full(len(groups.root) + 1, -1, dtype=np.int32)
        label = groups.label
        del groups
        # markers sharing a group: the longest marker's step takes the group
        by_length = np.argsort(markers.end_ns - markers.start_ns, kind="stable")
        step_of_group[label[marker_events[by_length]]] = by_length
        grouped = label >= 0
        # Collectives count in the step whose time they take, grouped or not: TensorFlow
        # links a collective op to an earlier step's group now and then (issue #26).
        grouped &= types != EventType.HOST_COLLECTIVE
        # the grouped events' steps directly (no step per event over every event)
        ev_grouped = np.flatnonzero(counted & grouped)
        st_grouped = step_of_group[label[ev_grouped]]
        del label
        with_step = st_grouped >= 0
        if not with_step.all():
            ev_grouped, st_grouped = ev_grouped[with_step], st_grouped[with_step]
        # TensorFlow and JAX profiles (a TSL profiler's, which XProf reads) link the work done
        # for a step to it, so every host thread follows the grouping strictly, as in XProf
        # (a JAX input thread's sleeps are no step's compute). Elsewhere (PyTorch imports,
        # stepscope's own captures) threads that no step reaches (an autograd or a loader
        # thread) count by time window, unless they declare links of their own.
        strict = framework_of(profile) in ("tensorflow", "jax")
        linked = np.zeros(len(profile.lines), dtype=bool)
        linked[profile.line[grouped]] = True
        for stat in ("_p", "_c"):
            linked[profile.line[profile.stat_events(stat)]] = True
        # Collectives count by time window (above); a new array: `on_device` is the caller's.
        loose = on_device | (types == EventType.HOST_COLLECTIVE)
        if not strict:
            loose |= ~linked[profile.line]
        free &= ~grouped & loose
        del grouped, loose
        mode = "group"
    # the markers come in start order (StepMarkers): step k is window k
    win_start, win_end = markers.start_ns, markers.end_ns
    head = ev_grouped, st_grouped
    events, steps = _window_pairs(profile, free & ~on_device, win_start, win_end, head)
    n_grouped = len(ev_grouped)
    del head, ev_grouped, st_grouped
    device_free = np.flatnonzero(free & on_device)
    del free
    when = launch_times(profile, device_free, work)
    ev, st = _point_pairs(device_free, when, win_start, win_end)
    del when
    if len(ev):
        events = np.concatenate([events, ev])
        steps = np.concatenate([steps, st.astype(np.int32)])
    del ev, st
    pair_types = types[events]  # a copy in the types' own small integers
    # When the thread running the steps shows its own input waits, input waits on other
    # threads counted by time (producers of a Python input pipeline, say) are input work,
    # not the step waiting. (Without such waits, as in Keras where a separate thread runs
    # IteratorGetNext for the step, they are the best evidence of waiting and stay.)
    step_lines = np.zeros(len(profile.lines), dtype=bool)
    step_lines[list(markers.lines)] = True
    waiting = pair_types == EventType.HOST_WAIT_INPUT
    on_step_line = step_lines.take(profile.line.take(events))
    if (waiting & on_step_line).any():
        by_window = np.zeros(len(events), dtype=bool)
        by_window[n_grouped:] = True
        pair_types[by_window & ~on_step_line & waiting] = EventType.HOST_COMPUTE
    return events, steps, pair_types, mode


def _joined(parts: list[np.ndarray], dtype: type[np.signedinteger]) -> np.ndarray:
    """``np.concatenate(parts)`` as ``dtype``, without the copy when only one part has rows
    (the usual case: every pair grouped, or every pair by window)."""
    full = [p for p in parts if len(p)]
    if len(full) == 1 and full[0].dtype == dtype:
        return full[0]
    return np.concatenate(parts).astype(dtype, copy=False)


def _as_xprof(types: np.ndarray) -> np.ndarray:
    """The types with stepscope's own host types (`EventType.HOST_ENCLOSING`,
    `EventType.HOST_COLLECTIVE`) as XProf's host compute."""
    mine = (types == EventType.HOST_ENCLOSING) | (types == EventType.HOST_COLLECTIVE)
    if not mine.any():
        return types
    out = types.copy()
    out[mine] = EventType.HOST_COMPUTE
    return out


def _held(
    profile: Profile,
    ev: np.ndarray,
    st: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    pair_types: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The spans where a zero-length event holds its type current (`sweep`), clipped to
    the steps. Only zero-length events inside their step's span hold a type: XProf sweeps a
    step's events within its span, so an instant grouped with the step but outside it (a
    thread pool's `ThreadpoolListener::StartRegion` tens of ms earlier, on TensorFlow) does
    not (it made every step of a 48-step TF profile 0.07-0.13 ms more host compute than
    XProf's)."""
    zero = _zero_length(profile, ev)
    if zero.any():
        at, step = profile.start_ns[ev[zero]], st[zero]
        outside = np.flatnonzero(zero)[(at < span_lo[step]) | (at > span_hi[step])]
        zero[outside] = False
        del at, step, outside
    if not zero.any():
        none = np.zeros(0, np.int64)
        return none, none, none, none
    # The sweep sees XProf's types: to XProf a collective (and a frame holding one) is host
    # compute, so a 0 ns host event during a collective holds nothing there either.
    h_st, h_lo, h_hi, h_types = held_spans(  # the sweep's keys need int64 steps
        st[~zero].astype(np.int64),
        lo[~zero],
        hi[~zero],
        _as_xprof(pair_types[~zero]),
        st[zero].astype(np.int64),
        profile.start_ns[ev[zero]],
        _as_xprof(pair_types[zero]),
    )
    h_hi = until_last_boundary(h_st, h_hi, st, hi)  # XProf holds to no later (decision 740)
    return h_st, np.maximum(h_lo, span_lo[h_st]), np.minimum(h_hi, span_hi[h_st]), h_types


def _zero_length(profile: Profile, ev: np.ndarray, chunk: int = _CHUNK) -> np.ndarray:
    """``dur_ns[ev] == 0`` by chunks: no gathered 8 B/pair durations at the step's peak."""
    out = np.empty(len(ev), dtype=bool)
    for k in range(0, len(ev), chunk):
        np.equal(profile.dur_ns[ev[k : k + chunk]], 0, out=out[k : k + chunk])
    return out


def _clipped(
    clip: np.ufunc,
    times_of: Callable[[np.ndarray], np.ndarray],
    ev: np.ndarray,
    bound: np.ndarray,
    st: np.ndarray,
    chunk: int = _CHUNK,
) -> np.ndarray:
    """``clip(times_of(ev), bound[st])`` by chunks: the pairs' times clipped to their steps
    without two gathered 8 B/pair temporaries beside the result."""
    out = np.empty(len(ev), dtype=np.int64)
    for k in range(0, len(ev), chunk):
        clip(times_of(ev[k : k + chunk]), bound.take(st[k : k + chunk]), out=out[k : k + chunk])
    return out


def _events_on_lines(
    profile: Profile, ev: np.ndarray, lines: tuple[int, ...], chunk: int = _CHUNK
) -> np.ndarray:
    """The distinct events of ``ev`` on ``lines``, ascending: a mark per event (no sort),
    the events' lines read by chunks (no 4 B/pair line and 1 B/pair mask beside the pairs)."""
    on_line = np.zeros(len(profile.lines), dtype=bool)
    on_line[list(lines)] = True
    seen = np.zeros(profile.n_events, dtype=bool)
    for k in range(0, len(ev), chunk):
        part = ev[k : k + chunk]
        seen[part[on_line.take(profile.line.take(part))]] = True
    return np.flatnonzero(seen)


def build_step_db(profile: Profile, source: str = "auto") -> StepDb:
    """Detect steps (`find_step_markers`) and break each one down."""
    db = replace(_step_db(profile, source), mid_run=began_mid_run(profile))
    db = _said_run_ahead(profile, db)
    batches = batches_note(profile, db.start_ns, db.dur_ns)  # steps_per_execution (dec. 816)
    return replace(db, description=with_note(db.description, batches)) if batches else db


def _said_run_ahead(profile: Profile, db: StepDb) -> StepDb:
    """``db`` with its description saying when the loop runs ahead of its computation
    (decision 640): its steps' times are then their dispatch, not what a step costs."""
    warm = warmup_count(db.dur_ns, mid_run=db.mid_run)
    found = run_ahead(profile, db.start_ns, db.dur_ns, warm, db.has_device)
    if found is None:
        return db
    return replace(db, description=with_note(db.description, found.note()))


def _step_db(profile: Profile, source: str) -> StepDb:
    markers = find_step_markers(profile, source)
    types = classify_events(profile)
    on_device = device_work_lines(profile)[profile.line]
    has_device = bool((on_device & (types != NOT_COUNTED)).any())
    n = len(markers)
    empty = np.zeros(0, dtype=np.int64)
    if n == 0:
        return StepDb(
            markers.source,
            markers.description,
            "none",
            has_device,
            empty,
            (),
            empty,
            empty,
            np.zeros((0, N_TYPES), np.int64),
            0,
            0,
            0,
        )
    db, keep, span_lo, span_hi = _breakdown(profile, markers, types, on_device, has_device)
    # a loop over a Python generator: its steps begin at their batch's fetch (decision 506)
    moved = fetch_first(profile, markers, keep, span_lo, span_hi, db.fetched)
    final, staged = markers, None
    if moved is not None:
        final, staged = moved[0], (db.fetched, moved[1])
    else:
        # a loop over tf.data: its steps begin at their batch's traced fetch (decision 641)
        fed = traced_fetch_first(profile, markers, types, keep, span_lo, span_hi)
        final = fed if fed is not None else markers
    if final is not markers:
        db, keep, span_lo, span_hi = _breakdown(
            profile, final, types, on_device, has_device, staged
        )
    # another DataLoader's pass at a step's end ends the step (decision 1034)
    cuts = pass_cuts(profile, final.lines, db.step_num, span_lo, span_hi)
    if cuts is None:
        return db
    cut = np.full(len(final), np.iinfo(np.int64).max, np.int64)
    cut[keep] = cuts.cut_ns
    final = replace(final, description=with_note(final.description, cuts.note))
    return _breakdown(profile, final, types, on_device, has_device, staged, cut)[0]


def _breakdown(
    profile: Profile,
    markers: StepMarkers,
    types: np.ndarray,
    on_device: np.ndarray,
    has_device: bool,
    staged_fetch: tuple[Fetched, np.ndarray] | None = None,
    cut: np.ndarray | None = None,
) -> tuple[StepDb, np.ndarray, np.ndarray, np.ndarray]:
    """The steps ``markers`` broken down, with the rows kept and their spans.
    ``staged_fetch``: the loop's fetch found on the steps before their bounds moved to it,
    and per marker its time now before the step's lead, counted as staged input (`fetch_bounds`).
    ``cut``: per marker, where another loader's pass ends it (`pass_cut`)."""
    n = len(markers)
    work = np.flatnonzero(on_device & (types != NOT_COUNTED))
    ev, st, pair_types, mode = _attribute(profile, markers, types, on_device, work)
    fed_ev, fed_st = fetches_feeding_steps(profile, markers, types, ev)
    if fed_ev.size:
        ev, st = np.concatenate([ev, fed_ev]), np.concatenate([st, fed_st])
        pair_types = np.concatenate([pair_types, types[fed_ev]])
    span_lo, span_hi = markers.start_ns.copy(), markers.end_ns.copy()
    if cut is not None:  # the pass's work is in no step (feeding none: found before)
        own = before_cut(profile, ev, st, on_device, cut, lambda p, e: launch_times(p, e, work))
        ev, st, pair_types = ev[own], st[own], pair_types[own]
        np.minimum(span_hi, cut, out=span_hi)
    st = st.astype(np.int32, copy=False)  # after a fetch's int64 steps joined
    # spans: the marker, stretched over its device work where that runs outside it
    np.minimum.at(span_lo, fed_st, profile.start_ns[fed_ev])  # a fetch before it opened
    span_lo, span_hi = stretched_spans(profile, span_lo, span_hi, ev, st, on_device, types)
    lo = _clipped(np.maximum, profile.start_ns.take, ev, span_lo, st)
    hi = _clipped(np.minimum, profile.end_at, ev, span_hi, st)
    # the breakdown's sort is the peak of a cold analysis: the end times are summed again
    # when next read (20M events: 153 MB less at the peak, one 0.05 s sum after it)
    profile.release_end_ns()
    h_st, h_lo, h_hi, h_types = _held(profile, ev, st, lo, hi, pair_types, span_lo, span_hi)
    # only the step threads' events name untraced gaps (below): found now, so that the pairs'
    # events are freed before the breakdown's sort (an 8 B/pair array less at its peak)
    step_line_events = _events_on_lines(profile, ev, markers.lines)
    # the limits' (2 B/pair)
    ltypes = limit_types(profile, ev, pair_types, has_device, markers.lines)
    kinds = pair_kinds(profile, ev, st, lo, hi, ltypes)
    compiled = compiled_time(profile, ev, lo, hi, ltypes, has_device)
    del ev
    if len(h_st):
        table = type_time(
            np.r_[st, h_st], np.r_[lo, h_lo], np.r_[hi, h_hi], np.r_[pair_types, h_types], n
        )
    else:  # no copies of the columns (four 8 B/pair arrays) when nothing is held
        table = type_time(st, lo, hi, pair_types, n)
    dur = span_hi - span_lo
    table[:, 0] = dur - table[:, 1:].sum(axis=1)
    # selection
    need = list(_DEVICE_COMPUTE) if has_device else [EventType.HOST_COMPUTE]
    has_compute = np.zeros(n, dtype=bool)
    for k in range(0, len(st), _CHUNK):  # by chunks: np.isin's temporaries are 8 B/pair
        has_compute[st[k : k + _CHUNK][np.isin(pair_types[k : k + _CHUNK], need)]] = True
    if not has_compute.any():
        # No step holds traced work (a loop of untraced Python inside `stepscope.step`,
        # captured before stepscope wrote step anchors): XProf finds no step, but a marker
        # the user wrote is a step; its time is "All Others".
        has_compute[:] = True
    # in start order: the spans start in the markers' order (a fetch moves a start no earlier
    # than the previous step's end, and so does the sequential rule above)
    keep = np.flatnonzero(has_compute & (dur > 0))
    ill_formed = n - len(keep)
    dropped = 0
    rule = markers.drop_incomplete and len(keep) > DROP_THRESHOLD
    if rule:  # XProf's rule, less the ends the capture says are whole
        head, tail = int(not markers.first_whole), int(not markers.last_whole)
        keep, dropped = keep[head : len(keep) - tail], head + tail
    limits, covered = limit_table(
        profile,
        markers.lines,
        types != NOT_COUNTED,
        st,
        lo,
        hi,
        ltypes,
        step_line_events,
        span_lo,
        span_hi,
        keep,
        has_device,
        # a serving call's step is handed its batch: what the framework does before the model
        # (vLLM's _prepare_inputs, generate()'s set-up) is its own host work, not input
        staged=markers.staged,
    )
    host_ns = limits.ns[:, int(LimitType.HOST) // 10]
    compiled_share = compiled_host(compiled, span_lo[keep], span_hi[keep], host_ns)
    limits = replace(limits, collectives=kinds_in_steps(kinds, keep), compiled=compiled_share)
    # the loop getting its batch from a Python iterator, seen by the sampler in untraced time:
    # that share of each step's untraced time is input, not host (decision 343)
    untraced_fetch = None
    # the kept steps' threads, events, spans and what the limits cover, which the fetch and
    # the host time are both found against
    in_kept = (
        profile,
        markers.lines,
        step_line_events,
        span_lo[keep],
        span_hi[keep],
        covered.lo,
        covered.hi,
    )
    waited = np.zeros(len(keep), np.int64)
    if staged_fetch is None:
        # also where the steps' thread seemed to wait for XLA's work (decision 725)
        fetched, waited = fetches_beside_compute(*in_kept[:5], covered, types != NOT_COUNTED)
    else:
        # the fetch now begins each step: before its first model op, staged input in the
        # limits already (PyTorch, JAX), named as the iterator's; else (TensorFlow's steps
        # stage nothing) untraced, moved from "host" below
        fetched, untraced_fetch = staged_fetches(
            *staged_fetch, keep, span_lo[keep], covered.lo, covered.hi
        )
    # The "host" limit located: the time no traced event covers and no added interval
    # (staged input, a wait for a computation, a dispatch run) explains. Not XProf's "All
    # Others": there a zero-length event on a pool thread keeps its type current until the
    # step's next event (`_held`), and a 4 ms Python generator between two jitted calls
    # counted as host compute in 22 of 39 steps, so the headline's place for its 5.5 ms
    # per step of host time said "1.58 ms per step in 14 of 39 steps". Nor the fetch just
    # counted as input: its place said 9.24 ms per step of 1.70 (decision 482).
    python = functions_in_steps(profile, markers.lines, span_lo[keep], span_hi[keep])
    fetch_gaps = (fetched.gap_lo, fetched.gap_hi, fetched.gap_ns)
    tf = framework_of(profile) == "tensorflow"  # its own IteratorGetNextOp names its fetch
    untraced = locate_untraced(*in_kept, python, fetch_gaps, name_stages=not tf)
    moved = fetched.ns
    to_input = moved if untraced_fetch is None else untraced_fetch
    if to_input.any():
        to_input = fetch_to_input(limits.ns, to_input, waited)
    if untraced_fetch is None:
        moved = to_input
    # input staged in the steps beyond XProf's input category and the iterator's fetch
    input_cols = [int(t) // 10 for t in CATEGORIES["input"]]
    staged = limits.ns[:, int(LimitType.INPUT) // 10] - table[keep][:, input_cols].sum(axis=1)
    # nor the step's thread held up by the pipeline's Python (`LimitTable.held_ns`), nor
    # the model's ops slowed beside it (`LimitTable.slowed_ns`)
    staged = np.maximum(staged - moved - limits.held_ns - limits.slowed_ns, 0)
    description = markers.description
    if rule:
        description += drop_note(markers.first_whole, markers.last_whole)
    accumulated = accumulation_note(profile, span_lo[keep], dur[keep])
    if accumulated:  # of the steps kept
        description += f"; {accumulated}"
    # the profile's span without its cached end column (`Profile.time_span_ns` makes one),
    # to where the recording stopped (decision 1075)
    span_ns = recorded_span_ns(profile)
    db = StepDb(
        markers.source,
        description,
        mode,
        has_device,
        markers.step_num[keep],
        tuple(markers.names[k] for k in keep.tolist()),
        span_lo[keep],
        dur[keep],
        table[keep],
        n,
        ill_formed,
        dropped,
        untraced,
        markers.event[keep],
        staged,
        limits,
        fetched,
        span_ns,
        lines=tuple(markers.lines),
        xprof_trim=(int(rule and markers.first_whole), int(rule and markers.last_whole)),
        launch_lo=markers.start_ns[keep],
        launch_hi=(markers.end_ns if cut is None else np.minimum(markers.end_ns, cut))[keep],
    )
    return db, keep, span_lo[keep], span_hi[keep]
