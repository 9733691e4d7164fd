"""Whether the last iteration of a loop captured from its start is a step, and where it ends.

Inferred steps run from one occurrence of the step's lead event to the next
(`stepscope.stats.steps.cycle`), so N leads make N - 1 steps and the events after the last
lead are in none. When the capture began on the loop's thread (so ``stop()`` ran there too,
between iterations or after the loop) those events are the loop's last iteration, whole,
unless the capture was stopped inside it; a serious profiler shows it: the script counted
it. Each period between two leads holds one iteration's work, shifted by the lead's phase:
the work from the lead to the iteration's end, then the next iteration's work before its
lead (its "head": the batch's fetch, untraced, and any op it calls before the lead). The last
iteration has no next one, so it lacks that head in events and in time. It is a step when
(decision 475):

1. **The same work** (`_same_work`): its first events, joined by the head (the events just
   before the first lead, the same as each such period ends with), are the work of a kind of
   period the loop ran at least twice (the same names, as many), the longest such kind first,
   then the most common. ``h`` = 0 is decision 360's rule; ``h`` > 0 a loop whose first op
   comes twice an iteration (``x @ w1``, then ``h @ w2``) and so is no member of the cycle:
   the lead is the one after it. The longest first: a loop that accumulates gradients runs
   its optimizer every N-th iteration, the last one among them, and the most common work
   (the iterations without it) ended the last step before its ``Optimizer.step`` (decision
   535).
   For the profile's last iteration a kind run once counts too (a checkpoint and an
   evaluation at step 29 of 60 and again at 59), but not step 0's period alone, nor a kind
   whose period begins a new pass over a DataLoader (the epoch's edge: the validation after
   the last epoch, the same as epoch 0's, is no iteration's); and it ends as much later than
   its traced work as that kind's untraced end is longer than the common work's (a
   checkpoint's file written after ``torch.save``'s last traced op), never past the next
   event or the capture's end (decision 608). Not when an event of it after the lead lasts
   more than three times that kind's median period (`_outlasts`, decisions 1046, 1090): a
   tf.data iterator's deletion after a plain loop's last call comes after the same names a
   period holds.
2. Else **the cycle's members in order** (`_members_in_order`): each name found exactly once
   in every period is found in the last one, in the cycle's order, and every name in it up to
   the last member is found in the periods. The iterations of a loop whose work varies (an
   inner loop run until a deadline, a metric logged every N steps) are not all the same work,
   and the last one is often not the most common.

3. Else, when the repeat is a ``tf.function`` called from Python (`_step_call`: the span
   TF names after the Python function, stat ``tf_function_call``), **its last call**: each
   call runs one execution's batches whole inside it, and the last one ran the last batch.
   Keras's ``predict`` fetches each batch before its call (``next()``, an eager op), then
   frees the batch before (a handle's deletion), then calls its step function; after the
   last call the fetch finds the data's end and Keras concatenates the outputs: neither
   the same work nor the members in order, and the last of the script's 32 batches was in
   no step (decision 596). The iteration ends with that call.
4. Else **rule 1 with the head the periods end with** (decision 1041): the first lead may come
   after other work than every later one (a torch.compile'd model's first call compiles
   where the later ones look their graph up, ``TorchDynamo Cache Lookup``; a JAX loop's
   prefetch thread starting): rule 1's head, read before the first lead, is then no period's,
   and rule 2 wants the head, a member of every period, in the last iteration, which lacks
   it. Last, so rules 1-3 answer as before wherever they did.

Any way its traced work must last at least half as long as the same part of the other
periods does in the shortest of them (decision 360's jitted call that returned at once, 0.03
ms against 1.8 ms, its work left running on other threads, is no step). Not half the median
period: the head, which the last iteration lacks, may be most of it (a generator's 6 ms of
batch making in an 8.8 ms step); and not half the median of the same work: a loaded machine
stretches some of 1 ms calls to 6 ms (a `tf.function` loop's, median 1.6 ms) and the last
one, 0.8 ms, was then no step. Load stretches work, never shortens it: the shortest is the
one it stretched least.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.records import record

HALF = 0.5  # the last iteration's traced work, at least, against the same work's shortest
# an event of the last iteration this many times the kind's median period is no iteration's
# work (decision 1090: a JAX loop's last read of its loss ran 0.85-1.15x the reads' median)
OUTLASTS = 3.0


@record
class Periods:
    """One thread's top-level events in time order and the periods between its leads: what
    the rules for an iteration's end read (`cycle.iterations` makes it)."""

    names: np.ndarray  # the events' name ids
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns
    pos: np.ndarray  # the leads' positions: period k runs from pos[k] to pos[k + 1]
    work: np.ndarray  # `cycle.work_before(names)`
    held: np.ndarray  # per period: whether it holds the most common work (`cycle.common_work`)
    common: int  # that work's hash
    count: int  # its event count

    def upto(self, k: int) -> Periods:
        """The periods before lead ``k``: the iteration that lead ``k`` begins is then the
        last one (an iteration followed by another loop's work ends by the last one's rules)."""
        return replace(self, pos=self.pos[: k + 1], held=self.held[:k])


