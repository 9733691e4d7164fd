"""Time the loop spends getting its batch from a Python iterator (decision 343).

A loop fed by a plain generator (``for x, y in batches():``, ``next(it)``, ``map(load, ...)``)
leaves no traced event around the fetch: the time is untraced ("All Others"; the "host"
limit). The stack sampler sees it: in its samples the frame right under the loop's frame is
one its caller entered to get a next item (the ``next_frames`` stat,
docs/formats/python_samples.md). Such a sample is the loop fetching its batch, unless that
frame holds the step's model work (a generator that IS the training loop).

- The loop's frame: the deepest frame every sample of the steps (on the steps' thread) shares
  (same function at the same depth), or the one above the first shared frame that every
  sample saw entered for a next item (all samples inside the fetch).
- A fetch sample: its frame right under the loop's frame is in ``next_frames``, and that
  function is not the model's. When the capture timed the loop's first fetches (the "Python
  fetches" line of `capture.fetch_probe`, decision 382): it is the model's when at least half
  of its timed fetches (and 2) hold a model op of the steps' thread (`staging.model_ops`)
  wholly inside them. Else from the samples: of those taken inside the model's traced work,
  at least half (and 2) have it at that depth.
- Named after the innermost frame of the chain of such frames from there (a ``tqdm`` or
  ``enumerate`` wrapper's generator gives way to the generator it drives).
- The time is the trace's, not the samples' count: the steps' untraced gaps (on the steps'
  thread, outside what the limits cover) are grouped by the traced events around them ("after
  A, before B", as `untraced.places`); each group's gaps count as fetching in the share of
  the samples in them (each weighted by the time since its thread's previous sample, as
  `functions_in_steps`) that saw the fetch. So the fetch's place in the loop, found by a few
  samples, is measured in every step. Moved from "host" to "input" in the limits when at
  least `MIN_SAMPLES` samples saw the fetch; XProf's categories are unchanged.
- Where the capture timed the loop's first fetches (`capture.fetch_probe`), their share of
  each place's gaps, not the samples', is the fetch's share there (decision 505): the sampler
  waits for the GIL while the loop runs pure Python and samples when the thread lets go of
  it, so the loop's own lines after the step (metrics, logging) are seen late, in the fetch
  that follows, and counted with it. Without timed fetches (a profile function already set)
  that bias stays: on an un-jitted JAX loop about 4 points of the step over what the script
  measured in next(); 3 ms of bookkeeping beside a 6 ms generator read as input whole.
"""

from __future__ import annotations

from dataclasses import field, replace

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.host.python_samples import (
    MIN_SAMPLES,
    _inside,
    _since_previous,
    _step_of,
    probe_events,
    sample_points,
    sampled_thread_line,
)
from stepscope.stats.intervals import merge, overlap_with, subtract_sets, union_of
from stepscope.stats.steps.fetch_frames import fetch_depths, fetch_names, loop_depth, stack_frames
from stepscope.stats.steps.fetch_share import shared, unlike, waited_parts
from stepscope.stats.steps.staging import model_ops
from stepscope.vocab.profiler import STEPS_FRAME
from stepscope.vocab.pytorch import is_dataloader_next
from stepscope.vocab.tensorflow import GET_NEXT, is_iterator

# The loaders' own ``__next__``, as the sampler's frames name them: PyTorch's DataLoader
# iterator and tf.data's. The framework's profiler traces the fetch inside them
# (``enumerate(DataLoader)#...__next__``, ``IteratorGetNext``): they are the loader's fetch,
# not an iterator of the loop's own (decision 428).
LOADER_NEXT_FRAMES = frozenset({"__next__ (dataloader.py)", "__next__ (iterator_ops.py)"})

# The standard library's queues' ``get`` (`capture.fetch_sites`): a loop fed by a thread or
# process through a queue waits there for the batch another made (decision 730)
QUEUE_GET_FRAMES = frozenset({"get (queue.py)", "get (queues.py)"})

MODEL_SHARE = 0.5  # a candidate on this share of the model-work samples holds the model
MODEL_MIN = 2  # ... and on at least this many of them


