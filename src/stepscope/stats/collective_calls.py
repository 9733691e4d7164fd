"""One rank's collective calls: when it arrived at each, when it left, and what it did before.

The per-host half of the straggler analysis (`stepscope.stats.stragglers` matches the calls
across ranks). A rank's **calls** are the events that run its collectives, one layer of them:

- device collective kernels (NCCL / RCCL) when the host has any, on the device plane with the
  most of them (one device per rank); their step is the step whose marker holds their launch;
- else the host spans that run a collective (gloo's worker thread ``gloo:all_reduce``, MPI,
  XLA collectives on CPU, TensorFlow's collective ops);
- else the spans that only dispatch one (``c10d::allreduce_``, ``record_param_comms``...).

A call's **arrival** is its event's start (the rank is ready and waits inside until every rank
is), its **exit** the event's end (all ranks leave together). Its **run-up** is what the rank
did from its previous exit or arrival, whichever is later (for the first call of the profile,
its step's start) until this arrival, as time per step-breakdown category: input,
host compute, device compute, "All Others" (untraced)... Each instant goes to the highest
type active then, as in the step breakdown (`stepscope.stats.steps.breakdown.type_time`).

Calls are identified across ranks by the collective's sequence number in its process group
where the trace records it (Kineto's ``Seq``), else by their step, their lane (kind and group)
and their position in the step among the lane's calls.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import (
    CATEGORIES,
    CATEGORY_NAMES,
    NOT_COUNTED,
    EventType,
    classify_events,
    device_work_lines,
)
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.intervals import overlap_with
from stepscope.stats.runup_pipeline import pipeline_input
from stepscope.stats.runup_python import RunupPython, runup_python, steps_thread_cpu
from stepscope.stats.steps.breakdown import StepDb, type_time
from stepscope.stats.steps.device_spans import launch_times, window_of
from stepscope.vocab import collectives as vocab
from stepscope.vocab.profiler import CLOCK_STAT

MAX_RUNUP_PAIRS = 50_000_000  # (event, segment) pairs: beyond, run-ups are not measured


@record
class CollectiveCalls:
    """One host's collective calls, in arrival order; times on the host's own clock (ns)."""

    layer: str  # "device kernels", "host collectives", "dispatch ops" or "" (none)
    lanes: tuple[str, ...]  # "<kind>" or "<kind> <group>"
    lane: np.ndarray  # int32 index into lanes
    seq: np.ndarray  # int64 sequence number in its group, -1 when not recorded
    step: np.ndarray  # int64 row of the StepDb step the call belongs to, -1 outside steps
    ordinal: np.ndarray  # int64 position among its step's calls of its lane
    arrive_ns: np.ndarray  # int64
    exit_ns: np.ndarray  # int64
    runup_ns: np.ndarray  # (calls, len(CATEGORY_NAMES)) int64: time per category before it
    runup_measured: bool = True  # False when the run-ups were too large to measure
    python: RunupPython = field(default_factory=RunupPython)
    # (calls, len(CATEGORY_NAMES)) int64: traced events starting in each run-up, per category
    # (the same work on every rank has as many: decision 602); no rows when not counted
    runup_ops: np.ndarray = field(
        default_factory=lambda: np.zeros((0, len(CATEGORY_NAMES)), np.int64)
    )
    # the steps' thread's time on a CPU and runnable, as the stack sampler read it (none
    # without its readings): the same work slower told from the thread off its core, and a
    # rank stopped inside a collective named (`stragglers_cpu`)
    cpu: ThreadCpu = field(default_factory=ThreadCpu)
    # (calls,) int64: of each run-up, the input its own limits see in the tf.data pipeline's
    # Python (`runup_pipeline`, counted as input in ``runup_ns``): said as the reason's words
    runup_pipeline_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # the clock the times count on (`vocab.profiler.CLOCK_STAT`: its machine and boot), ""
    # when the capture did not say, and that clock's reading at the profile's time zero (its
    # ``profile_start_time``): ranks naming one clock share it (decision 940)
    clock: str = ""
    origin_ns: int = 0

    @property
    def n_calls(self) -> int:
        return len(self.arrive_ns)


def no_calls(layer: str = "") -> CollectiveCalls:
    z = np.zeros(0, np.int64)
    return CollectiveCalls(
        layer, (), z.astype(np.int32), z, z, z, z, z, np.zeros((0, len(CATEGORY_NAMES)), np.int64)
    )


def _call_events(profile: Profile, types: np.ndarray) -> tuple[str, np.ndarray]:
    device = np.flatnonzero(types == EventType.DEVICE_COLLECTIVES)
    if len(device):
        planes = profile.plane[device]
        counts = np.bincount(planes)
        device = device[planes == int(np.argmax(counts))]
        return "device kernels", device
    host = np.flatnonzero(types == EventType.HOST_COLLECTIVE)
    host = host[profile.dur_ns[host] > 0]
    names = profile.strings.strings
    ids = distinct(profile.name[host])
    # events named as collectives: work nested in one (TensorFlow's ring `Loop`) is typed as
    # the collective's but is no call of its own
    named = ids[[vocab.is_host_collective(names[i]) for i in ids.tolist()]]
    host = host[np.isin(profile.name[host], named)]
    if not len(host):
        return "", host
    ids = distinct(profile.name[host])
    dispatch_ids = ids[[vocab.is_dispatch(names[i]) for i in ids.tolist()]]
    dispatch = np.isin(profile.name[host], dispatch_ids)
    if (~dispatch).any():
        return "host collectives", host[~dispatch]
    return "dispatch ops", host


def _first_stat(profile: Profile, names: tuple[str, ...], events: np.ndarray) -> np.ndarray:
    """Per event, the first of the stats ``names`` it has, as string ids (-1 when none)."""
    out = np.full(len(events), -1, np.int64)
    for name in names:
        column = profile.stat_at(name, events)
        ids = column.string_ids()
        take = (out < 0) & (ids >= 0)
        out[take] = ids[take]
    return out


def _sequence(profile: Profile, events: np.ndarray) -> np.ndarray:
    out = np.full(len(events), -1, np.int64)
    for name in vocab.SEQUENCE_STATS:
        values = profile.stat_at(name, events).as_int(-1)
        take = (out < 0) & (values >= 0)
        out[take] = values[take]
    return out


def _steps_of(start_ns: np.ndarray, end_ns: np.ndarray, when: np.ndarray) -> np.ndarray:
    """Row of the step whose span [start, end) holds each time, -1 for none (the
    latest-starting one where spans overlap)."""
    if not len(start_ns):
        return np.full(len(when), -1, np.int64)
    order = np.argsort(start_ns, kind="stable")
    starts, ends = start_ns[order], end_ns[order]
    k = np.searchsorted(starts, when, side="right") - 1
    inside = (k >= 0) & (when < ends[np.maximum(k, 0)])
    return np.where(inside, order[np.maximum(k, 0)], -1).astype(np.int64)


def collective_calls(profile: Profile, db: StepDb) -> CollectiveCalls:
    """This host's collective calls (see the module docstring)."""
    types = classify_events(profile)
    layer, events = _call_events(profile, types)
    if not len(events):
        return no_calls()
    order = np.argsort(profile.start_ns[events], kind="stable")
    events = events[order]
    arrive = profile.start_ns[events].astype(np.int64)
    exit_ = profile.end_at(events).astype(np.int64)
    lanes, lane = _lanes(profile, events)
    step = _steps_of(db.start_ns, db.start_ns + db.dur_ns, arrive)
    if layer == "device kernels" and len(db.launch_lo) == db.n_steps:
        # A kernel belongs to the step whose marker holds its launch, as in the step
        # breakdown: a step's span may be its device work, which runs behind the host (the
        # host launches the next steps meanwhile), so a launch time can fall in an earlier
        # step's span; the device's backlog at the capture's start is no step's.
        work = np.flatnonzero(device_work_lines(profile)[profile.line] & (types != NOT_COUNTED))
        step = window_of(launch_times(profile, events, work), db.launch_lo, db.launch_hi)
    ordinal = _ordinals(step, lane)
    p_lo, p_hi = pipeline_input(profile, types, db)
    runup, measured, since, ops = _runups(profile, types, db, step, arrive, exit_, (p_lo, p_hi))
    return CollectiveCalls(
        layer,
        lanes,
        lane,
        _sequence(profile, events),
        step,
        ordinal,
        arrive,
        exit_,
        runup,
        measured,
        runup_python(profile, types, db, since, arrive),
        ops,
        steps_thread_cpu(profile, db),
        overlap_with(since, arrive, p_lo, p_hi),
        *recorded_clock(profile),
    )


