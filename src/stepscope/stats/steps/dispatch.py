"""Dispatch-bound steps: the host issuing many small ops, one at a time.

An un-jitted JAX optimizer update over 32 arrays dispatches about 190 ``jnp`` ops per step,
each a ``PjitFunction(...)`` of a few microseconds with Python between them; eager PyTorch
does the same with ``aten::`` ops (and on a GPU with kernel launches). The work each op does
is tiny; the step's time goes into issuing them.

On every host thread, the outermost dispatch events (`stepscope.vocab.dispatch`) shorter
than `TINY_OP_NS` form runs where each starts within `RUN_GAP_NS` of the previous one's end;
a run of at least `MIN_RUN_OPS` is dispatch time from its first op's start to its last op's
end (the Python between the ops included). A dispatch event of `TINY_OP_NS` or more computes
when it runs its work on the calling thread (an eager PyTorch op without a device, an eager
TensorFlow op), or when its name usually takes that long (a jitted call XLA runs inline): it
is a hole in the run, not dispatch, and the gap between the small ops around it is measured
without it, so it does not end the run. A slow call of an op that only queues work and is
usually short (it waited for the GIL or a core) is dispatch like the others. The step
database counts that time in its "bound by" limits (below device work, input and waits for
a computation), and keeps the evidence: ops per step, their median duration and gap, the
ops issued most, the Python function that issued them (the innermost Python tracer frame
around a run, else the deepest function the stack sampler saw on half the samples in the
runs): the program's own function where the capture says which frames are its own
(`OWN_CODE_STAT`, `OWN_FRAMES_STAT`), not a library's (``backward (__init__.py)``: torch's,
under the user's ``train_step``; decision 1033).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field

import numpy as np

from stepscope.distinct import distinct, distinct_inverse, member
from stepscope.event_order import start_order
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import used_names
from stepscope.stats.host.python_samples import function_key, sample_points, sampled_thread_line
from stepscope.stats.intervals import merge, subtract_sets
from stepscope.vocab.dispatch import computes_inline, fix_for, is_dispatch_name
from stepscope.vocab.profiler import OWN_CODE_STAT, OWN_FRAMES_STAT
from stepscope.vocab.pytorch import COMPILED_REGION_PREFIXES, OPTIMIZER_STEP_PREFIX

TINY_OP_NS = 100_000  # an op dispatched in under 100 µs is mostly dispatch overhead
RUN_GAP_NS = 200_000  # ops issued less than 200 µs apart belong to one run
MIN_RUN_OPS = 8  # fewer ops in a row is not a dispatch-bound stretch


@record
class DispatchEvidence:
    """What the dispatch runs of the kept steps are made of."""

    ops: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per step
    median_op_ns: int = 0
    median_gap_ns: int = 0
    top_ops: tuple[tuple[str, int], ...] = ()  # (op name, count over the steps)
    caller: str = ""  # the Python function that issued most of them, when traced
    threads: tuple[str, ...] = ()
    # the share of the ops (%) run inside torch.compile'd graphs; -1: the steps ran none
    compiled_pct: float = -1.0
    # the optimizer's step annotation enclosing most of the ops, and their share (%)
    optimizer: tuple[str, float] = ("", 0.0)

    def ops_per_step(self) -> float:
        return float(self.ops.mean()) if len(self.ops) else 0.0

    def fix(self, framework: str, trains: bool = True) -> str:
        """What to do about these ops in ``framework`` (`stepscope.vocab.dispatch.fix_for`;
        ``trains``: False for a PyTorch run that never trains)."""
        return fix_for(framework, self.ops_per_step(), trains, self.compiled_pct, self.optimizer)


@record
class DispatchRuns:
    """Dispatch runs found on the host threads, with their events."""

    lo: np.ndarray  # per run, sorted by start within each line
    hi: np.ndarray
    events: np.ndarray  # the small ops of all runs
    run_of: np.ndarray  # per event of ``events``: its run
    holes_lo: np.ndarray  # long ops inside runs: compute, not dispatch
    holes_hi: np.ndarray

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """The runs' time, sorted and disjoint, less the long ops inside them."""
        lo, hi = merge(self.lo, self.hi)
        h_lo, h_hi = merge(self.holes_lo, self.holes_hi)
        return subtract_sets(lo, hi, h_lo, h_hi)


