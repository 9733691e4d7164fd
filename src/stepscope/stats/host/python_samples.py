"""The Python stack sampler's lines (docs/formats/python_samples.md) and what they explain.

A ``Python samples`` line of the ``/host:CPU`` plane holds runs of identical Python stacks of
one thread (``display_id`` = that thread's line id). Its events are not work of their own (the
thread's traced events are): event typing leaves them out, and they are used to say which
Python functions took the time that no traced event covers ("All Others") on a step's thread.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.model import Profile, StringTable
from stepscope.records import record
from stepscope.stats.intervals import intersect_sets, merge, overlap_with
from stepscope.vocab.profiler import FETCHES_LINE

SAMPLES_LINE = "Python samples"
PYTHON_OP_TYPE = "Python"
MIN_SAMPLES = 5  # fewer samples of a function give no share worth printing
SEEN_ENOUGH = 0.8  # the sampler saw less of the step time: say so with the figures
_Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


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


def probe_events(profile: Profile, thread_lines: list[int]) -> np.ndarray:
    """The fetches `capture.fetch_probe` timed on the threads ``thread_lines`` (its "Python
    fetches" lines: same plane, display id = the thread line's id), unsorted."""
    wanted = {(profile.lines[t].plane, profile.lines[t].id) for t in thread_lines if t >= 0}
    probe = [
        ln.index
        for ln in profile.lines
        if ln.name == FETCHES_LINE and (ln.plane, ln.display_id) in wanted and ln.event_count
    ]
    return np.flatnonzero(np.isin(profile.line, probe)) if probe else np.zeros(0, np.int64)


@record
class PythonTime:
    """Python functions the stack sampler saw in the steps: each function's share of the step
    time, inclusive (a sample counts for every function on its stack), with the samples
    behind it and a 95% confidence interval (`functions_in_steps`)."""

    function: tuple[str, ...]  # "func (file)": every line of the function together
    stack: tuple[str, ...]  # its most common call path, outermost first, ';'-joined
    ns: np.ndarray  # int64: its time in the steps (estimated from the samples, or traced)
    samples: np.ndarray  # int64: samples whose stack holds it
    total_samples: int = 0  # samples taken in the steps
    ci_low: np.ndarray = field(default_factory=lambda: np.zeros(0))  # share, 0-1
    ci_high: np.ndarray = field(default_factory=lambda: np.zeros(0))
    traced: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # ns from events
    # share of the step time the sampler saw (its samples' intervals): below 1 when its
    # thread was starved of a CPU or of the GIL; the intervals widen for what it missed
    coverage: float = 1.0

    @classmethod
    def empty(cls) -> PythonTime:
        z = np.zeros(0, np.int64)
        return cls((), (), z, z)

    def __len__(self) -> int:
        return len(self.function)

    def leading(self, count: int) -> list[int]:
        """Up to ``count`` functions to name, most time first, each outside the call paths of
        those already named: the shares are inclusive, so after `value_and_grad_f` 62% its
        callees (53%, 34%...) said nothing new and hid a Python generator at 20% beside it.
        A function is passed over when a named one is on its most common call path."""
        chosen: list[int] = []
        for k in range(len(self.function)):
            if len(chosen) == count:
                break
            path = {function_key(frame) for frame in self.stack[k].split(";")[:-1]}
            if not any(self.function[j] in path for j in chosen):
                chosen.append(k)
        return chosen

    def too_few(self, k: int) -> bool:
        """Whether function ``k`` has too few samples for its share to mean anything."""
        return not bool(self.traced[k]) and int(self.samples[k]) < MIN_SAMPLES

    def describe_all(self, ks: list[int], step_ns: int) -> str:
        """The functions ``ks`` described (`describe`), comma-joined; when none of them has
        `MIN_SAMPLES`, one phrase saying so rather than "too few samples" after each name."""
        if ks and all(self.too_few(k) for k in ks):
            seen = ", ".join(f"{self.function[k]} n={int(self.samples[k])}" for k in ks)
            return (
                f"too few samples to name a function ({seen}; a longer capture or a higher "
                "python_sampler_hz takes more)"
            )
        return ", ".join(self.describe(k, step_ns) for k in ks)

    def describe(self, k: int, step_ns: int) -> str:
        """``featurize (prep.py) 64.0% of the step time (38 samples, 95% CI 52-75%)``, or
        ``... too few samples (n=3)`` below `MIN_SAMPLES`, or the traced time."""
        name = self.function[k]
        if is_own_line(name):
            name = f"{name} (the loop's own line)"
        if self.traced[k]:
            pct = 100.0 * float(self.ns[k]) / step_ns if step_ns else 0.0
            return f"{name} {pct:.1f}% of the step time (traced)"
        n = int(self.samples[k])
        if n < MIN_SAMPLES:
            return f"{name}: too few samples (n={n})"
        pct = 100.0 * float(self.ns[k]) / step_ns if step_ns else 0.0
        lo, hi = 100.0 * float(self.ci_low[k]), 100.0 * float(self.ci_high[k])
        seen = (
            f"; the sampler saw {100.0 * self.coverage:.0f}% of the step time"
            if self.coverage < SEEN_ENOUGH
            else ""
        )
        return (
            f"{name} {pct:.1f}% of the step time ({n} of {self.total_samples} samples{seen}, "
            f"95% CI {lo:.0f}-{hi:.0f}%)"
        )


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


def sample_points(
    profile: Profile, lines: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every sample of the samples lines ``lines``: (its run's event, its time, the time it
    stands for, its run's start). A run of n samples over d ns stands for n samples d/n
    apart."""
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
    first = np.repeat(profile.start_ns[ev], count)
    return sample_ev, at, weight, first


def untraced_python_time(
    profile: Profile,
    step_lines: tuple[int, ...],
    span_start: np.ndarray,
    span_end: np.ndarray,
    covered_start: np.ndarray,
    covered_end: np.ndarray,
) -> PythonTime:
    """Time of the threads ``step_lines`` inside the step spans and outside the traced
    intervals ``covered_*`` (sorted, disjoint), by innermost Python function (every line of
    a function together): the "Python" rows of op_stats, self time as ops have.

    Estimated from the samples, not from the runs' spans: a run of n samples over d ns stands
    for n samples d/n apart, each counting d/n where it falls in untraced step time. (A run's
    span also covers the interval after its last sample, which may hold other work: 2 ms
    data fetches seen by one 10 ms sample must not take the 8 ms of Python after them.)
    """
    thread_of = sampled_thread_line(profile)
    lines = [ln for ln in range(len(profile.lines)) if thread_of[ln] in step_lines]
    if not lines or not len(span_start):
        return PythonTime.empty()
    sample_ev, at, weight, first = sample_points(profile, lines)
    order = np.argsort(span_start, kind="stable")
    s_lo, s_hi = span_start[order], span_end[order]
    in_step = _inside(s_lo, s_hi, at)
    # A run's samples are spread evenly over it, but a run that began outside the steps was
    # seen there: a Python-level sampler gets the GIL when the thread blocks, so a loader's
    # sleep between steps can be the only stack it saw around a short burst of Python
    # inside a step. Such samples say nothing about the steps. A run that began in a step
    # and goes on over the next ones is what steps shorter than the sampling interval give
    # (24 ms steps, a sample every 40 ms): each of its samples saw its stack there.
    began_in_a_step = _step_of(s_lo, s_hi, first) >= 0
    free = in_step & began_in_a_step & ~_inside(covered_start, covered_end, at)
    if not free.any():
        return PythonTime.empty()
    sample_ev, weight = sample_ev[free], weight[free]
    # No step gets more sampled Python time than it has untraced time.
    step = _step_of(s_lo, s_hi, at[free])
    untraced = (s_hi - s_lo) - _covered_in(s_lo, s_hi, covered_start, covered_end)
    given = np.bincount(step, weights=weight, minlength=len(s_lo))
    scale = np.minimum(1.0, untraced / np.maximum(given, 1.0))
    weight = weight * scale[step]
    # by function: every line of a function is one row
    strings = profile.strings
    name_ids = profile.name[sample_ev]
    keys = {i: function_key(strings[i]) for i in distinct(name_ids).tolist()}
    texts = sorted(set(keys.values()))
    row_of = {t: r for r, t in enumerate(texts)}
    name = np.array([row_of[keys[i]] for i in name_ids.tolist()], dtype=np.int64)
    stack = profile.stat_at("stack", sample_ev).string_ids()
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
    return PythonTime(
        tuple(texts[int(uniq[i])] for i in rank.tolist()),
        tuple(strings[stack_of[i]] if stack_of[i] >= 0 else "" for i in rank.tolist()),
        total[rank],
        samples[rank],
    )


def function_key(frame: str) -> str:
    """``func (file.py)`` of a frame ``func (file.py:12)``: a function whatever line ran."""
    head, sep, tail = frame.rpartition(":")
    if sep and tail.endswith(")") and tail[:-1].isdigit():
        return head + ")"
    return frame


class FunctionTally:
    """Each function's samples over distinct stacks: a function counts once per sample, even
    when recursive; ``depth`` is its deepest place, ``seen_in`` the stacks holding it,
    ``paths`` its call paths (outermost first, up to it) with their samples."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.weighted: dict[str, float] = {}
        self.depth: dict[str, int] = {}
        self.seen_in: dict[str, list[int]] = {}
        self.paths: dict[str, dict[str, int]] = {}

    def add(self, sid: int, stack: str, count: int, weight: float = 0.0) -> None:
        frames = stack.split(";") if sid >= 0 else []
        done: set[str] = set()
        for d, frame in enumerate(frames):
            key = function_key(frame)
            if key in done:  # recursion: once per sample
                continue
            done.add(key)
            self.add_key(key, sid, count, weight, frames, d)

    def add_key(
        self, key: str, sid: int, count: int, weight: float, frames: list[str], depth: int
    ) -> None:
        """Counts ``count`` samples of stack ``sid`` for ``key`` as it stands (no
        `function_key`): a line of a function, its place ``depth`` on ``frames``."""
        self.count[key] = self.count.get(key, 0) + count
        self.weighted[key] = self.weighted.get(key, 0.0) + weight
        self.depth[key] = max(self.depth.get(key, 0), depth)
        self.seen_in.setdefault(key, []).append(sid)
        by_path = self.paths.setdefault(key, {})
        path = ";".join([*frames[:depth], key])
        by_path[path] = by_path.get(path, 0) + count

    def distinct(self) -> list[str]:
        """Of functions seen in exactly the same samples (a caller and its only callee), the
        callee: one function per set of samples, in first-seen order."""
        groups: dict[tuple[int, ...], str] = {}
        for key in self.count:
            sig = tuple(sorted(self.seen_in[key]))
            if sig not in groups or self.depth[key] > self.depth[groups[sig]]:
                groups[sig] = key
        return list(groups.values())

    def deepest(self, keys: list[str]) -> str:
        return max(keys, key=lambda k: self.depth[k])

    def common_path(self, key: str) -> str:
        """The function's most sampled call path."""
        return max(self.paths[key].items(), key=lambda kv: kv[1])[0]


def tally_stacks(
    strings: StringTable,
    ids: list[int],
    counts: list[int],
    weights: list[float] | None = None,
) -> FunctionTally:
    """The functions of distinct stacks (string ids, -1 for none) seen ``counts`` times."""
    tally = FunctionTally()
    for i, (sid, c) in enumerate(zip(ids, counts, strict=True)):
        tally.add(sid, strings[sid] if sid >= 0 else "", c, weights[i] if weights else 0.0)
    return tally


def wilson(n: np.ndarray, total: float) -> tuple[np.ndarray, np.ndarray]:
    """95% Wilson score interval of the proportions ``n / total``."""
    if total <= 0:
        zero = np.zeros(len(n))
        return zero, zero.copy()
    p = n / total
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = _Z95 * np.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def _coverage(
    profile: Profile, lines: list[int], span_start: np.ndarray, span_end: np.ndarray
) -> float:
    """The share of the steps' time the sampler's runs cover (each sample stands for one
    interval after it, runs cut at the next one: docs/formats/python_samples.md)."""
    ev = np.concatenate(
        [
            np.arange(sl.start, sl.stop, dtype=np.int64)
            for sl in (profile.events_of_line(profile.lines[ln]) for ln in lines)
        ]
    )
    lo, hi = merge(profile.start_ns[ev], profile.end_at(ev))
    c_lo, c_hi = intersect_sets(lo, hi, span_start, span_end)
    total = float((span_end - span_start).sum())
    return min(float((c_hi - c_lo).sum()) / total, 1.0) if total > 0 else 1.0


def _since_previous(line: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per sample, the time since the previous sample of its thread (the median spacing for
    a thread's first sample), at most 4 times that median: a sampler starved for longer says
    nothing about the time it did not see."""
    out = np.zeros(len(at), dtype=np.float64)
    for thread in distinct(line).tolist():
        mine = np.flatnonzero(line == thread)
        order = mine[np.argsort(at[mine], kind="stable")]
        gaps = np.diff(at[order]).astype(np.float64)
        typical = float(np.median(gaps)) if len(gaps) else 1.0
        out[order] = np.minimum(np.r_[typical, gaps], 4 * typical)
    return out


def functions_in_steps(
    profile: Profile, step_lines: tuple[int, ...], span_start: np.ndarray, span_end: np.ndarray
) -> PythonTime:
    """The Python functions on the steps' threads during the steps (spans sorted, disjoint),
    by function and inclusive: a function's share of the step time is the share of the
    samples taken in the steps whose stack holds it, each sample weighted by the time since
    the thread's previous sample (a sampler thread waits for the GIL while Python runs, so
    samples come further apart in Python than in C code: unweighted, pure-Python work was
    counted at half its time), with a 95% Wilson interval on the samples' effective count. A
    function
    always on the stack (the loop's own) is left out, and of a caller and its callee seen in
    the same samples only the callee is kept. A function the trace also times (a Python
    tracer frame, a `stepscope.trace` of that name) takes its traced time: one number."""
    thread_of = sampled_thread_line(profile)
    lines = [ln for ln in range(len(profile.lines)) if thread_of[ln] in step_lines]
    if not lines or not len(span_start):
        return PythonTime.empty()
    sample_ev, at, _, first = sample_points(profile, lines)
    step = _step_of(span_start, span_end, at)
    # a run that began outside the steps says nothing about them (see untraced_python_time)
    mine = (step >= 0) & (_step_of(span_start, span_end, first) >= 0)
    total = int(mine.sum())
    if not total:
        return PythonTime.empty()
    weight = _since_previous(profile.line[sample_ev], at)[mine]
    stacks, inverse = distinct_inverse(profile.stat_at("stack", sample_ev[mine]).string_ids())
    counts = np.bincount(inverse, minlength=len(stacks))
    stack_weight = np.bincount(inverse, weights=weight, minlength=len(stacks))
    total_weight = float(stack_weight.sum()) or 1.0
    tally = tally_stacks(profile.strings, stacks.tolist(), counts.tolist(), stack_weight.tolist())
    ids = stacks.tolist()
    _name_own_lines(tally, ids, strings_of(profile, ids), counts, stack_weight, total)
    count, seen_in = tally.count, tally.seen_in
    # the loop's own frames (on every sample) say nothing; of functions seen in exactly the
    # same samples (a caller and its only callee), the callee
    distinct_keys = tally.distinct()
    kept = [k for k in distinct_keys if count[k] < total]
    if not kept:  # every sample in one call chain: its deepest function
        kept = [tally.deepest(distinct_keys)]
    groups = {tuple(sorted(seen_in[k])): k for k in kept}
    keys = list(groups.values())
    n = np.array([count[k] for k in keys], dtype=np.int64)
    share = np.array([tally.weighted[k] / total_weight for k in keys], dtype=np.float64)
    ns = np.round(share * float((span_end - span_start).sum())).astype(np.int64)
    traced = np.zeros(len(keys), dtype=bool)
    for i, measured in enumerate(_traced_ns(profile, step_lines, keys, span_start, span_end)):
        if measured is not None:
            ns[i], traced[i] = measured, True
    # uneven weights carry less information than as many even ones: the interval is taken on
    # Kish's effective sample size
    effective = total_weight**2 / max(float(np.square(weight).sum()), 1.0)
    low, high = wilson(share * effective, effective)
    # What the sampler never saw (its thread starved of a CPU, or of the GIL it needs while
    # pure Python runs) may hold any function: the interval spans it.
    seen = _coverage(profile, lines, span_start, span_end)
    low, high = low * seen, np.minimum(high * seen + (1.0 - seen), 1.0)
    order = np.argsort(-ns, kind="stable")
    return PythonTime(
        tuple(keys[i] for i in order.tolist()),
        tuple(tally.common_path(keys[i]) for i in order.tolist()),
        ns[order],
        n[order],
        total,
        low[order],
        high[order],
        traced[order],
        seen,
    )


def strings_of(profile: Profile, ids: list[int]) -> list[str]:
    return [profile.strings[i] if i >= 0 else "" for i in ids]


def _name_own_lines(
    tally: FunctionTally,
    ids: list[int],
    stacks: list[str],
    counts: np.ndarray,
    weights: np.ndarray,
    total: int,
) -> None:
    """Adds the loop's own lines to ``tally``: samples whose deepest frame is the function on
    every sample (the loop) stopped in its own code -- a builtin it calls (``time.sleep``, a
    NumPy call), or its bytecode -- where no callee can be named. Left out with the loop's
    frame, a 30 ms ``time.sleep`` in a DDP rank's loop body went unnamed and the rank's
    backward, half its samples, read as the cause. Each such line is a key
    ``func (file.py:37)``."""
    always = [k for k, n in tally.count.items() if n == total]
    if not always:
        return
    loop = max(always, key=lambda k: tally.depth[k])
    for i, text in enumerate(stacks):
        frames = text.split(";") if text else []
        if frames and function_key(frames[-1]) == loop and frames[-1] != loop:
            depth = len(frames) - 1
            tally.add_key(frames[-1], ids[i], int(counts[i]), float(weights[i]), frames, depth)


def is_own_line(key: str) -> bool:
    """Whether a function key is a loop's own line (`_name_own_lines`), ``func (file.py:37)``."""
    return function_key(key) != key


def _traced_ns(
    profile: Profile,
    step_lines: tuple[int, ...],
    keys: list[str],
    span_start: np.ndarray,
    span_end: np.ndarray,
) -> list[int | None]:
    """Per function key, the time the trace itself gives it inside the steps on the steps'
    threads (its Python tracer frames ``$file.py:12 func``, or a `stepscope.trace` span of
    its name), None when the trace has none."""
    wanted = {k: i for i, k in enumerate(keys)}
    # a loop's own line is never a traced span of its own
    names = {k.rpartition(" (")[0]: i for i, k in enumerate(keys) if not is_own_line(k)}
    strings = profile.strings
    ids: dict[int, int] = {}
    for sid in distinct(profile.name[np.isin(profile.line, list(step_lines))]).tolist():
        text = strings[sid]
        if text.startswith("$"):
            where, _, func = text[1:].rpartition(" ")
            key = f"{func} ({where.rsplit(':', 1)[0]})"
            if key in wanted:
                ids[sid] = wanted[key]
        elif text in names:
            ids[sid] = names[text]
    out: list[int | None] = [None] * len(keys)
    if not ids:
        return out
    on_lines = np.isin(profile.line, list(step_lines))
    for sid, i in ids.items():
        ev = np.flatnonzero(on_lines & (profile.name == sid))
        lo, hi = merge(profile.start_ns[ev], profile.end_at(ev))
        c_lo, c_hi = intersect_sets(lo, hi, span_start, span_end)
        out[i] = (out[i] or 0) + int((c_hi - c_lo).sum())
    return out
