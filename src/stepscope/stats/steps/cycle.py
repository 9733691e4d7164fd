"""Where an inferred step begins and ends: at the user's iteration, not at the repeat chosen.

`stepscope.stats.steps.infer` finds the event that repeats once per step (often the largest
one, a backward pass or a compiled call); a loop's iteration begins elsewhere in that cycle
(the batch, the forward), and the time before the first repeat is in no step. A
``torch.compile`` loop's first forward compiles for seconds before its first backward: a
step per backward put that compile in no step and made each step "backward of k, forward
of k+1". Four rules fix the boundaries (decision 360):

1. Phase. When the capture began on the loop's thread (`began_on_line`: stepscope's
   ``start()`` was called there and recorded at once, the host-plane stat
   `vocab.profiler.STARTED_ON_THREAD_STAT`), its first iteration is whole, so the events of
   the cycle found just before the first repeat, in the cycle's order, are that
   iteration's start: the steps start at the earliest of them. The cycle's members are
   the top-level names found exactly once between every two repeats and nowhere else on
   the thread (a name also called before the loop cannot say where iteration 0 began).
   A capture that began mid-loop (the flight recorder's ring, a remote capture, a delayed
   start, another profiler's file) says nothing about where an iteration starts: its
   steps keep the repeat's own phase, as before.
2. Step 0 holds the work before its first member: with the capture begun on the loop's
   thread, step 0 starts at the thread's first traced top-level event (the profilers' own
   start/stop calls aside), so a compile that runs before the first member is in it; so is
   any setup code run between ``start()`` and the loop; or at the first fetch the capture's
   fetch probe timed there when that is earlier: a generator's first batch, made in
   untraced Python before the first traced op (decision 476). A loop over a DataLoader
   whose first iteration fetches before its lead begins step 0 at that batch's fetch
   instead, or at its pass's ``iter()`` just before it: what ran before (Lightning's
   sanity check and hooks, set-up code) is time before the first step, in no step, as the
   script that times its iterations leaves it (`stepscope.stats.steps.batch_fetch`,
   decision 606); and each later step begins at its own batch's fetch, not at the lead
   after it (decision 607). Never before ``start()`` returned (the host-plane stat
   `vocab.profiler.START_RETURNED_STAT`): what the thread did during the capture's own
   start-up (JAX's garbage collections) is in no step (decision 1048).
3. With the capture begun there (so stopped by the same thread's ``stop()``, between
   iterations or after the loop), the events from the last boundary are the last iteration:
   a step when it is whole (`stepscope.stats.steps.last_step`, decision 475: the common
   work but the next iteration's head, or the cycle's members in order, lasting half the
   same work's shortest elsewhere; or the work of an iteration run once before, its
   untraced end included, decision 608: traced work after it is said to be in no step). A
   capture stopped inside an iteration (``duration_ms``) leaves it out. Other captures keep
   N repeats as N - 1 steps, each bounded by observed events at both ends.
4. A period (other than step 0's) holding none of the most common step's work but its
   repeat's and lead's own is no step: the end of a pass over a DataLoader (the fetch that
   raises StopIteration, then the next iterator) trains on nothing (decision 413).

Where the loop fetches its batch from a Python iterator, the breakdown then moves each
step's start back from its lead to that fetch (`stepscope.stats.steps.fetch_bounds`,
decision 506): the lead is the batch's conversion at the fetch's end.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.host.own_work import profiler_work
from stepscope.stats.host.python_samples import probe_events
from stepscope.stats.steps.batch_fetch import batch_fetches, from_fetches, pass_start
from stepscope.stats.steps.epoch_start import from_iterators
from stepscope.stats.steps.last_step import Periods, last_iteration_end
from stepscope.stats.steps.last_wait import waited_end
from stepscope.stats.steps.loop_tail import sampled_tail
from stepscope.stats.steps.other_pass import alone_periods, own_ends
from stepscope.vocab import tensorflow, xla
from stepscope.vocab.profiler import START_RETURNED_STAT, STARTED_ON_THREAD_STAT
from stepscope.vocab.pytorch import OPTIMIZER_STEP_PREFIX

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # odd: a name's id times it is a well-spread hash


def work_before(names: np.ndarray) -> np.ndarray:
    """Per position of a thread's top-level events in time order (and one past the last):
    a hash of the names before it, summed, so that the events between two positions have
    the difference of their hashes (order aside) and their count the difference of
    positions."""
    with np.errstate(over="ignore"):
        hashed = names.astype(np.uint64) * _GOLDEN
        hashed ^= hashed >> np.uint64(29)
        return np.r_[np.uint64(0), np.cumsum(hashed, dtype=np.uint64)]


def released(profile: Profile, names: np.ndarray) -> np.ndarray:
    """Which of ``names`` (ids) free what Python dropped (TF's tensor handles, JAX's
    buffers), a mask: each runs where and when a last reference goes, so a loop's iterations
    hold more or fewer of them as the load moves the threads, and none is the loop's work."""
    kinds, kind_of = distinct_inverse(names)
    releases = {tensorflow.TENSOR_RELEASE, xla.PYTHON_GARBAGE}
    return np.array([profile.strings[int(k)] in releases for k in kinds.tolist()], bool)[kind_of]