def recorded_clock(profile: Profile) -> tuple[str, int]:
    """The clock the profile's times count on and its reading at their zero, ("", 0) when the
    capture did not record it (`vocab.profiler.CLOCK_STAT`): a stepscope capture's times count
    from its ``profile_start_time`` (`stepscope.capture.save`)."""
    clock = next(
        (v for p in profile.planes if isinstance(v := p.stats.get(CLOCK_STAT), str) and v), ""
    )
    env = next((p for p in profile.planes if p.name == "Task Environment"), None)
    start = env.stats.get("profile_start_time") if env is not None else None
    if not clock or not isinstance(start, int) or start <= 0:
        return "", 0
    return clock, start


def _lanes(profile: Profile, events: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """(the lanes in the order the calls first reach them, each call's lane): a lane is a
    collective kind and the call's process group. Labelled per distinct (name, group), not
    per call (thousands of calls, tens of pairs)."""
    names = profile.strings.strings
    groups = _first_stat(profile, vocab.GROUP_STATS, events).astype(np.int64)
    pair = profile.name[events].astype(np.int64) * (len(names) + 1) + (groups + 1)
    pairs, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    seen = np.argsort(first, kind="stable")  # the pairs in the order the calls reach them
    lane_of: dict[str, int] = {}
    lane_of_pair = np.empty(len(pairs), np.int32)
    for k, key in zip(seen.tolist(), pairs[seen].tolist(), strict=True):
        name, group = divmod(key, len(names) + 1)
        label = vocab.collective_kind(names[name]) + (f" {names[group - 1]}" if group else "")
        lane_of_pair[k] = lane_of.setdefault(label, len(lane_of))
    return tuple(lane_of), lane_of_pair[inverse.reshape(-1)]


def _ordinals(step: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """Each call's position among the calls of its (step, lane), in arrival order."""
    key = step.astype(np.int64) * (int(lane.max(initial=0)) + 1) + lane
    order = np.argsort(key, kind="stable")  # arrival order kept within a key
    sorted_key = key[order]
    first = np.ones(len(key), bool)
    first[1:] = sorted_key[1:] != sorted_key[:-1]
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(key)), 0))
    out = np.empty(len(key), np.int64)
    out[order] = np.arange(len(key)) - run_start
    return out