def _dispatch_ids(profile: Profile, has_device: bool) -> tuple[np.ndarray, np.ndarray]:
    """The string ids of dispatch events, and of those that compute on the calling thread."""
    strings = profile.strings
    used = used_names(profile)
    ids = [i for i in used.tolist() if is_dispatch_name(strings[i])]
    inline = [i for i in ids if computes_inline(strings[i], has_device)]
    return np.array(ids, np.int64), np.array(inline, np.int64)


def _computes(names: np.ndarray, dur: np.ndarray, inline: np.ndarray) -> np.ndarray:
    """Per op: whether it computes rather than dispatches. An op computing on the calling
    thread (``inline``: eager PyTorch without a device, eager TensorFlow) computes when it
    is long; an op that queues work computes when it is long and its name usually is (a
    jitted call XLA runs inline), and dispatches when it is short or a slow call of an op
    that is usually short (it waited for the GIL or a core)."""
    long = dur >= TINY_OP_NS
    if not long.any():
        return long
    uniq, group = distinct_inverse(names)
    counts = np.bincount(group, minlength=len(uniq))
    first = np.r_[0, np.cumsum(counts)[:-1]]
    at = first + (counts - 1) // 2
    span = int(dur.max()) + 1
    if int(dur.min()) >= 0 and len(uniq) * span < 1 << 62:  # one sort of (name, duration) keys
        keys = np.sort(group.astype(np.int64) * span + dur)
        median = keys[at] - np.arange(len(uniq), dtype=np.int64) * span  # lower median per name
    else:
        median = dur[np.lexsort((dur, group))][at]
    return long & (inline | (median[group] >= TINY_OP_NS))


def find_runs(profile: Profile, host_line: np.ndarray, has_device: bool) -> DispatchRuns:
    """Dispatch runs on the lines where ``host_line`` is True."""
    none = np.zeros(0, np.int64)
    ids, inline_ids = _dispatch_ids(profile, has_device)
    is_dispatch = np.zeros(len(profile.strings), bool)  # by name id: a gather, not np.isin
    is_dispatch[ids] = True
    is_inline = np.zeros(len(profile.strings), bool)
    is_inline[inline_ids] = True
    candidate = np.flatnonzero(is_dispatch.take(profile.name) & host_line.take(profile.line))
    if not len(candidate):
        return DispatchRuns(none, none, none, none, none, none)
    lo_all, hi_all, ev_all, run_all, holes_lo, holes_hi = [], [], [], [], [], []
    n_runs = 0
    line_of = profile.line[candidate]
    for line in distinct(line_of).tolist():
        ev = candidate[line_of == line]
        ev = ev.take(
            start_order(profile.start_ns.take(ev), profile.dur_ns.take(ev))
        )  # nearly in order
        start = profile.start_ns.take(ev)
        end = profile.end_at(ev)
        # outermost only: an event inside the previous outer one is part of it
        reach = np.maximum.accumulate(end)
        outer = np.ones(len(ev), dtype=bool)
        outer[1:] = start[1:] >= reach[:-1]
        ev, start, end = ev[outer], start[outer], end[outer]
        long = _computes(profile.name[ev], end - start, is_inline[profile.name[ev]])
        # the small ops; a long op between two of them is a hole in the run, not a break:
        # the gap between them is measured without it
        held = np.r_[0, np.cumsum(np.where(long, end - start, 0))]
        small = np.flatnonzero(~long)
        if len(small) < MIN_RUN_OPS:
            continue
        gap = start[small[1:]] - end[small[:-1]] - (held[small[1:]] - held[small[:-1] + 1])
        breaks = np.r_[True, gap >= RUN_GAP_NS]
        run = np.cumsum(breaks) - 1
        size = np.bincount(run)
        ok = size[run] >= MIN_RUN_OPS
        if not ok.any():
            continue
        runs, local = distinct_inverse(run[ok])
        first = small[np.searchsorted(run, runs, "left")]
        last = small[np.searchsorted(run, runs, "right") - 1]
        lo_all.append(start[first])
        hi_all.append(end[last])
        ev_all.append(ev[small[ok]])
        run_all.append(local.reshape(-1) + n_runs)
        n_runs += len(runs)
        inside = long & (np.searchsorted(start[first], start, "right") > 0)
        k = np.searchsorted(start[first], start, "right") - 1
        inside &= start < end[last][np.maximum(k, 0)]
        holes_lo.append(start[inside])
        holes_hi.append(end[inside])
    if not n_runs:
        return DispatchRuns(none, none, none, none, none, none)
    return DispatchRuns(
        np.concatenate(lo_all),
        np.concatenate(hi_all),
        np.concatenate(ev_all),
        np.concatenate(run_all),
        np.concatenate(holes_lo),
        np.concatenate(holes_hi),
    )