def last_iteration_end(
    periods: Periods,
    alone: np.ndarray | None = None,
    capture_end: int | None = None,
    calls: np.ndarray | None = None,
) -> int | None:
    """The end (ns) of the last iteration, from the last lead at ``periods.pos[-1]`` on, or
    None when it is no whole step. ``alone``: given for the profile's last iteration, per
    period whether its work may be the last iteration's though the loop ran it once (a
    checkpoint and an evaluation at step 29 of 60, again at 59), and whether a kind of
    period other than the most common may be (a period holding a new pass over a DataLoader,
    the epoch's edge, never: the last iteration followed by the same validation as epoch 0's
    would hold it, with the next epoch's first batch as head); ``capture_end``: given for
    the profile's last iteration, its end (ns) at the latest, when nothing on the thread
    follows it: it then ends as late as the same work's untraced end ran elsewhere beyond
    the most common work's (`_extra_tail`); ``calls``: the sorted positions of the repeat's
    calls when it is a tf.function called from Python (rule 3)."""
    names, start, end, pos = periods.names, periods.start, periods.end, periods.pos
    work, held, common, count = periods.work, periods.held, periods.common, periods.count
    kinds = _kinds(pos, work, held, common, count, alone)

    def same_work(from_periods: bool) -> tuple[bool, int | None]:
        for kind, hashed, n_kind in kinds:
            found = _same_work(pos, work, kind, hashed, n_kind, len(names), from_periods)
            if found is not None and not _outlasts(start, end, pos, kind, found):
                q, n = int(pos[-1]), found
                firsts = pos[:-1][kind]
                spans = _spans(start, end, firsts, np.full(int(kind.sum()), n))
                finish = _if_long_enough(start, end, q, q + n, spans)
                if finish is None or capture_end is None:
                    return True, finish
                limit = int(start[q + n]) if q + n < len(names) else capture_end
                extra = _extra_tail(start, end, pos[:-1], kind, held, n, n_kind - n, count)
                return True, max(finish, min(finish + extra, limit))
        return False, None

    matched, finish = same_work(False)
    if matched:
        return finish
    upto = _members_in_order(names, pos, _members(names, pos))
    if upto is not None:
        last, each_last = upto
        spans = _spans(start, end, pos[:-1], each_last - pos[:-1] + 1)
        return _if_long_enough(start, end, int(pos[-1]), last + 1, spans)
    if calls is not None:
        return _step_call(start, end, pos, calls)
    # rule 4 (decision 1041): rule 1 with the head every such period ends with, where the
    # first lead came after other work (a torch.compile'd model's first call compiling, a
    # prefetch thread starting): the last iteration lacks its head, a member of every
    # period, so rule 2 failed too, and the script's last step was in no step
    return same_work(True)[1]


