"""Steps of a profile without step markers, inferred from the repeating structure of the trace.

A training loop repeats: on the thread that drives it, the same top-level event (a
``tf.function`` call, a ``multi_step_on_iterator``, a DataLoader ``__next__``, an optimizer
step) comes back once per step at a steady period. Each (thread, name) pair of top-level
events with at least three occurrences is a candidate; it qualifies when its periods are
regular: periods within [0.5, 2] x the median cover at least half of the time between its
first and last occurrence (one slow step is fine; an op that runs many times inside a step
and then waits is not), or the same work fills them: periods holding the same top-level
events of the thread (the same names, as often, beside the candidate's own) cover at least
half of that time. A loop on a busy machine has steps of 20 to 250 ms, no steady period, and
the same fetch and ops in every one; an op in bursts has between two of its calls nothing
else, or another thing each time. A call alone on its thread (one tf.function per iteration)
qualifies when its share of its period is steady: the load stretches the call and the
Python around it together (`lone_call`, decision 741). A leading run of periods each over
10x the median (a first iteration that compiles: 9.8 s against 2 ms) is left out of that
judgement (decision 361).
A name called k times an iteration, with other work between its calls (TF eager's
``TFE_Py_ExecuteCancelable``: forward, then gradient), is judged on every k-th call when the
periods from those hold the same work far more often (`_stride`, decision 369).
A candidate judged without its warm-up must keep its rhythm through the rest of the
thread's work (`_lasts`, decision 411: a burst after a long start is not a loop), and one
whose periods each take several of the loop's batches is a multiple of its iteration, not
a step (`_takes_batches`, decision 410: a sampler's op once a pass over the data), and so is
one whose periods each take several calls of another candidate naming the model's work, itself
none of it (`_without_multiples`, decision 726: a host read of the loss every 10 iterations).

Among qualifying candidates the coarsest mean period wins (a per-step event over per-layer ones),
periods within 1.2x of the coarsest being the same granularity; among those, events that
wait for input (a step starts by fetching its batch), then events that fill more of their
period (a step function rather than a launch call), then more total time (`_best`). The
thread with the most ``_r`` roots is tried first; else the thread the capture began on (the
user's loop: decision 368), then the busiest one, collectives aside; other host threads only
when none of these has a candidate. Step k is the window from the k-th
occurrence to the next one, so N occurrences give N - 1 steps, each bounded by observed
events at both ends; when the capture began on the loop's thread the steps are its
iterations instead (`stepscope.stats.steps.cycle`).
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.model import Profile
from stepscope.stats.events import (
    host_lines,
    is_input_wait_name,
    loader_worker_lines,
    tf_data_lines,
)
from stepscope.stats.nesting import nesting_parents
from stepscope.stats.steps.accumulation import optimizer_steps
from stepscope.stats.steps.cycle import (
    began_on_line,
    common_work,
    iterations,
    released,
    work_apart,
    work_before,
)
from stepscope.stats.steps.functions import (
    Spans,
    clear_of,
    other_calls_note,
    other_functions,
    other_loop_spans,
)
from stepscope.stats.steps.lone_call import lone_call_steady
from stepscope.stats.steps.slow_periods import holds_the_common_work, phases_of
from stepscope.stats.steps.staging import model_op_names
from stepscope.stats.steps.types import NO_MARKERS_TAIL, StepMarkers
from stepscope.vocab import tensorflow as tf_names
from stepscope.vocab.collectives import is_host_collective

MIN_OCCURRENCES = 3
REGULAR_SHARE = 0.5
OUTLIER_PERIOD = 10.0  # x the median period: a warm-up, not the loop's rhythm
SAME_PERIOD = 1.2  # periods within this ratio are the same granularity
MAX_STRIDE = 8  # calls of one name per iteration looked for (decision 369)
STRIDE_SHARE = 0.75  # of the periods at a stride: the most common work's, at least
STRIDE_GAIN = 0.25  # ... and that much more than at every call
# of the traced time the candidate covering the most covers: a candidate covering less is
# no loop of the thread (Lightning's set-up ``aten::eq``: 28.9 ms, 0.5% of the fetch's);
# two loops of one thread one after the other (24 and 50 ms of work) both stay candidates
COVER_SHARE = 0.1
# a name whose periods are this share (by count) of back-to-back calls this much shorter than
# the median comes in bursts: no step's rhythm (decision 710)
BURST_SHARE = 1 / 3
BURST_PERIOD = 0.1


def _main_line(profile: Profile, top: np.ndarray) -> int | None:
    """The thread with the most ``_r`` roots, else the one whose top-level events take the
    most time (the loop's driver: an optimizer thread or a launch thread is busy in bursts),
    collectives left out: a communication thread (gloo's) of a rank that waits for another
    is busier than the loop's, in all-reduces that start in the middle of its steps."""
    roots = profile.stat("_r").present
    if roots.any():
        # on the threads ``top`` is of: tf.data's map functions are roots too (decision 466)
        mine = np.zeros(len(profile.lines), bool)
        mine[profile.line[top]] = True
        host = mine[profile.line] & roots
        if host.any():
            return int(np.bincount(profile.line[host]).argmax())
    if not top.size:
        return None
    names = profile.name[top]
    kinds, kind_of = distinct_inverse(names)
    talk = np.array([is_host_collective(profile.strings[int(k)]) for k in kinds.tolist()])
    work = np.where(talk[kind_of], 0, profile.dur_ns[top])
    if not work.any():
        work = profile.dur_ns[top]
    return int(np.bincount(profile.line[top], weights=work).argmax())


def _first_lines(profile: Profile, top: np.ndarray) -> list[int]:
    """The threads tried first, in order: the one with the most ``_r`` roots; else the one
    the capture began on, then the busiest. A loop that dispatches its work to other
    threads (a jitted call runs on XLA's client threads) traces less time on its own thread
    than they do, and their repeats (one execution per several iterations, at irregular
    periods of the same work) are no iterations (decision 368)."""
    main = _main_line(profile, top)
    if main is None or profile.stat("_r").present.any():
        return [] if main is None else [main]
    began = [k for k in distinct(profile.line[top]).tolist() if began_on_line(profile, k)]
    return [*began, *([main] if main not in began else [])]


Candidate = tuple[tuple[float, int, float, int], int, np.ndarray, int, int]


def _candidates(profile: Profile, top: np.ndarray) -> list[Candidate]:
    """Qualifying (score, name id, sorted starts, line, stride) among the top-level events
    ``top``; the starts are every ``stride``-th call's (`_stride`)."""
    out: list[Candidate] = []
    if top.size < MIN_OCCURRENCES:
        return out
    by_start = np.argsort(profile.start_ns[top], kind="stable")
    in_time = profile.name[top[by_start]]
    work = work_before(in_time)
    steady = work_apart(in_time, released(profile, in_time))
    position = np.empty(len(top), np.int64)
    position[by_start] = np.arange(len(top))
    order = np.lexsort((profile.start_ns[top], profile.name[top]))
    top, position = top[order], position[order]
    names = profile.name[top]
    bounds = np.flatnonzero(np.r_[True, names[1:] != names[:-1], True])
    fetches = _fetches(profile, top, names, bounds)
    thread = (profile.start_ns[top], profile.dur_ns[top])
    builds = _graph_buildings(profile, top)
    covers = []
    # a Keras fit's validation calls its step function by the training one's name: the calls
    # of the other concrete function are another loop's, and a period holding them is no
    # iteration of any candidate of this thread: not judged, not in the mean (decision 597)
    apart, spans = _other_loops(profile, top, bounds)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if hi - lo < MIN_OCCURRENCES:
            continue
        calls, where = top[lo:hi], position[lo:hi]
        if apart.size:
            own = ~np.isin(calls, apart)
            calls, where = calls[own], where[own]
            if len(calls) < MIN_OCCURRENCES:
                continue
        stride = _stride(where, steady)
        events, where = calls[::stride], where[::stride]
        starts = profile.start_ns[events]
        periods = np.diff(starts)
        mine = clear_of(spans, starts)
        # a rhythm needs periods of its own: Keras's fit calls `tf.constant` twice at each
        # validation's start and end, once outside them, and that one period (45.5 ms, under
        # load) was the coarsest "steady" candidate: 7 steps for 64 batches (decision 642)
        if int(mine.sum()) < MIN_OCCURRENCES - 1:
            continue
        median = float(np.median(periods[mine]))
        if median <= 0 or _takes_batches(fetches, starts, int(names[lo])):
            continue
        if _in_bursts(periods, where, median):
            continue
        if builds.size and (np.diff(np.searchsorted(builds, starts)) > 0).all():
            continue  # the rhythm of TF's tracing: set-up, no loop (`_graph_buildings`)
        if not mine.all() or not _steady(periods, median):
            judged = _judged(periods) & mine
            if not (
                _steady(periods[judged], float(np.median(periods[judged])))
                or _same_work(work, in_time, where, periods, judged)
                or lone_call_steady(work, where, periods, profile.dur_ns[events], judged)
            ):
                continue
            if not _lasts(starts, judged, int(profile.end_at(events[-1:])[0]), thread):
                continue
        # The mean period, steady or not: a median is one of the periods, and two events that
        # come once a step have medians in different modes when the steps are of two kinds
        # (batches ready or waited for: 4.6 against 6.2 ms, decision 464); their means are
        # the same (the warm-up included: every candidate's mean holds it).
        granularity = float(periods[mine].mean())
        busy = int(profile.dur_ns[events].sum())
        duty = busy / float(starts[-1] - starts[0] + profile.dur_ns[events[-1]])
        name = profile.strings[int(names[lo])]
        score = (granularity, int(is_input_wait_name(name)), round(duty, 1), busy)
        out.append((score, int(names[lo]), starts, int(profile.line[events[0]]), stride))
        covers.append(_covered(starts, int(profile.end_at(events[-1:])[0]), thread))
    # the slow steps' own ops are steady in them alone: a phase of the loop, no loop
    phase = phases_of([c[2] for c in out])
    most = max(covers, default=0)
    kept = [
        c
        for c, inner, cover in zip(out, phase.tolist(), covers, strict=True)
        if not inner and cover >= COVER_SHARE * most
    ]
    return _without_multiples(profile, kept)


def _without_multiples(profile: Profile, found: list[Candidate]) -> list[Candidate]:
    """``found`` without the candidates whose periods each take several calls of the model:
    periods holding two or more of another candidate's calls, one that names the model's work
    (a jitted call, a module's forward, a layer's op), cover `REGULAR_SHARE` of their time,
    and the candidate itself is none of the model's. The loop's iteration runs the model
    once; a host read of the loss every N iterations (``float(loss)``: JAX's
    ``np.asarray(jax.Array)``), a metric or a checkpoint is coarser than it, and the coarsest
    rhythm would otherwise win: a jitted loop logging every 10 iterations read 10 steps of
    10 iterations (decision 726). `_takes_batches`' rule, with the model's calls for the
    loop's batches: a generator's fetch leaves no traced event to count."""
    ids = np.array([c[1] for c in found], np.int64)
    model = model_op_names(profile, ids)[ids] if len(ids) else np.zeros(0, dtype=bool)
    model |= np.array([tf_names.is_model_op(profile.strings[int(i)]) for i in ids], dtype=bool)
    calls = [c[2] for c, m in zip(found, model.tolist(), strict=True) if m]
    out = []
    for c, m in zip(found, model.tolist(), strict=True):
        if not m and any(_each_holds_several(c[2], f) for f in calls):
            continue
        out.append(c)
    return out


def _each_holds_several(starts: np.ndarray, calls: np.ndarray) -> bool:
    """Whether the periods from ``starts`` (sorted) holding two or more of ``calls`` (sorted)
    are `REGULAR_SHARE` of them and of their time: a few slow steps running a layer's op 60
    times (a transient straggler's, decision 500) are no multiple of the loop."""
    periods = np.diff(starts).astype(np.float64)
    several = np.diff(np.searchsorted(calls, starts)) >= 2
    return bool(
        several.sum() >= REGULAR_SHARE * len(periods)
        and periods[several].sum() >= REGULAR_SHARE * periods.sum()
    )


def _other_loops(profile: Profile, top: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, Spans]:
    """Among one thread's top-level events ``top`` (sorted by name, then start; ``bounds``
    the runs of one name): the tf.function calls that ran another concrete function than
    most calls of their name did (`functions.other_functions`), as event indexes, and where
    that other loop runs (`functions.other_loop_spans`, sorted)."""
    calls, los, his = [], [], []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if hi - lo >= MIN_OCCURRENCES:
            other = other_functions(profile, top[lo:hi])
            if other is not None:
                calls.append(top[lo:hi][other])
                begin, end = other_loop_spans(profile, top[lo:hi], other)
                los.append(begin)
                his.append(end)
    if not calls:
        empty = np.zeros(0, np.int64)
        return empty, (empty, empty)
    begin, end = np.concatenate(los), np.concatenate(his)
    order = np.argsort(begin, kind="stable")
    return np.concatenate(calls), (begin[order], end[order])


def _graph_buildings(profile: Profile, top: np.ndarray) -> np.ndarray:
    """The sorted starts of TF's top-level graph buildings among one thread's top-level
    events ``top``. A candidate each of whose periods holds one repeats with the tracing,
    not with a loop: Keras's ``model.predict`` traces its dataset and step functions three
    times, 20 and 30 ms apart, before its 40 batches; those three spans (and the conversions
    after each) were the coarsest candidate, covering 22% of the traced time the batches'
    ``one_step_on_data_distributed`` did (over decision 538's 10%), and made 2 steps of the
    script's 40 (decision 583). A function traced on its call (a loop's first step, or one
    that retraces every step) traces inside the call's span, nested: no top-level event."""
    kinds = distinct(profile.name[top]).tolist()
    tracing = [k for k in kinds if tf_names.is_graph_building(profile.strings[k])]
    return np.sort(profile.start_ns[top[np.isin(profile.name[top], tracing)]])


def _covered(starts: np.ndarray, last_end: int, thread: tuple[np.ndarray, np.ndarray]) -> int:
    """The traced time (ns) of the thread's top-level events (``thread``: their starts and
    durations) that start from a candidate's first call to its last call's end. A candidate
    covering under `COVER_SHARE` of the most any candidate covers is no loop of the thread:
    Lightning's set-up calls ``aten::eq`` three times in its first second, 1061 and 1.6 ms
    apart (two periods, "steady"), and the coarsest candidate made 2 steps of a fit whose
    script counted 40 (decision 538)."""
    begin, dur = thread
    within = (begin >= starts[0]) & (begin < last_end)
    return int(dur[within].sum())


def _best(found: list[Candidate]) -> Candidate:
    """The coarsest candidate: of those whose period is within `SAME_PERIOD` of the
    coarsest one's (the same granularity), the one that waits for input, then the one
    filling more of its period (to a tenth), then the busier; the first of equals. Within a
    ratio of the coarsest, not within a fixed log bucket: a loop's fetch every 19.1 ms
    (median) and its optimizer step every 19.4 ms fell on the two sides of a bucket's edge
    (1.2^92 ns), and the steps began mid-iteration, at the forward (decision 412)."""
    coarsest = max(c[0][0] for c in found)
    same = [c for c in found if c[0][0] * SAME_PERIOD >= coarsest]
    return max(same, key=lambda c: c[0][1:])


def _stride(position: np.ndarray, steady: tuple[np.ndarray, np.ndarray]) -> int:
    """How many calls of one name make a cycle of the loop: 1, or the smallest k up to
    `MAX_STRIDE` at which the periods from every k-th call (the first one's phase; at least
    `MIN_OCCURRENCES` of them: the cycle seen whole as often as a repeat must be) hold the
    most common work `STRIDE_SHARE` of the time and `STRIDE_GAIN` more often than from
    every call. Only a name with other work between every two of its calls: an op in bursts
    (calls back to back) is not a loop's cycle at any stride. A name called
    twice an iteration (TF eager's ``TFE_Py_ExecuteCancelable``: forward, then gradient)
    alternates two kinds of period, each half of them; every second call has the same
    iteration between. An event once a step, even with uneven work, loses at a stride: two
    periods together are the same work less often than one (decision 369).
    The work compared leaves out the releases of dropped references (``steady``:
    `cycle.work_apart` of the thread's names without them): a TF eager loop over a
    generator, loaded, deleted 0 to 4 tensor handles on its own thread an iteration as
    tf.data's thread took the rest, and its 6 ``tf.constant`` calls an iteration held the
    same work at every 6th call only 68% of the time: no stride, no step (decision 1003)."""
    work, at = steady
    kept = at[position]
    if (np.diff(position) < 2).any() or (np.diff(kept) < 1).any():
        return 1
    base = float(common_work(work, kept)[0].mean())
    for k in range(2, MAX_STRIDE + 1):
        if len(kept) < k * MIN_OCCURRENCES + 1:
            break
        share = float(common_work(work, kept[::k])[0].mean())
        if share >= max(STRIDE_SHARE, base + STRIDE_GAIN):
            return k
    return 1


def _fetches(
    profile: Profile, top: np.ndarray, names: np.ndarray, bounds: np.ndarray
) -> dict[int, np.ndarray]:
    """The loop's batch fetches among one thread's top-level events ``top`` (sorted by name,
    then start; ``bounds`` the runs of one name): each input-wait name's (a DataLoader's
    ``__next__``, TF's ``GetNext``) sorted starts, by name id."""
    out = {}
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if is_input_wait_name(profile.strings[int(names[lo])]):
            out[int(names[lo])] = profile.start_ns[top[lo:hi]]
    return out


def _takes_batches(fetches: dict[int, np.ndarray], starts: np.ndarray, name_id: int) -> bool:
    """Whether a candidate's periods (from its sorted ``starts``) are each several of the
    loop's iterations: periods that hold two or more fetches of one input-wait name cover
    `REGULAR_SHARE` of its time. The loop's iteration takes one batch; a name called once a
    pass over the data (the sampler's ``aten::randperm``), once every N steps (logging) or
    once per optimizer step of an accumulated gradient is coarser than it, and the coarsest
    rhythm would otherwise win (decision 410)."""
    periods = np.diff(starts).astype(np.float64)
    for name, fetch in fetches.items():
        if name == name_id:
            continue
        held = np.diff(np.searchsorted(fetch, starts))
        if periods[held >= 2].sum() >= REGULAR_SHARE * periods.sum():
            return True
    return False


def _lasts(
    starts: np.ndarray, judged: np.ndarray, last_end: int, thread: tuple[np.ndarray, np.ndarray]
) -> bool:
    """Whether a candidate judged without a leading warm-up (`_judged`) keeps its rhythm
    through the rest of the thread's work: of the traced time of the thread's top-level
    events (``thread``: their starts and durations) from its first call after the warm-up
    on, at least `REGULAR_SHARE` starts before its last call ends, each event counted up to
    one median period of the rhythm. A loop's first iteration may compile for seconds, then
    the same event comes every step until the loop ends; a name called once at the start,
    then in one burst after DataLoader workers took 1.4 s to start, is over long before the
    loop's work is. Traced time, not wall time: a jitted loop's steady steps last 0.2 ms
    each, and the 14 ms after it (the script printing, ``stop()``) are no work of the loop
    (decision 411). Up to a period each: a loop that goes on after a burst goes on in
    iterations, many events each near or under the period; one call lasting many periods
    is a thing done once at the work's end (Keras's fit deletes its dataset's iterator after
    its last batch: one ``TFE_DeleteTensorHandle`` of 158.55 ms against the 65.7 ms of 31
    batches 2.4 ms apart, and the fit read 16 steps of a worker thread's callback for its
    32, decision 595)."""
    if judged.all():
        return True
    first = int(starts[int(np.argmax(judged))])
    period = float(np.median(np.diff(starts)[judged]))
    begin, dur = thread
    counted = np.minimum(dur, period)
    after = begin >= first
    within = after & (begin < last_end)
    return bool(counted[within].sum() >= REGULAR_SHARE * counted[after].sum())


def _in_bursts(periods: np.ndarray, position: np.ndarray, median: float) -> bool:
    """Whether a name comes in bursts, not once a step: at least `BURST_SHARE` of its
    periods are calls back to back (no other top-level event of the thread between, at
    ``position`` in its time order) under `BURST_PERIOD` x the median period. JAX's
    ``PythonRefManager::CollectGarbage`` runs twice together, 0.1 ms apart, every few
    iterations of a TF eager loop; with one pair fewer short periods than long ones the
    median is a long one, the long ones cover the time, and the pairs were the coarsest
    "steady" candidate: 10 steps for the script's 60 (decision 710). A loop's own event has
    its step's work between two calls; one that is alone on its thread (a jitted step with
    its fetch untraced) has periods near the median, not a thousandth of it."""
    if not len(periods):
        return False
    burst = (np.diff(position) < 2) & (periods < BURST_PERIOD * median)
    return bool(int(burst.sum()) >= BURST_SHARE * len(periods))


def _steady(periods: np.ndarray, median: float) -> bool:
    """Whether periods within [0.5, 2] x their median, two at least, cover `REGULAR_SHARE`
    of the time. Two: the median of two periods is their mean, within half of twice the
    larger, so one period as long as a JAX loop's whole profile, beside one of 0.2 ms, was a
    rhythm alone (decision 682)."""
    regular = (periods >= 0.5 * median) & (periods <= 2 * median)
    return bool(int(regular.sum()) >= 2 and periods[regular].sum() >= REGULAR_SHARE * periods.sum())


def _same_work(
    work: np.ndarray,
    names: np.ndarray,
    position: np.ndarray,
    periods: np.ndarray,
    judged: np.ndarray,
) -> bool:
    """Whether the periods between consecutive occurrences (at ``position`` in time order;
    ``names``: the thread's top-level names in that order) that hold the most common work,
    and some work beside the occurrence itself, or that work and more (a few steps doing
    extra work, `slow_periods`), cover at least `REGULAR_SHARE` of the time of the
    ``judged`` periods (a mask: `_judged`)."""
    held, _, count = common_work(work, position)
    # the same work needs two periods doing it: of periods all different, the "most common"
    # is any one of them (decision 682)
    if count < 2 or int((held & judged).sum()) < 2:
        return False
    need = REGULAR_SHARE * periods[judged].sum()
    if periods[held & judged].sum() >= need:
        return True
    # A few slow steps doing more: most periods (by count) are the common one, and only
    # periods with more events can hold that work and more (most ops' hold fewer, and
    # need no counting).
    if 2 * int((held & judged).sum()) <= int(judged.sum()):
        return False
    room = held | (np.diff(position) > count)
    if periods[room & judged].sum() < need:
        return False
    more = holds_the_common_work(names, position, held)
    return bool(periods[more & judged].sum() >= need)


def _judged(periods: np.ndarray) -> np.ndarray:
    """Which periods a candidate's regularity is judged on (a mask): all but a leading run of
    periods each over `OUTLIER_PERIOD` x the median period (at most a quarter of them). A
    loop's first iterations compile or warm up (``torch.compile``, ``jax.jit``'s first call,
    ``tf.function`` tracing): one may last longer than all the others together and hold
    other work, which would disqualify the loop's own step event. Only leading periods: an
    op in bursts has long periods between its bursts, not before them."""
    mask = np.ones(len(periods), dtype=bool)
    limit = OUTLIER_PERIOD * float(np.median(periods))
    for k in range(len(periods) // 4):
        if periods[k] <= limit:
            break
        mask[k] = False
    return mask


def infer_steps(profile: Profile) -> StepMarkers | None:
    """Steps from the repeating structure of the host threads, or None when nothing repeats."""
    if profile.n_events == 0:
        return None
    # a DataLoader worker's batches repeat too, in another process, and tf.data's threads
    # run a map function per element: not the loop's steps (decision 466)
    threads = host_lines(profile) & ~loader_worker_lines(profile) & ~tf_data_lines(profile)
    host = threads[profile.line] & (profile.dur_ns > 0)
    events = np.flatnonzero(host)
    if events.size < MIN_OCCURRENCES:
        return None
    parent = nesting_parents(profile.line[events], profile.start_ns[events], profile.end_at(events))
    top = events[parent < 0]
    found = []
    for main in _first_lines(profile, top):
        found = _candidates(profile, top[profile.line[top] == main])
        if found:
            break
    if not found:
        for line in distinct(profile.line[top]).tolist():
            found += _candidates(profile, top[profile.line[top] == line])
    if not found:
        return None
    _, name_id, starts, line, stride = _best(found)
    repeats = profile.strings[name_id]
    on_line = top[profile.line[top] == line]
    calls = on_line[profile.name[on_line] == name_id]
    calls = calls[np.argsort(profile.start_ns[calls], kind="stable")]
    other = other_functions(profile, calls)
    apart = calls[other] if other is not None else None
    spans = other_loop_spans(profile, calls, other) if other is not None else None
    placed = iterations(profile, on_line, name_id, began_on_line(profile, line), stride, apart)
    count = len(placed.start_ns)
    periods = np.diff(placed.bounds_ns)
    if spans is not None:  # a period holding the other loop is no step's (decision 597)
        periods = periods[clear_of(spans, placed.bounds_ns)]
    warm = ""
    if len(periods) > 1:
        judged = _judged(periods)
        if not judged.all():
            first = ", ".join(f"{ns / 1e6:.1f}" for ns in periods[~judged].tolist())
            warm = f" after a first {first} ms"
            periods = periods[judged]
    median = float(np.median(periods)) if len(periods) else 0.0
    every = f"every {median / 1e6:.1f} ms{warm}"
    if len(periods) and not _steady(periods, median):
        more = _with_more_work(profile, on_line, name_id, stride)
        every = (
            f"every {float(periods.mean()) / 1e6:.1f} ms on average ({periods.min() / 1e6:.1f}"
            f" to {periods.max() / 1e6:.1f} ms apart, the same work each time"
            + (f", and more in {more} of them" if more else "")
            + f"){warm}"
        )
    name = profile.strings[placed.lead]
    text = f"{len(starts)} repeats of top-level event '{repeats}'"
    if stride > 1:
        text += f" (every {_nth(stride)} call: it comes {stride} times a cycle)"
    if placed.lead != name_id:
        per = f"repeat of '{repeats}'"
        if stride > 1:
            per = f"{stride} calls of '{repeats}', every {_nth(stride)} call"
        text = f"{count} iterations each starting at top-level event '{name}' (once per {per})"
    if placed.note:
        every += f"; {placed.note}"
    if other is not None:  # the other loop's batches, said (decision 643)
        every += other_calls_note(profile, calls, other)
    description = f"{text} {every}{NO_MARKERS_TAIL}"
    starts_ns, ends_ns = placed.start_ns, placed.end_ns
    grouped = optimizer_steps(profile, line, starts_ns, ends_ns)
    if grouped is not None:
        # the user's step is the optimizer's: its micro-batches' iterations are one step
        starts_ns, ends_ns = starts_ns[grouped.first], ends_ns[grouped.last]
        count = len(starts_ns)
        out = grouped.left_out
        rest = f"; {out} iteration{'s' if out > 1 else ''} in no whole group left out"
        rest = rest if out else ""
        description = (
            f"{count} optimizer steps of {grouped.period} iterations each: gradient "
            f"accumulation, '{grouped.name}' ran in every {_nth(grouped.period)} iteration{rest} "
            f"(the iterations: {description})"
        )
    return StepMarkers(
        "inferred",
        description,
        np.full(count, -1, dtype=np.int64),
        np.arange(count, dtype=np.int64),
        tuple(f"step {k}" for k in range(count)),
        starts_ns,
        ends_ns,
        use_groups=False,
        drop_incomplete=False,
        lines=(line,),
    )


def _with_more_work(profile: Profile, on_line: np.ndarray, name_id: int, stride: int) -> int:
    """How many periods of the repeats of ``name_id`` (every ``stride``-th) among one
    thread's top-level events ``on_line`` hold the most common period's work and more: the
    slow steps a description must not call the same work (`slow_periods`)."""
    names = profile.name[on_line[np.argsort(profile.start_ns[on_line], kind="stable")]]
    position = np.flatnonzero(names == name_id)[::stride]
    held = common_work(work_before(names), position)[0]
    return int((holds_the_common_work(names, position, held) & ~held).sum())


def _nth(k: int) -> str:
    return f"{k}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(k if k < 20 else k % 10, 'th') }"