def evidence(
    profile: Profile,
    runs: DispatchRuns,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    input_lo: np.ndarray | None = None,
    input_hi: np.ndarray | None = None,
) -> DispatchEvidence:
    """The evidence of the runs' events inside the steps [span_lo, span_hi) (sorted), less
    those issued in input time [input_lo, input_hi) (sorted, disjoint): the ops a loader
    issues while it makes a batch (a ``TensorDataset``'s ``aten::select`` per sample) are
    the input's work, which the limits count as input, and the dispatch advice (fuse the
    model's small ops) must not cite them."""
    if not len(runs.events) or not len(span_lo):
        return DispatchEvidence(np.zeros(len(span_lo), np.int64))
    ev = runs.events
    start = profile.start_ns.take(ev)
    k = np.searchsorted(span_lo, start, "right") - 1
    inside = (k >= 0) & (start < span_hi[np.maximum(k, 0)])
    if input_lo is not None and input_hi is not None and len(input_lo):
        j = np.searchsorted(input_lo, start, "right") - 1
        inside &= ~((j >= 0) & (start < input_hi[np.maximum(j, 0)]))
    ops = np.bincount(k[inside], minlength=len(span_lo)).astype(np.int64)
    ev, start, run_of = ev[inside], start[inside], runs.run_of[inside]
    if not len(ev):
        return DispatchEvidence(ops)
    end = profile.end_at(ev)
    same_run = run_of[1:] == run_of[:-1]
    gaps = (start[1:] - end[:-1])[same_run]
    # Counted per distinct name and line (tens of them, not an event at a time), in the
    # order each first appears, as a Counter over the events would hold them (its ties).
    names: Counter[str] = Counter()
    for name, count in zip(*_first_seen(profile.name[ev]), strict=True):
        names[profile.strings[name]] += count
    lines, _ = _first_seen(profile.line[ev])
    threads = tuple(dict.fromkeys(profile.lines[line].label for line in lines))
    return DispatchEvidence(
        ops,
        int(np.median(end - start)),
        int(np.median(gaps)) if len(gaps) else 0,
        tuple(names.most_common(3)),
        _caller(profile, runs, run_of) or _sampled_caller(profile, runs, run_of),
        threads[:3],
        _compiled_pct(profile, ev, start, span_lo, span_hi),
        _most_inside(profile, ev, start, OPTIMIZER_STEP_PREFIX),
    )