def work_apart(names: np.ndarray, skip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`work_before` of the ``names`` (in time order) not skipped (``skip``: a mask), and
    per position (one past the last too) how many of those come before it: ``common_work``
    of that work at those counts compares periods without the skipped events."""
    return work_before(names[~skip]), np.r_[0, np.cumsum(~skip)]


def common_work(work: np.ndarray, position: np.ndarray) -> tuple[np.ndarray, int, int]:
    """For the periods between consecutive positions: which hold the most common work (a
    mask), that work's hash (as int64) and its event count."""
    count = np.diff(position)
    with np.errstate(over="ignore"):
        content = (work[position[1:]] - work[position[:-1]]).view(np.int64)
    kinds, inverse, seen = np.unique(
        np.stack([content, count]), axis=1, return_inverse=True, return_counts=True
    )
    common = int(np.argmax(seen))
    return inverse.reshape(-1) == common, int(kinds[0, common]), int(kinds[1, common])


def began_on_line(profile: Profile, line: int) -> bool:
    """Whether the capture began on this line's thread, recording at once: stepscope's
    ``start()`` called there (its first iteration, if it runs a loop, is whole)."""
    info = profile.lines[line]
    value = profile.planes[info.plane].stats.get(STARTED_ON_THREAD_STAT)
    return isinstance(value, int) and not isinstance(value, bool) and value == info.id


def _members(names: np.ndarray, pos: np.ndarray) -> list[int]:
    """The names (ids) found exactly once between every two consecutive repeats at ``pos``,
    in their order in the last period (the repeat's own name first)."""
    lo, hi = int(pos[0]), int(pos[-1])
    periods = len(pos) - 1
    kinds, kind_of = distinct_inverse(names[lo:hi])
    period = np.searchsorted(pos, np.arange(lo, hi), "right") - 1
    per = np.zeros((len(kinds), periods), np.int64)
    np.add.at(per, (kind_of, period), 1)
    # once between every two repeats, and nowhere else on the thread: a name also called
    # before the loop (setup, a garbage collection) cannot tell where iteration 0 began
    every, every_of = distinct_inverse(names)
    total = np.bincount(every_of)[np.searchsorted(every, kinds)]
    once = (per == 1).all(axis=1) & (total == len(pos))
    last = names[int(pos[-2]) : hi]
    order = []
    for name in last.tolist():
        k = int(np.searchsorted(kinds, name))
        if once[k] and name not in order:
            order.append(name)
    return order


def _first_member(names: np.ndarray, pos: np.ndarray, order: list[int]) -> int:
    """The position of the iteration's first member before the first repeat: walking back
    from it, the members met must be the cycle's last ones in reverse order (anything else
    is not this loop: setup code, another loop); the earliest one matched."""
    expect = len(order) - 1
    first = int(pos[0])
    member = set(order)
    for at in range(int(pos[0]) - 1, -1, -1):
        if expect <= 0:  # back at the repeat itself: a whole cycle matched
            break
        name = int(names[at])
        if name not in member:
            continue
        # a member the first iteration skipped (torch.compile's cache lookup runs from the
        # second one) is passed over; one met again, or the repeat itself, ends the walk
        found = order.index(name)
        if found == 0 or found > expect:
            break
        first, expect = at, found - 1
    return first


def _trains(profile: Profile, names: np.ndarray, pos: np.ndarray) -> np.ndarray | None:
    """Per iteration from each of ``pos`` (the last one's to the thread's end): whether it
    ran PyTorch's optimizer step, when most of them did (and not all): a Lightning fit over
    a DataLoader fetches its validation batches with the same ``__next__`` as its training
    batches, and its 6 validation batches an epoch were steps beside the 20 the script
    counted (decision 538); None otherwise (a loop without an optimizer's annotation, one
    that steps it every iteration, or every N-th: gradient accumulation, decision 535)."""
    ids = profile.strings.ids_matching(lambda s: s.startswith(OPTIMIZER_STEP_PREFIX))
    if not len(ids):
        return None
    at = np.flatnonzero(np.isin(names, ids))
    # an optimizer step before the first iteration's start (a capture begun between a fetch
    # and its opt.step()) is in no iteration: -1 would fail bincount
    k = np.searchsorted(pos, at, "right") - 1
    held = np.bincount(k[k >= 0], minlength=len(pos))
    ran = held > 0
    if ran.all() or 2 * int(ran[:-1].sum()) <= len(pos) - 1:
        return None
    return ran


def _without_work(
    names: np.ndarray, pos: np.ndarray, held: np.ndarray, own: set[int], freed: np.ndarray
) -> np.ndarray:
    """Which periods between consecutive ``pos`` (a mask) hold none of the step's work: no
    name of the most common period's (``held``, `common_work`) but the repeat's and the
    lead's own. A loop over a DataLoader for several passes calls its ``__next__`` once more
    at each pass's end (it raises StopIteration); from that call to the next pass's first
    fetch the loop makes its next iterator (and starts its workers) and runs no step: the
    script counts 60 iterations for 2 passes, the fetches make 61 periods. Never the first
    period: step 0 holds what ran before the loop (rule 2) (decision 413). The names that
    free what Python dropped (``freed``, per name: `released`) are no step's work: a
    ``tf.function`` loop's periods hold the call and its loss's handle freed, and a period
    whose handles another thread freed (load moves where the last reference goes) held the
    call alone and was no step (11 steps of 12, decision 1095)."""
    idle = np.zeros(len(pos) - 1, dtype=bool)
    if not held.any():
        return idle
    k = int(np.argmax(held))
    lo, hi = int(pos[k]), int(pos[k + 1])
    work = [n for n in distinct(names[lo:hi][~freed[lo:hi]]).tolist() if n not in own]
    if not work:
        return idle
    seen = np.r_[0, np.cumsum(np.isin(names, work))]
    idle[1:] = (seen[pos[2:]] - seen[pos[1:-1]]) == 0
    return idle


def _step_calls(
    profile: Profile, t: np.ndarray, names: np.ndarray, name_id: int, other: np.ndarray
) -> np.ndarray | None:
    """The positions among one thread's top-level events ``t`` (in time order) of the
    repeat's calls when it is a tf.function called from Python (stat
    `tensorflow.FUNCTION_CALL_STAT` on each), else None (`last_step`'s rule 3); not those
    ``other`` marks (another loop's)."""
    if profile.strings.id_of(tensorflow.FUNCTION_CALL_STAT) < 0:
        return None  # no such column in the profile
    at = np.flatnonzero((names == name_id) & ~other)
    if not profile.stat_at(tensorflow.FUNCTION_CALL_STAT, t[at]).present.all():
        return None
    return at


def _before_other_calls(
    periods: Periods, other: np.ndarray, calls: np.ndarray | None
) -> np.ndarray:
    """Per period between consecutive leads: where its step ends when it holds calls of
    another loop (``other``: a Keras fit's validation, run at each epoch's end by the
    training step's name) and its own iteration ends before them by `last_step`'s rules,
    else the largest int64. The validation, its compile and the iterators' deletions after
    it are in no step, as they are outside the script's training batches (decision 597)."""
    out = np.full(len(periods.pos) - 1, np.iinfo(np.int64).max, dtype=np.int64)
    if not other.any():
        return out
    holds = np.diff(np.searchsorted(np.flatnonzero(other), periods.pos)) > 0
    for k in np.flatnonzero(holds).tolist():
        if k == 0:
            continue  # step 0's warm-up holds what ran before the loop
        own = last_iteration_end(periods.upto(k), calls=calls)
        if own is not None:
            out[k] = own
    return out


def start_returned(profile: Profile, line: int) -> int | None:
    """When stepscope's ``start()`` returned on this line's thread (ns), or None: the capture's
    own start-up runs before it, and what the thread did then (JAX's garbage collection, 1.4
    ms of a plain loop's step 0) is no iteration's (decision 1048). Older captures lack it."""
    if not began_on_line(profile, line):
        return None
    value = profile.planes[profile.lines[line].plane].stats.get(START_RETURNED_STAT)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def first_fetch(profile: Profile, line: int) -> int | None:
    """The start (ns) of the first fetch `capture.fetch_probe` timed on this line's thread
    (the first times the frame that called ``start()`` asked an iterator for an item), or
    None. A generator's batch making is untraced Python: with the capture begun there, the
    loop's first iteration begins with that fetch, before the thread's first traced event
    (decision 476)."""
    ev = probe_events(profile, [line])
    return int(profile.start_ns[ev].min()) if len(ev) else None


def _work_after(start: np.ndarray, end: np.ndarray, traced: np.ndarray, last: int) -> list[str]:
    """The note for the traced work after the last step's end, before the capture stopped:
    the loop's last iteration did more than any before it (a checkpoint at its end only) or
    the code after the loop ran it, which nothing traced tells apart (decision 608)."""
    after = traced[start[traced] >= last]
    if not after.size:
        return []
    ms = (int(end[after].max()) - last) / 1e6
    return [
        f"{ms:.2f} ms of traced work after the last one (more work in the loop's last "
        "iteration than in any before, or code after the loop) in no step"
    ]


@record
class Iterations:
    """The inferred steps of one thread, and how they were placed."""

    start_ns: np.ndarray  # int64, per step
    end_ns: np.ndarray  # int64, per step
    lead: int  # the name (id) of the event starting each step
    bounds_ns: np.ndarray  # int64: the starts of every occurrence of ``lead`` used
    note: str  # for the description: what rules 2 and 3 did


def iterations(
    profile: Profile,
    line_top: np.ndarray,
    name_id: int,
    began_here: bool,
    stride: int = 1,
    apart: np.ndarray | None = None,
) -> Iterations:
    """The steps on one thread's top-level events ``line_top``, from the repeats of
    ``name_id`` (at least three), every ``stride``-th one from the first (a name called
    ``stride`` times an iteration: with the capture begun on this thread, its first call is
    iteration 0's first); ``apart``: calls of ``name_id`` that are another loop's (a Keras
    fit's validation, `functions.other_functions`), no repeats of this one."""
    t = line_top[np.argsort(profile.start_ns[line_top], kind="stable")]
    names = profile.name[t]
    start, end = profile.start_ns[t], profile.end_at(t)
    other = np.isin(t, apart) if apart is not None else np.zeros(len(t), bool)
    pos = np.flatnonzero((names == name_id) & ~other)[::stride]
    lead = name_id
    notes = []
    if began_here:
        order = _members(names, pos)
        if stride > 1:  # the repeat comes `stride` times a period: its phase's call leads
            order = [name_id, *order]
        first = _first_member(names, pos, order)
        if first < int(pos[0]):
            lead = int(names[first])
            # the lead's occurrence in each period (exactly one: it is a member)
            inside = np.flatnonzero(names[int(pos[0]) : int(pos[-1])] == lead) + int(pos[0])
            pos = np.r_[first, inside]
    work = work_before(names)
    held, common, count = common_work(work, pos)
    periods = Periods(names, start, end, pos, work, held, common, count)
    starts = start[pos[:-1]].copy()
    lead_pos = pos[:-1].copy()  # per step, its lead's position
    ends = own_ends(profile, periods)
    cut = int((ends < start[pos[1:]]).sum())
    if cut:
        notes.append(
            f"{cut} step{'s' if cut > 1 else ''} before another DataLoader's pass (validation "
            f"or evaluation) end{'' if cut > 1 else 's'} with {'their' if cut > 1 else 'its'} work"
        )
    calls = _step_calls(profile, t, names, name_id, other)
    before = _before_other_calls(periods, other, calls)
    cut = int((before < np.iinfo(np.int64).max).sum())
    if cut:
        ends = np.minimum(ends, before)
        notes.append(
            f"{cut} step{'s' if cut > 1 else ''} before another function's calls (validation "
            f"or evaluation) end{'' if cut > 1 else 's'} with {'their' if cut > 1 else 'its'} work"
        )
    idle = _without_work(names, pos, held, {lead, name_id}, released(profile, names))
    if idle.any():
        starts, ends, lead_pos = starts[~idle], ends[~idle], lead_pos[~idle]
        gaps = int(idle.sum())
        notes.append(f"{gaps} period{'s' if gaps > 1 else ''} without the steps' work left out")
    trains = _trains(profile, names, pos)
    untrained = ~trains[:-1][~idle] if trains is not None else None
    if trains is not None and untrained is not None and untrained.any():
        # a training iteration followed by one that trains nothing ends with its own work,
        # as the last iteration does: the validation loop's set-up after it is no step's
        for k in np.flatnonzero(~trains[:-1] & np.r_[False, trains[:-2]]).tolist():
            own = last_iteration_end(periods.upto(k - 1))
            at = int(np.searchsorted(starts, start[int(pos[k - 1])]))
            if own is not None and at < len(ends) and starts[at] == start[int(pos[k - 1])]:
                ends[at] = min(int(ends[at]), own)
        starts, ends, lead_pos = starts[~untrained], ends[~untrained], lead_pos[~untrained]
        gaps = int(untrained.sum())
        notes.append(
            f"{gaps} iteration{'s' if gaps > 1 else ''} without an optimizer step (validation "
            "or evaluation batches) left out"
        )
    if began_here:
        last_end = last_iteration_end(
            periods,
            alone=alone_periods(profile, names, pos, held),
            capture_end=profile.time_span_ns()[1],
            calls=calls,
        )
        if last_end is not None and trains is not None and not trains[-1]:
            last_end = None  # the last iteration trained nothing either
        own = profiler_work(profile)[t]
        traced = np.flatnonzero(~own)
        if last_end is not None:
            starts = np.r_[starts, start[int(pos[-1])]]
            later = start[traced][start[traced] >= last_end]
            limit = int(later.min()) if later.size else profile.time_span_ns()[1]
            waited = waited_end(profile, int(profile.line[t[0]]), periods, last_end, limit)
            if waited is not None:
                notes.append(
                    f"the last one ends with its work, then {(waited - last_end) / 1e6:.2f} ms"
                    " waiting for its computation (the compute threads' end)"
                )
                last_end = waited
            tail = sampled_tail(
                profile, int(profile.line[t[0]]), last_end, profile.time_span_ns()[1]
            )
            if tail is not None and tail.end_ns > last_end:
                said = "then" if waited is not None else "the last one ends with its work, then"
                notes.append(
                    f"{said} {(tail.end_ns - last_end) / 1e6:.2f} ms more of the loop's body,"
                    f" untraced (sampled: {tail.function})"
                )
                last_end = tail.end_ns
            elif waited is None:
                notes.append("the last one ends with its work")
            ends = np.r_[ends, last_end]
            lead_pos = np.r_[lead_pos, pos[-1]]
            notes.extend(_work_after(start, end, traced, last_end))
        batches = batch_fetches(profile, names, lead_pos, pos, held)
        if batches is not None:
            starts, ends, moved = from_fetches(start, starts, ends, batches)
            if moved:
                notes.append(
                    f"{moved} step{'s' if moved > 1 else ''} from {'their' if moved > 1 else 'its'}"
                    " batch's DataLoader fetch, before the lead"
                )
        fetch = first_fetch(profile, int(profile.line[t[0]]))
        if (
            fetch is not None
            and fetch < starts[0]
            and (not traced.size or fetch < start[traced[0]])
        ):
            starts[0] = fetch
            notes.append("step 0 from its batch's fetch (the capture began there)")
        elif batches is not None:
            # the loop's first batch: the set-up before it is no step's (decision 606)
            first = pass_start(profile, names, own, int(batches[0]))
            starts[0] = start[first]
            setup = int(start[first] - start[traced[0]]) if traced.size else 0
            if setup > 0:
                notes.append(
                    f"step 0 from its batch's fetch, after {setup / 1e6:.2f} ms of set-up "
                    "(in no step)"
                )
        elif traced.size and start[traced[0]] < starts[0]:
            starts[0] = start[traced[0]]
            notes.append("step 0 from the thread's first event (the capture began there)")
        returned = start_returned(profile, int(profile.line[t[0]]))
        if returned is not None and starts[0] < returned < ends[0]:
            # the thread's first events were the capture's own start-up (decision 1048)
            notes = [n for n in notes if not n.startswith("step 0 from the thread's first")]
            notes.append(
                f"step 0 from where stepscope.start() returned, after "
                f"{(returned - int(starts[0])) / 1e6:.2f} ms of the capture's start-up (in no step)"
            )
            starts[0] = returned
    starts, moved = from_iterators(profile, t, starts, ends)
    if moved:
        notes.append(
            f"the first step of {moved} later epoch{'s' if moved > 1 else ''} from its "
            "DataLoader's iter() (the workers' start)"
        )
    return Iterations(
        starts.astype(np.int64), ends.astype(np.int64), lead, start[pos].copy(), "; ".join(notes)
    )