def _kinds(
    pos: np.ndarray,
    work: np.ndarray,
    held: np.ndarray,
    common: int,
    count: int,
    alone: np.ndarray | None,
) -> list[tuple[np.ndarray, int, int]]:
    """The kinds of period rule 1 tries, in its order: per kind, which periods hold it (a
    mask), its work's hash and its event count. The kinds run at least twice, the most
    events first (ties: the most common first); the most common kind last when it ran once."""
    with np.errstate(over="ignore"):
        content = (work[pos[1:]] - work[pos[:-1]]).view(np.int64)
    kinds, inverse, seen = np.unique(
        np.stack([content, np.diff(pos)]), axis=1, return_inverse=True, return_counts=True
    )
    inverse = inverse.reshape(-1)
    order = np.lexsort((-seen, -kinds[1]))
    ok = np.ones(len(seen), dtype=bool)
    if alone is not None:
        # a kind run once is one too (decision 608), but not step 0's: its period holds what
        # ran before the loop; nor a kind holding a period ``alone`` refuses
        ok[inverse[~alone]] = False
        ok[int(inverse[0])] &= seen[int(inverse[0])] >= 2
    least = 1 if alone is not None else 2
    tried = [
        (inverse == k, int(kinds[0, k]), int(kinds[1, k]))
        for k in order.tolist()
        if seen[k] >= least and ok[k]
    ]
    if held.sum() < 2:
        tried.append((held, common, count))
    return tried


def _same_work(
    pos: np.ndarray,
    work: np.ndarray,
    held: np.ndarray,
    common: int,
    count: int,
    total: int,
    from_periods: bool = False,
) -> int | None:
    """How many events from the last lead on are its iteration by rule 1, for the kind of
    period ``held`` (its work's hash ``common``, of ``count`` events): ``count - h`` for the
    smallest head ``h`` that makes that work, or None. The head is the events before the
    first lead, or (``from_periods``, rule 4) those the last such period ends with."""
    if not count:
        return None
    ends = pos[1:][held]  # each such period's end, where its head ends
    q, first = int(pos[-1]), int(ends[-1] if from_periods and ends.size else pos[0])
    with np.errstate(over="ignore"):
        for h in range(min(count - 1, first) + 1):
            n = count - h
            if q + n > total:
                continue
            head = work[first] - work[first - h]
            if ((work[q + n] - work[q]) + head).view(np.int64) != common:
                continue
            # every such period ends with that head (a name before the lead each time)
            if h and ((work[ends] - work[ends - h]) != head).any():
                continue
            return n
    return None


def _outlasts(
    start: np.ndarray, end: np.ndarray, pos: np.ndarray, kind: np.ndarray, n: int
) -> bool:
    """Whether an event of the last iteration's ``n`` after its lead lasts more than
    `OUTLASTS` times the median period of ``kind`` (decisions 1046, 1090): one event lasting
    many periods is a thing done once after the loop, not the loop's iteration. Not once the
    median: a JAX loop reading its loss every ten iterations waits, in each read, for the
    updates queued before it, most of its period, and on a loaded machine the last read
    (6.11 ms against a median of the reads' periods of 5.34) was then no step's. A plain
    ``for x in ds: train(x)`` over a tf.data dataset runs, each period, ``train``, a
    handle's deletion, the iterator's ``GetNext`` and another deletion; after the last call
    the same names come once more, the ``GetNext`` finding the data's end and the deletion
    the iterator's (334 ms, waiting for tf.data's threads, against 1.4 ms periods): the same
    names, and the last step was 335 ms for the script's 0.87. Decision 595's cap, for the
    last iteration."""
    q = int(pos[-1])
    if n < 2 or not kind.any():
        return False
    period = float(np.median((start[pos[1:]] - start[pos[:-1]])[kind]))
    return bool((end[q + 1 : q + n] - start[q + 1 : q + n]).max() > OUTLASTS * period)


def _members(names: np.ndarray, pos: np.ndarray) -> list[int]:
    """The names found exactly once in every period between consecutive leads at ``pos``,
    in their order in the last period (the lead first if it is one). Not `cycle`'s members:
    a name the last iteration lacks (the capture stopped before its optimizer step) is one."""
    lo, hi = int(pos[0]), int(pos[-1])
    kinds, kind_of = distinct_inverse(names[lo:hi])
    period = np.searchsorted(pos, np.arange(lo, hi), "right") - 1
    per = np.zeros((len(kinds), len(pos) - 1), np.int64)
    np.add.at(per, (kind_of, period), 1)
    once = set(kinds[(per == 1).all(axis=1)].tolist())
    order: list[int] = []
    for name in names[int(pos[-2]) : hi].tolist():
        if name in once and name not in order:
            order.append(name)
    return order