def _compiled_pct(
    profile: Profile, ev: np.ndarray, start: np.ndarray, span_lo: np.ndarray, span_hi: np.ndarray
) -> float:
    """The share (%) of the ops ``ev`` (starting at ``start``) run inside torch.compile'd
    graphs, or -1 when no compiled graph ran in the steps [span_lo, span_hi) (sorted)."""
    ids = profile.strings.ids_matching(lambda s: s.startswith(COMPILED_REGION_PREFIXES))
    if not len(ids):
        return -1.0
    at = profile.start_ns[_named(profile, ids)]
    k = np.searchsorted(span_lo, at, "right") - 1
    if not ((k >= 0) & (at < span_hi[np.maximum(k, 0)])).any():
        return -1.0
    _, inside = _inside(profile, ev, start, COMPILED_REGION_PREFIXES)
    return 100.0 * inside / len(ev)


def _named(profile: Profile, ids: np.ndarray) -> np.ndarray:
    """Per event, whether its name is one of the string ids ``ids``: a gather by name id,
    not np.isin over every event (decision 201)."""
    is_named = np.zeros(len(profile.strings), bool)
    is_named[ids] = True
    return is_named.take(profile.name)


def _most_inside(
    profile: Profile, ev: np.ndarray, start: np.ndarray, prefix: str
) -> tuple[str, float]:
    """The annotation named ``prefix...`` enclosing the most of the ops ``ev`` (starting at
    ``start``) on their own threads, and the share of the ops it holds (%); ("", 0)."""
    held, _ = _inside(profile, ev, start, (prefix,))
    if not held:
        return "", 0.0
    name, count = held.most_common(1)[0]
    return profile.strings[name], 100.0 * count / len(ev)


def _inside(
    profile: Profile, ev: np.ndarray, start: np.ndarray, prefixes: tuple[str, ...]
) -> tuple[Counter[int], int]:
    """Of the ops ``ev`` (starting at ``start``): how many each outermost event named with
    one of ``prefixes`` on the op's thread encloses (by name id), and how many they enclose
    in all."""
    held: Counter[int] = Counter()
    ids = profile.strings.ids_matching(lambda s: s.startswith(prefixes))
    if not len(ids) or not len(ev):
        return held, 0
    around = np.flatnonzero(_named(profile, ids))
    total = 0
    for line in distinct(profile.line[ev]).tolist():
        mine = around[profile.line[around] == line]
        if not len(mine):
            continue
        mine = mine[np.argsort(profile.start_ns[mine], kind="stable")]
        end = profile.end_at(mine)
        outer = np.ones(len(mine), bool)  # a region inside the previous one is part of it
        outer[1:] = profile.start_ns[mine][1:] >= np.maximum.accumulate(end)[:-1]
        mine, end = mine[outer], end[outer]
        at = start[profile.line[ev] == line]
        k = np.searchsorted(profile.start_ns[mine], at, "right") - 1
        hit = (k >= 0) & (at < end[np.maximum(k, 0)])
        names, counts = np.unique(profile.name[mine[k[hit]]], return_counts=True)
        for name, count in zip(names.tolist(), counts.tolist(), strict=True):
            held[name] += count
        total += int(hit.sum())
    return held, total


def _first_seen(values: np.ndarray) -> tuple[list[int], list[int]]:
    """The distinct values in the order they first appear, and how often each appears."""
    uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    return uniq[order].tolist(), counts[order].tolist()