def _runups(
    profile: Profile,
    types: np.ndarray,
    db: StepDb,
    step: np.ndarray,
    arrive: np.ndarray,
    exit_: np.ndarray,
    as_input: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, bool, np.ndarray, np.ndarray]:
    """(calls, categories) time from each call's previous exit to its arrival, whether it
    was measured (see the module docstring), each run-up's start, and (calls, categories)
    the traced events starting in each run-up (no rows when not measured). ``as_input``:
    sorted, disjoint intervals whose instants are input whatever else runs then, as in the
    rank's own limits (`runup_pipeline`)."""
    n_cat = len(CATEGORY_NAMES)
    sorted_exits = np.sort(exit_)
    k = np.searchsorted(sorted_exits, arrive, side="right") - 1
    starts = db.start_ns if db.n_steps else np.zeros(1, np.int64)
    step_start = np.where(step >= 0, starts[np.maximum(step, 0)], arrive)
    since = np.where(k >= 0, sorted_exits[np.maximum(k, 0)], np.minimum(step_start, arrive))
    # nor before the previous arrival: the windows of overlapping calls (DDP's buckets) then
    # share no time, and a step's run-ups add up
    previous_arrival = np.r_[np.iinfo(np.int64).min, arrive[:-1]]
    since = np.minimum(np.maximum(since, previous_arrival), arrive)
    bounds = distinct(np.concatenate([since, arrive]))
    out = np.zeros((len(arrive), n_cat), np.int64)
    if len(bounds) < 2:
        return out, True, since, out.copy()
    counted = np.flatnonzero(types != NOT_COUNTED)
    lo, hi = profile.start_ns[counted], profile.end_at(counted)
    near = (hi > bounds[0]) & (lo < bounds[-1]) & (hi > lo)
    counted, lo, hi = counted[near], lo[near], hi[near]
    ops = _started(types[counted], lo, bounds)  # the traced events only
    ty = types[counted]
    if as_input is not None and len(as_input[0]):
        # swept as events of the input type, above every host type (`type_time`)
        i_lo, i_hi = as_input
        near = (i_hi > bounds[0]) & (i_lo < bounds[-1]) & (i_hi > i_lo)
        lo, hi = np.r_[lo, i_lo[near]], np.r_[hi, i_hi[near]]
        ty = np.r_[ty, np.full(int(near.sum()), int(EventType.HOST_WAIT_INPUT), ty.dtype)]
    first = np.maximum(np.searchsorted(bounds, lo, side="right") - 1, 0)
    last = np.minimum(np.searchsorted(bounds, hi, side="left") - 1, len(bounds) - 2)
    spans = np.maximum(last - first + 1, 0)
    total = int(spans.sum())
    if total > MAX_RUNUP_PAIRS:
        return out, False, since, np.zeros((0, n_cat), np.int64)
    ev = np.repeat(np.arange(len(lo)), spans)
    seg = np.repeat(first, spans) + (np.arange(total) - np.repeat(np.cumsum(spans) - spans, spans))
    seg_lo = np.maximum(lo[ev], bounds[seg])
    seg_hi = np.minimum(hi[ev], bounds[seg + 1])
    n_seg = len(bounds) - 1
    by_type = type_time(seg, seg_lo, seg_hi, ty[ev], n_seg)
    per_cat = np.zeros((n_seg, n_cat), np.int64)
    for c, name in enumerate(CATEGORY_NAMES):
        for t in CATEGORIES[name]:
            per_cat[:, c] += by_type[:, int(t) // 10]
    other = CATEGORY_NAMES.index("other")
    per_cat[:, other] += np.diff(bounds) - per_cat.sum(axis=1)
    cum = np.zeros((n_seg + 1, n_cat), np.int64)
    np.cumsum(per_cat, axis=0, out=cum[1:])
    a = np.searchsorted(bounds, since)
    b = np.searchsorted(bounds, arrive)
    return cum[b] - cum[a], True, since, ops[b] - ops[a]


def _started(types: np.ndarray, start: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(len(bounds), categories): the events (of ``types``, starting at ``start``) of each
    category started before each bound since the first, cumulated."""
    n_cat = len(CATEGORY_NAMES)
    category = np.full(len(types), -1, np.int64)
    for c, name in enumerate(CATEGORY_NAMES):
        category[np.isin(types, [int(t) for t in CATEGORIES[name]])] = c
    seg = np.searchsorted(bounds, start, side="right") - 1
    keep = (category >= 0) & (seg >= 0) & (seg < len(bounds) - 1)
    counts = np.zeros((len(bounds), n_cat), np.int64)
    np.add.at(counts, (seg[keep] + 1, category[keep]), 1)
    return np.cumsum(counts, axis=0)
