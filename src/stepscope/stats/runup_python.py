"""The stack sampler's samples in each collective call's run-up (`collective_calls`): what the
rank's thread ran untraced before it arrived, by the Python functions its overview names. The
straggler analysis explains a late rank by them (`stragglers_python`, decision 417)."""

from __future__ import annotations

from dataclasses import field, replace

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import NOT_COUNTED
from stepscope.stats.host.python_samples import (
    _since_previous,
    function_key,
    is_own_line,
    sample_points,
    sampled_thread_line,
)
from stepscope.stats.host.thread_cpu import ThreadCpu, thread_cpu
from stepscope.stats.steps.breakdown import StepDb


def _empty(dtype: type) -> np.ndarray:
    return np.zeros(0, dtype)


@record
class RunupPython:
    """The stack sampler's samples in the calls' run-ups, outside the traced work of the
    thread sampled: what that thread ran untraced before each call, by the Python functions
    the overview names (the step database's `untraced.python` keys: a function with every
    line together, or a loop's own line). Sparse: one row per (call, function) seen."""

    keys: tuple[str, ...] = ()  # "func (file)" or "func (file.py:37)"
    paths: tuple[str, ...] = ()  # each key's most common call path, ';'-joined
    call: np.ndarray = field(default_factory=lambda: _empty(np.int64))  # call index
    key: np.ndarray = field(default_factory=lambda: _empty(np.int64))  # index into keys
    # the samples' weight (each the time since its thread's previous sample, as in the
    # overview's shares) and count
    weight: np.ndarray = field(default_factory=lambda: _empty(np.float64))
    samples: np.ndarray = field(default_factory=lambda: _empty(np.int64))
    # per call: every sample in its untraced run-up, whatever its functions
    call_weight: np.ndarray = field(default_factory=lambda: _empty(np.float64))
    call_samples: np.ndarray = field(default_factory=lambda: _empty(np.int64))


def sampled_lines(profile: Profile, db: StepDb) -> list[int]:
    """The sampler's lines of the steps' thread(s): the threads of the step markers, else
    of the inferred steps' leads (`StepDb.lines`: a loop over a DataLoader with workers has
    their threads sampled too, decision 703), else the one thread sampled, if only one."""
    thread_of = sampled_thread_line(profile)
    sampled = [ln for ln in range(len(profile.lines)) if thread_of[ln] >= 0]
    markers = db.event[db.event >= 0] if len(db.event) else db.event
    threads = set(profile.line[markers].tolist()) if len(markers) else set(db.lines)
    lines = [ln for ln in sampled if int(thread_of[ln]) in threads]
    if not lines and len({int(thread_of[ln]) for ln in sampled}) == 1:
        return sampled
    return lines


def steps_thread_cpu(profile: Profile, db: StepDb) -> ThreadCpu:
    """The CPU readings of the steps' thread (`sampled_lines`), empty without them."""
    thread_of = sampled_thread_line(profile)
    return thread_cpu(profile, [int(thread_of[ln]) for ln in sampled_lines(profile, db)])


def _untraced_on_own_thread(
    profile: Profile, types: np.ndarray, thread: np.ndarray, at: np.ndarray
) -> np.ndarray:
    """Per sample (of the thread line ``thread[i]``, at ``at[i]``): whether no counted event
    of that thread covers it."""
    out = np.ones(len(at), bool)
    for t in distinct(thread).tolist():
        sl = profile.events_of_line(profile.lines[t])
        ev = np.arange(sl.start, sl.stop, dtype=np.int64)
        ev = ev[types[ev] != NOT_COUNTED]
        mine = np.flatnonzero(thread == t)
        if not len(ev) or not len(mine):
            continue
        order = np.argsort(profile.start_ns[ev], kind="stable")
        starts = profile.start_ns[ev][order]
        reach = np.maximum.accumulate(profile.end_at(ev)[order])
        k = np.searchsorted(starts, at[mine], "right") - 1
        covered = k >= 0
        covered[covered] = reach[k[covered]] > at[mine][covered]
        out[mine] = ~covered
    return out


def runup_python(
    profile: Profile, types: np.ndarray, db: StepDb, since: np.ndarray, arrive: np.ndarray
) -> RunupPython:
    """The samples of the steps' thread in each call's run-up [since, arrive) that no
    counted event of that thread covers, by the functions of the step database's sampled
    Python (`RunupPython`). A straggler's late run-ups are explained by them
    (`stragglers`): the whole steps' samples named the wait inside backward that every
    rank has, first, beside the loop's own sleep (decision 417)."""
    python = db.untraced.python
    n = len(arrive)
    none = RunupPython(call_weight=np.zeros(n), call_samples=np.zeros(n, np.int64))
    if not len(python) or not n:
        return none
    lines = sampled_lines(profile, db)
    if not lines:
        return none
    sample_ev, at, _, _ = sample_points(profile, lines)
    weight = _since_previous(profile.line[sample_ev], at)
    # the run-ups are disjoint and in arrival order (`_runups`)
    call = np.searchsorted(arrive, at, "right")
    inside = call < n
    inside[inside] = at[inside] >= since[call[inside]]
    thread = sampled_thread_line(profile)[profile.line[sample_ev]]
    inside[inside] = _untraced_on_own_thread(profile, types, thread[inside], at[inside])
    if not inside.any():
        return none
    sample_ev, weight, call = sample_ev[inside], weight[inside], call[inside]
    call_weight = np.bincount(call, weights=weight, minlength=n)
    call_samples = np.bincount(call, minlength=n).astype(np.int64)
    keys = python.function
    index = {k: i for i, k in enumerate(keys)}
    stacks, inverse = distinct_inverse(profile.stat_at("stack", sample_ev).string_ids())
    calls, ks, ws, ns = [], [], [], []
    for s_i, sid in enumerate(stacks.tolist()):
        frames = profile.strings[sid].split(";") if sid >= 0 else []
        on = {index[k] for k in (function_key(f) for f in frames) if k in index}
        if frames and frames[-1] in index and is_own_line(frames[-1]):
            on.add(index[frames[-1]])  # a loop's own line: its deepest frame (decision 396)
        if not on:
            continue
        mine = np.flatnonzero(inverse == s_i)
        for key in sorted(on):
            calls.append(call[mine])
            ks.append(np.full(len(mine), key, np.int64))
            ws.append(weight[mine])
            ns.append(np.ones(len(mine), np.int64))
    if not calls:
        return replace(none, call_weight=call_weight, call_samples=call_samples)
    pair = np.concatenate(calls) * len(keys) + np.concatenate(ks)
    pairs, back = distinct_inverse(pair)
    return RunupPython(
        keys,
        python.stack,
        pairs // len(keys),
        pairs % len(keys),
        np.bincount(back, weights=np.concatenate(ws), minlength=len(pairs)),
        np.bincount(back, weights=np.concatenate(ns), minlength=len(pairs)).astype(np.int64),
        call_weight,
        call_samples,
    )