@record
class Fetched:
    """The loop's Python iterator(s) and the time its steps spent getting batches from them."""

    function: tuple[str, ...] = ()  # "func (file)", most samples first
    stack: tuple[str, ...] = ()  # its most common stack, outermost first, ';'-joined
    samples: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # in the steps
    # over the steps: the untraced time counted as its fetch (0 where the limits already
    # count the fetch as input, as staged before the step's first model op)
    fetch_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    loop: str = ""  # the loop's frame, "func (file)"
    # per kept step: the time counted as input in the limits (zeros below MIN_SAMPLES)
    ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # per function: the loop's first fetches `capture.fetch_probe` timed, when they placed it
    # (decisions 433, 505: the samples missed the fetch, or saw it late); empty otherwise
    timed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # the steps' untraced gaps the fetch was counted in (sorted, disjoint) and the time of
    # each counted as the fetch; empty when none counts. The untraced place the host advice
    # names leaves that time out: it is input, not host (decision 482)
    gap_lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gap_hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gap_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # of each gap's fetch time, what lies where only a wait for a computation covers the step
    # (`fetch_share`, decision 1064); empty where not known (then in proportion)
    gap_waited_ns: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.function)

    @property
    def counted(self) -> bool:
        """Whether enough samples saw the fetch, or enough fetches were timed, for its time to
        count as input."""
        return int(self.samples.sum()) >= MIN_SAMPLES or int(self.timed.sum()) >= MODEL_MIN

    def from_queue(self) -> bool:
        """Whether the loop's main fetch is a standard-library queue's ``get``: the batch is
        made by another thread or process, and the step waits for it there."""
        return bool(self.function) and self.function[0] in QUEUE_GET_FRAMES

    def source(self) -> str:
        """What the loop gets its batches from, in words, before the function's name: "the
        loop's Python iterator" or, for a queue's ``get``, "a queue another thread or
        process fills,"."""
        if self.from_queue():
            return "a queue another thread or process fills,"
        return "the loop's Python iterator"

    def was_timed(self, k: int) -> bool:
        """Whether the probe's timed fetches, not the samples, placed function ``k``."""
        return len(self.timed) > k and bool(self.timed[k])

    def evidence(self, k: int) -> str:
        """``12 samples``, or ``its first 4 fetches timed`` when the probe placed the fetch."""
        if self.was_timed(k):
            return f"its first {int(self.timed[k])} fetches timed"
        return f"{int(self.samples[k])} samples"

    def describe(self, k: int, step_ns: int) -> str:
        """``batches (train.py) 41.2% of the step time (12 samples)``; the evidence alone when
        none of its time was untraced (counted as staged input); too few samples below
        `MIN_SAMPLES`."""
        n = int(self.samples[k])
        if n < MIN_SAMPLES and not self.was_timed(k):
            return f"{self.function[k]}: too few samples (n={n})"
        if not self.fetch_ns[k] or not step_ns:
            return f"{self.function[k]} ({self.evidence(k)})"
        pct = 100.0 * float(self.fetch_ns[k]) / step_ns
        return f"{self.function[k]} {pct:.1f}% of the step time ({self.evidence(k)})"


def _probed_loop_depth(profile: Profile, thread_lines: list[int], shared: list[str]) -> int:
    """How many of the frames ``shared`` (outermost first) reach the deepest one whose loop
    `capture.fetch_probe` timed; 0 when it timed none of them."""
    ev = probe_events(profile, thread_lines)
    if not len(ev):
        return 0
    ids = np.unique(profile.stat_at("loop", ev).string_ids()).tolist()
    probed = {profile.strings[i] for i in ids if i >= 0}
    return max((d + 1 for d, frame in enumerate(shared) if frame in probed), default=0)