def _caller(profile: Profile, runs: DispatchRuns, run_ids: np.ndarray) -> str:
    """The Python function whose traced frame encloses the most dispatch time of the runs
    (the innermost frame enclosing a whole run); "" without the Python tracer's frames."""
    python = profile.strings.ids_matching(lambda s: s.startswith("$"))
    own = distinct(profile.name[profile.stat_events(OWN_CODE_STAT)])
    if len(own):  # the capture says which functions are the program's: only those
        python = np.intersect1d(python, own)
    if not len(python):
        return ""
    time: Counter[str] = Counter()
    line_of_run: dict[int, int] = {}
    for r, e in zip(runs.run_of.tolist(), runs.events.tolist(), strict=True):
        line_of_run.setdefault(r, int(profile.line[e]))
    for r in distinct(run_ids).tolist():
        line = profile.lines[line_of_run[r]]
        sl = profile.events_of_line(line)
        names = profile.name[sl]
        frames = np.flatnonzero(member(names, python))
        if not len(frames):
            continue
        f_lo = profile.start_ns[sl][frames]
        f_hi = f_lo + profile.dur_ns[sl][frames]
        lo, hi = int(runs.lo[r]), int(runs.hi[r])
        enclosing = frames[(f_lo <= lo) & (f_hi >= hi)]
        if not len(enclosing):
            continue
        innermost = enclosing[np.argmin(profile.dur_ns[sl][enclosing])]
        where, _, func = profile.strings[int(names[innermost])][1:].rpartition(" ")
        time[function_key(f"{func} ({where})")] += hi - lo
    return time.most_common(1)[0][0] if time else ""


def _sampled_caller(profile: Profile, runs: DispatchRuns, run_ids: np.ndarray) -> str:
    """The deepest public function (not ``_private``, not ``<module>``) on at least half of
    the stack samples taken inside the runs: the user's code issuing the ops; "" without
    samples there."""
    thread_of = sampled_thread_line(profile)
    wanted = distinct(run_ids)
    line_of_run = np.zeros(len(runs.lo), np.int64)
    line_of_run[runs.run_of] = profile.line[runs.events]
    lines = [ln for ln in range(len(profile.lines)) if thread_of[ln] >= 0]
    lines = [ln for ln in lines if thread_of[ln] in set(line_of_run[wanted].tolist())]
    if not lines:
        return ""
    sample_ev, at, _, _ = sample_points(profile, lines)
    thread = thread_of[profile.line[sample_ev]]
    hit = np.zeros(len(at), dtype=bool)
    for r in wanted.tolist():
        hit |= (at >= runs.lo[r]) & (at < runs.hi[r]) & (thread == line_of_run[r])
    if not hit.any():
        return ""
    ev = sample_ev[hit]
    stack_ids = profile.stat_at("stack", ev).string_ids().astype(np.int64)
    own_ids = profile.stat_at(OWN_FRAMES_STAT, ev).string_ids().astype(np.int64)
    # each (stack, own frames) pair as one key, in the pairs' order, numbered as the other
    # columns are (`distinct_inverse`: no NumPy hash table nor row sort)
    span = len(profile.strings) + 1
    keys, inverse = distinct_inverse((stack_ids + 1) * span + own_ids + 1)
    pairs = np.stack([keys // span - 1, keys % span - 1])
    counts = np.bincount(inverse, minlength=pairs.shape[1])
    total = int(counts.sum())
    marked = bool((own_ids >= 0).any())  # captures before decision 1033 say nothing
    seen: Counter[str] = Counter()
    depth: dict[str, int] = {}
    for (sid, oid), c in zip(pairs.T.tolist(), counts.tolist(), strict=True):
        frames = profile.strings[sid].split(";") if sid >= 0 else []
        if marked:  # only the program's own frames: a library's are not the user's code
            mine = {int(k) for k in profile.strings[oid].split(",") if k} if oid >= 0 else set()
            frames = [f for k, f in enumerate(frames) if k in mine]
        for d, frame in enumerate(dict.fromkeys(function_key(f) for f in frames)):
            seen[frame] += c
            depth[frame] = max(depth.get(frame, 0), d)
    public = [f for f, c in seen.items() if 2 * c >= total and not f.startswith(("_", "<"))]
    if not public and marked:  # a loop at a script's top level calls the library itself
        public = [f for f, c in seen.items() if 2 * c >= total and f.startswith("<module>")]
    return max(public, key=lambda f: depth[f]) if public else ""