def _members_in_order(
    names: np.ndarray, pos: np.ndarray, members: list[int]
) -> tuple[int, np.ndarray] | None:
    """By rule 2: the position of the last member in the last iteration and, per period,
    that of its last member; None when a member is missing or out of order there, when a name
    before it is in no period, or when the cycle has no member but the lead."""
    q = int(pos[-1])
    rest = [m for m in members if m != int(names[q])]  # the lead's own is at q
    if not rest:
        return None
    at = q
    for name in rest:
        hits = np.flatnonzero(names[at + 1 :] == name)
        if not hits.size:
            return None
        at += 1 + int(hits[0])
    if not np.isin(names[q : at + 1], names[int(pos[0]) : q]).all():
        return None
    # each period's own call of the last member (once a period: a member)
    return at, np.flatnonzero(names[int(pos[0]) : q] == names[at]) + int(pos[0])


def _extra_tail(
    start: np.ndarray,
    end: np.ndarray,
    firsts: np.ndarray,
    kind: np.ndarray,
    held: np.ndarray,
    n: int,
    head: int,
    count: int,
) -> int:
    """How much longer (ns) the untraced end of the periods of ``kind`` (their first ``n``
    events, before a head of ``head``) lasts than the most common periods' (``held``, of
    ``count`` events), the shortest of each: the extra work's own untraced end (a checkpoint's
    file written after ``torch.save``'s last traced op: 31.8 to 42.7 ms in /tmp/loops14/ck2,
    where the loop's own Python took 0.05-0.2 ms), which the same work in the last iteration
    ran too (decision 608). Not the common untraced end itself: in a loop over a Python
    generator it is the next batch's making, which the last iteration has no next of. The
    shortest: load stretches, never shortens."""
    if count - head <= 0:
        return 0
    own = _tail(start, end, firsts[kind], n)
    usual = _tail(start, end, firsts[held], count - head)
    return max(own - usual, 0)


def _tail(start: np.ndarray, end: np.ndarray, firsts: np.ndarray, n: int) -> int:
    """The shortest time (ns) from the end of the first ``n`` events of the periods starting
    at ``firsts`` to the event after them."""
    gaps = [int(start[a + n]) - int(end[a : a + n].max()) for a in firsts.tolist()]
    return max(min(gaps), 0) if gaps else 0


def _step_call(
    start: np.ndarray, end: np.ndarray, pos: np.ndarray, calls: np.ndarray
) -> int | None:
    """By rule 3: the end of the repeat's first call (positions ``calls``) from the last
    lead on, when every period holds one call of it; its span from the lead against each
    period's own (the call must not have returned at once: the data's end found inside)."""
    within = np.searchsorted(calls, pos)  # per lead: its period's first call
    own = calls[np.minimum(within, len(calls) - 1)]
    if within[-1] >= len(calls) or (np.diff(within) != 1).any() or (own[:-1] >= pos[1:]).any():
        return None
    spans = _spans(start, end, pos[:-1], own[:-1] - pos[:-1] + 1)
    return _if_long_enough(start, end, int(pos[-1]), int(own[-1]) + 1, spans)


def _spans(start: np.ndarray, end: np.ndarray, first: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per period starting at event ``first[k]``: from its start to the end of its first
    ``n[k]`` events (ns)."""
    pairs = zip(first.tolist(), n.tolist(), strict=True)
    return np.array([int(end[a : a + b].max()) - int(start[a]) for a, b in pairs], np.int64)


def _if_long_enough(
    start: np.ndarray, end: np.ndarray, q: int, stop: int, spans: np.ndarray
) -> int | None:
    """The end of the events ``q`` to ``stop`` (exclusive), if they last `HALF` the
    shortest of ``spans`` at least."""
    finish = int(end[q:stop].max())
    if not spans.size or finish - int(start[q]) < HALF * int(spans.min()):
        return None
    return finish