def timed_fetches(
    profile: Profile, thread_lines: list[int], loop: str
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per frame entered for the next item of the loop ``loop`` ("func (file)") on the
    threads ``thread_lines``: the fetches `capture.fetch_probe` timed, (start, end) sorted."""
    ev = probe_events(profile, thread_lines)
    if not len(ev):
        return {}
    loops = profile.stat_at("loop", ev).string_ids()
    ev = ev[loops == profile.strings.id_of(loop)]
    ev = ev[np.argsort(profile.start_ns[ev], kind="stable")]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name_id in np.unique(profile.name[ev]).tolist():
        mine = ev[profile.name[ev] == name_id]
        out[profile.strings[name_id]] = (profile.start_ns[mine], profile.end_at(mine))
    return out


def _holding(lo: np.ndarray, hi: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """How many of the intervals (sorted, disjoint) hold one of the events wholly inside."""
    k = np.searchsorted(lo, start, "right") - 1
    ok = k >= 0
    ok[ok] = end[ok] <= hi[k[ok]]
    return len(np.unique(k[ok]))


def _hold_the_model(lo: np.ndarray, hi: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Whether timed fetches (sorted, disjoint) hold the model's work (the events ``start``,
    ``end``): at least `MODEL_MIN` and `MODEL_SHARE` of them hold a model op wholly inside
    (a generator that is the training loop)."""
    holding = _holding(lo, hi, start, end)
    return holding >= MODEL_MIN and holding >= MODEL_SHARE * len(lo)


def _not_the_model(
    profile: Profile,
    work: np.ndarray,
    at: np.ndarray,
    exact: np.ndarray,
    inverse: np.ndarray,
    under: list[str],
    named: list[str],
    timed: dict[str, tuple[np.ndarray, np.ndarray]],
) -> list[str]:
    """``named`` without the frames under the loop that hold the step's model work (the
    events ``work``; a generator that IS the training loop). A frame whose fetches were
    timed (``timed``) holds it when at least `MODEL_SHARE` and `MODEL_MIN` of them hold a
    model op wholly inside; else from the samples inside the model work (of those at their
    own time, ``exact``: a run spread over several steps puts its others anywhere in them):
    at least `MODEL_SHARE` and `MODEL_MIN` of them have that frame right under the loop's."""
    tops = {u for u, n in zip(under, named, strict=True) if n}
    # decision 382: the trace's own ops inside the timed fetches, not samples that land in
    # them (a small model's ops were seen by 0-1 samples in 60 steps on a quiet machine);
    # one timed fetch is no verdict (the probe's budget can end in the first iteration, a
    # torch.compile of the model inside it)
    timed = {k: v for k, v in timed.items() if len(v[0]) >= MODEL_MIN}
    start, end = profile.start_ns[work], profile.end_at(work)
    for top in tops & set(timed):
        if _hold_the_model(*timed[top], start, end):
            named = [n if u != top else "" for u, n in zip(under, named, strict=True)]
    tops -= set(timed)
    lo, hi = merge(start, end)
    inside = _inside(lo, hi, at) & exact
    if not inside.any() or not tops:
        return named
    held = np.array(under, dtype=object)[inverse[inside]]
    for top in tops:
        # one sample is no verdict: the framework's clock and the sampler's agree to a
        # fraction of a millisecond, and a fetch sample next to a model op falls in it now
        # and then (at most 1 in 5 PyTorch runs under load; a generator that was the
        # training loop had 3 to 30)
        mine = int((held == top).sum())
        if mine >= MODEL_MIN and mine >= MODEL_SHARE * len(held):
            named = [n if u != top else "" for u, n in zip(under, named, strict=True)]
    return named


def _model_work(profile: Profile, thread_lines: list[int]) -> np.ndarray:
    """The model ops of the loop's thread(s), counted in the breakdown or not: TensorFlow's
    are runtime spans the breakdown leaves to the op inside (``EagerLocalExecute: MatMul``,
    a tf.function call's span), and a generator that is the training loop holds them."""
    parts = [np.zeros(0, np.int64)]
    for t in sorted({t for t in thread_lines if t >= 0}):
        sl = profile.events_of_line(profile.lines[t])
        parts.append(np.arange(sl.start, sl.stop, dtype=np.int64))
    ev = np.concatenate(parts)
    return ev[model_ops(profile, ev)]


def _traced_loader_fetch(name: str) -> bool:
    """A framework's traced fetch of a loader's batch: the DataLoader's ``__next__`` as the
    PyTorch profiler records it, tf.data's get-next op or iterator stage."""
    return is_dataloader_next(name) or is_iterator(name) or GET_NEXT.lower() in name.lower()


def _not_a_traced_loader(profile: Profile, traced: np.ndarray, named: list[str]) -> list[str]:
    """``named`` without the loaders' own ``__next__`` (`LOADER_NEXT_FRAMES`) when the
    loop's thread has the framework's trace of its fetch: the samples in it are that traced
    fetch, input already, and those near it (the sampler's clock is a sample late at times)
    would count it twice as a Python iterator of the loop's (decision 428). Without such a
    trace (a capture without the framework's profiler) the sampled fetch is the only one."""
    if not any(n in LOADER_NEXT_FRAMES for n in named) or not len(traced):
        return named
    ids = distinct_inverse(profile.name[traced].astype(np.int64))[0]
    if not any(_traced_loader_fetch(profile.strings[int(i)]) for i in ids.tolist()):
        return named
    return [n if n not in LOADER_NEXT_FRAMES else "" for n in named]


def _gap_places(
    profile: Profile,
    traced: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    covered_lo: np.ndarray,
    covered_hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The steps' untraced gaps (lo, hi, step, place): ``place`` numbers the pairs (traced
    event before, traced event after) by name, step bounds standing for their own."""
    g_lo, g_hi = subtract_sets(span_lo, span_hi, covered_lo, covered_hi)
    keep = g_hi > g_lo
    g_lo, g_hi = g_lo[keep], g_hi[keep]
    step = np.searchsorted(span_lo, g_lo, "right") - 1
    ends = profile.end_at(traced)
    by_end = np.argsort(ends, kind="stable")
    by_start = np.argsort(profile.start_ns[traced], kind="stable")
    k = np.searchsorted(ends[by_end], g_lo, "right") - 1
    j = np.searchsorted(profile.start_ns[traced][by_start], g_hi, "left")
    names = profile.name[traced].astype(np.int64)
    after = np.where(
        (k < 0) | (g_lo <= span_lo[step]),
        -1,
        names[by_end[np.clip(k, 0, None)]] if len(traced) else -1,
    )
    before = np.where(
        (j >= len(traced)) | (g_hi >= span_hi[step]),
        -2,
        names[by_start[np.clip(j, 0, max(len(traced) - 1, 0))]] if len(traced) else -2,
    )
    _, place = np.unique(np.stack([after, before], axis=1), axis=0, return_inverse=True)
    return g_lo, g_hi, step, place.reshape(-1)


def _loop_thread(
    profile: Profile, step_lines: tuple[int, ...], traced: np.ndarray, counted: np.ndarray
) -> tuple[list[int], np.ndarray]:
    """The sampler's lines of the loop's thread and that thread's counted events: the steps'
    threads; else, when the steps were found on a thread the sampler did not sample (a
    jitted JAX step inferred from XLA's client thread), the one thread it sampled (the one
    that called `stepscope.start`), if only one."""
    thread_of = sampled_thread_line(profile)
    lines = [ln for ln in range(len(profile.lines)) if thread_of[ln] in step_lines]
    if lines:
        return lines, traced
    sampled = [ln for ln in range(len(profile.lines)) if thread_of[ln] >= 0]
    if len({int(thread_of[ln]) for ln in sampled}) != 1:
        return [], traced
    thread = int(thread_of[sampled[0]])
    return sampled, np.flatnonzero(counted & (profile.line == thread))


@record
class TimedGaps:
    """The steps' untraced gaps as the loop's timed fetches (`capture.fetch_probe`) place the
    fetch in them: per iterator, the time of each gap counted as its fetch."""

    name: tuple[str, ...]  # "func (file)", the frame the loop entered for its next item
    count: np.ndarray  # int64 per iterator: its fetches timed
    ns: np.ndarray  # float (iterators x gaps): each gap's time counted as that one's fetch
    used: np.ndarray  # bool per gap: the fetch's share there is the timed fetches'
    waited: np.ndarray  # float (iterators x gaps): of ``ns``, the time in the gap's waited part


def _timed_gaps(
    profile: Profile,
    traced: np.ndarray,
    loop_lines: list[int],
    loop: str,
    gaps: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    named: frozenset[str] = frozenset(),
    waited: tuple[np.ndarray, np.ndarray] | None = None,
) -> TimedGaps | None:
    """The fetch placed by the loop's first fetches `capture.fetch_probe` timed. A callee
    with `MODEL_MIN` timed fetches that hold no model op is the loop's iterator; in the steps
    it was timed in, the share of each place's untraced gaps ("after A, before B") its
    fetches cover is that place's fetching share, counted in every step, but in the other
    steps' gaps of a place where those are `fetch_share.UNLIKE` times longer (median) than
    in the timed steps: there the first fetches were no sample of the rest (a queue or a loader's
    prefetched batches, filled before the loop, decision 730). None when no fetch
    qualifies. ``stepscope.steps``'s own generator counts only when it is in ``named`` (the
    samples named the user's iterator it drives): its fetch is traced input, and stepscope's
    frame is no iterator of the user's (decision 587). ``waited``: the steps' time only a wait
    for a computation covers, whose share is taken apart (`fetch_share`, decision 1064)."""
    timed = {
        name: merge(lo, hi)
        for name, (lo, hi) in timed_fetches(profile, loop_lines, loop).items()
        if len(lo) >= MODEL_MIN
        and name not in LOADER_NEXT_FRAMES
        and (name != STEPS_FRAME or name in named)
    }
    if not timed:
        return None
    work = np.union1d(traced[model_ops(profile, traced)], _model_work(profile, loop_lines))
    start, end = profile.start_ns[work], profile.end_at(work)
    for name in list(timed):
        if _hold_the_model(*timed[name], start, end):
            del timed[name]  # a generator that is the training loop
    g_lo, g_hi, g_step, place = gaps
    if not timed or not len(g_lo):
        return None
    n_places = int(place.max()) + 1
    length = g_hi - g_lo
    names = sorted(timed)
    ns = np.zeros((len(names), len(g_lo)))
    in_waited = np.zeros((len(names), len(g_lo)))
    used = np.zeros(len(g_lo), dtype=bool)
    for k, name in enumerate(names):
        lo, hi = timed[name]
        over = overlap_with(g_lo, g_hi, lo, hi)
        probed = np.isin(g_step, np.unique(g_step[over > 0]))  # the steps it was timed in
        seen = np.bincount(place[probed], weights=length[probed], minlength=n_places)
        parts = waited_parts(g_lo, g_hi, lo, hi, waited)
        ns[k], in_waited[k] = shared(length, over, parts, place, probed, n_places)
        far = unlike(length, place, g_step, probed, n_places)
        used |= (seen > 0)[place] & (probed | ~far[place])
    counts = np.array([len(timed[n][0]) for n in names], np.int64)
    return TimedGaps(tuple(names), counts, ns, used, in_waited)


def _timed_fetch_time(
    profile: Profile,
    traced: np.ndarray,
    loop_lines: list[int],
    loop: str,
    gaps: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n_steps: int,
    waited: tuple[np.ndarray, np.ndarray] | None = None,
) -> Fetched | None:
    """The fetch placed by the timed fetches alone (`_timed_gaps`), when no sample saw it
    (decision 433). The sampler, a Python thread, hardly gets the GIL while the loop runs
    pure Python (a generator decoding a batch): at load 6, none of 66 samples fell in a
    generator the script measured at 22% of its step. None when no fetch qualifies."""
    found = _timed_gaps(profile, traced, loop_lines, loop, gaps, waited=waited)
    if found is None:
        return None
    g_lo, g_hi, g_step, _ = gaps
    gap_ns = np.minimum(found.ns.sum(axis=0), g_hi - g_lo)
    in_waited = np.minimum(found.waited.sum(axis=0), gap_ns)
    per_step = np.bincount(g_step, weights=gap_ns, minlength=n_steps).round().astype(np.int64)
    fetch_ns = [round(float(x)) for x in found.ns.sum(axis=1)]
    order = sorted(range(len(found.name)), key=lambda i: (-fetch_ns[i], found.name[i]))
    return Fetched(
        tuple(found.name[i] for i in order),
        ("",) * len(order),
        np.zeros(len(order), np.int64),
        np.array([fetch_ns[i] for i in order], np.int64),
        loop,
        per_step,
        found.count[order],
        g_lo,
        g_hi,
        gap_ns.round().astype(np.int64),
        in_waited,
    )


def _sampled_names(
    under: list[str], named: list[str], inverse: np.ndarray, weight: np.ndarray
) -> dict[str, str]:
    """Per frame right under the loop's frame: the iterator the samples named for it (the
    innermost of its chain, `fetch_frames.fetch_names`), the most sampled one."""
    w = np.bincount(inverse, weights=weight, minlength=len(named))
    best: dict[str, tuple[float, str]] = {}
    for u, n, x in zip(under, named, w.tolist(), strict=True):
        if n and (u not in best or x > best[u][0]):
            best[u] = (x, n)
    return {u: n for u, (_, n) in best.items()}


def iterator_fetches(
    profile: Profile,
    step_lines: tuple[int, ...],
    traced: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    covered_lo: np.ndarray,
    covered_hi: np.ndarray,
    counted: np.ndarray | None = None,
    waited: tuple[np.ndarray, np.ndarray] | None = None,
) -> Fetched:
    """The loop's Python iterator(s) in the steps (spans sorted, disjoint) of the threads
    ``step_lines``, from the stack sampler, and each step's time getting a batch from them;
    ``traced``: the counted events of those threads; ``covered_*``: the steps' time the
    limits give to something other than "host" (sorted, disjoint); ``counted``: per event,
    whether it counts (for the loop's thread when the steps' is not sampled); ``waited``: the
    steps' time only a wait for a computation covers (sorted, disjoint), inside the gaps."""
    none = Fetched(ns=np.zeros(len(span_lo), np.int64))
    if not len(span_lo):
        return none
    own = counted if counted is not None else np.zeros(profile.n_events, dtype=bool)
    lines, loop_traced = _loop_thread(profile, step_lines, traced, own)
    if not lines:
        return none
    if loop_traced is not traced:  # the loop's own traced work is not the fetch either
        traced = loop_traced
        covered_lo, covered_hi = union_of(
            np.r_[covered_lo, profile.start_ns[traced]], np.r_[covered_hi, profile.end_at(traced)]
        )
    sample_ev, at, _, first = sample_points(profile, lines)
    # a run that began outside the steps says nothing about them (`functions_in_steps`)
    mine = (_step_of(span_lo, span_hi, at) >= 0) & (_step_of(span_lo, span_hi, first) >= 0)
    if not mine.any():
        return none
    weight = _since_previous(profile.line[sample_ev], at)[mine]
    sample_ev, at, first = sample_ev[mine], at[mine], first[mine]
    stack_ids = profile.stat_at("stack", sample_ev).string_ids().astype(np.int64)
    next_ids = profile.stat_at("next_frames", sample_ev).string_ids().astype(np.int64)
    keys, inverse = distinct_inverse(stack_ids * (1 << 32) + (next_ids + 1))
    strings = profile.strings
    frames = [stack_frames(strings[k >> 32]) if k >> 32 >= 0 else [] for k in keys.tolist()]
    low = [k & 0xFFFFFFFF for k in keys.tolist()]
    fetching = [fetch_depths(strings[v - 1]) if v else frozenset() for v in low]
    depth = loop_depth(frames, fetching)
    thread_of = sampled_thread_line(profile)
    loop_lines = [int(t) for t in thread_of[lines]]
    named = fetch_names(frames, fetching, depth)
    if not any(named):
        # Few samples, all in the model's work (a pure-Python fetch hardly gets the GIL to
        # the sampler), share the frames down to ``train()``: the loop is then the deepest
        # shared frame whose fetches the probe timed, when it timed one (decision 465).
        depth = _probed_loop_depth(profile, loop_lines, frames[0][:depth]) or depth
        named = fetch_names(frames, fetching, depth)
    loop = frames[0][depth - 1] if depth else ""
    if any(named):
        under = [f[depth] if len(f) > depth else "" for f in frames]
        work = np.union1d(traced[model_ops(profile, traced)], _model_work(profile, loop_lines))
        end = profile.end_at(sample_ev) - 1
        one_step = _step_of(span_lo, span_hi, end) == _step_of(span_lo, span_hi, first)
        timed = timed_fetches(profile, loop_lines, loop)
        exact = (at == first) | one_step
        named = _not_the_model(profile, work, at, exact, inverse, under, named, timed)
        named = _not_a_traced_loader(profile, traced, named)
    # the gaps the fetch may sit in (a fetch the limits already count, as input staged before
    # the step's first model op, lies in no gap)
    gaps = _gap_places(profile, traced, span_lo, span_hi, covered_lo, covered_hi)
    if not any(named):
        timed_only = _timed_fetch_time(
            profile, traced, loop_lines, loop, gaps, len(span_lo), waited
        )
        return timed_only or replace(none, loop=loop)
    g_lo, g_hi, g_step, place = gaps
    gap = _step_of(g_lo, g_hi, at)
    seen = gap >= 0
    name_of = np.array(named, dtype=object)[inverse]
    fetch = seen & (name_of != "")
    n_places = int(place.max()) + 1 if len(place) else 0
    length = g_hi - g_lo
    # each place's share of fetching, from the samples in its gaps
    w_all = np.bincount(place[gap[seen]], weights=weight[seen], minlength=n_places)
    w_fetch = np.bincount(place[gap[fetch]], weights=weight[fetch], minlength=n_places)
    share = np.divide(w_fetch, w_all, out=np.zeros(n_places), where=w_all > 0)
    gap_ns = length * share[place] if n_places else np.zeros(0)
    w_len = waited_parts(g_lo, g_hi, g_lo[:0], g_hi[:0], waited)[0]
    in_waited = gap_ns * np.divide(w_len, length, out=np.zeros(len(g_lo)), where=length > 0)
    # by function: every sample that saw it, and the gaps' time in proportion to its samples'
    # weight there, place by place
    rows = sorted({n for n in named if n})
    row_ns = np.zeros((len(rows), len(g_lo)))
    samples, stacks = [], []
    for k, r in enumerate(rows):
        seen_r = name_of == r
        samples.append(int(seen_r.sum()))
        in_gap = fetch & seen_r
        w_r = np.bincount(place[gap[in_gap]], weights=weight[in_gap], minlength=n_places)
        part = np.divide(w_r, w_fetch, out=np.zeros(n_places), where=w_fetch > 0)
        if n_places:
            row_ns[k] = part[place] * gap_ns
        ids = stack_ids[seen_r]
        ids = ids[ids >= 0]
        stacks.append(strings[int(np.bincount(ids).argmax())] if len(ids) else "")
    timed_count = np.zeros(len(rows), np.int64)
    alias = _sampled_names(under, named, inverse, weight)
    probed = _timed_gaps(profile, traced, loop_lines, loop, gaps, frozenset(alias), waited)
    if probed is not None:
        # Where the capture timed the loop's fetches, they place it, not the samples: the
        # sampler waits for the GIL while the loop runs pure Python, and takes its sample
        # when the thread lets go of it, so the loop's own Python after the step (metrics,
        # logging) is seen late, in the fetch that follows: 3 ms of bookkeeping before a
        # 6 ms generator read as input with it (decision 505).
        use = probed.used
        total = np.minimum(probed.ns.sum(axis=0), length)
        scale = np.divide(total, probed.ns.sum(axis=0), out=np.zeros(len(g_lo)), where=total > 0)
        gap_ns = np.where(use, total, gap_ns)
        in_waited = np.where(use, np.minimum(probed.waited.sum(axis=0) * scale, total), in_waited)
        row_ns[:, use] = 0.0
        for k, name in enumerate(probed.name):
            r = alias.get(name, name)  # ``tqdm``'s ``__iter__`` drives the user's generator
            if r not in rows:
                rows.append(r)
                samples.append(0)
                stacks.append("")
                row_ns = np.vstack([row_ns, np.zeros(len(g_lo))])
                timed_count = np.r_[timed_count, 0]
            j = rows.index(r)
            row_ns[j, use] += (probed.ns[k] * scale)[use]
            timed_count[j] += int(probed.count[k])
    per_step = np.bincount(g_step, weights=gap_ns, minlength=len(span_lo)).round().astype(np.int64)
    fetch_ns = [round(float(x)) for x in row_ns.sum(axis=1)]
    order = sorted(range(len(rows)), key=lambda i: (-samples[i], -fetch_ns[i], rows[i]))
    found = Fetched(
        tuple(rows[i] for i in order),
        tuple(stacks[i] for i in order),
        np.array([samples[i] for i in order], np.int64),
        np.array([fetch_ns[i] for i in order], np.int64),
        loop,
        per_step,
        timed_count[order] if probed is not None else np.zeros(0, np.int64),
        g_lo,
        g_hi,
        np.asarray(gap_ns).round().astype(np.int64),
        in_waited,
    )
    if found.counted:
        return found
    return replace(
        found,
        ns=np.zeros(len(span_lo), np.int64),
        gap_lo=none.gap_lo,
        gap_hi=none.gap_hi,
        gap_ns=none.gap_ns,
        gap_waited_ns=none.gap_waited_ns,
    )
