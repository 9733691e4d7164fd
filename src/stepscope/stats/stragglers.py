"""Which rank is late, at which steps, and why: stragglers of synchronous training.

In synchronous training every rank enters the same collectives (all-reduce, all-gather...)
and they all leave each one together: a rank that is late (slow input, slow compute...)
makes every other rank wait inside the collective. Step times are therefore equal on all
ranks and say nothing; **who arrived last** does. The rule (docs/jobs.md):

1. **Match the calls.** The same collective call is found on every rank
   (`stepscope.stats.collective_calls`): by its sequence number in its process group where
   the trace records it, else by pod step (steps paired by `pairing.pair_host_steps`), lane
   (kind and group) and position among the step's calls of that lane.
2. **One clock.** Every rank leaves a collective at about the same instant, so each rank's
   clock offset is the median, over the matched calls, of how much later its exits are than
   the median rank's. Arrivals and exits are shifted by it (the offsets and how closely the
   corrected exits agree are stated): hosts' clocks are never trusted as they are. Except
   ranks that provably share one clock (`stragglers_match.shared_clock`: every capture
   recorded the same machine and boot, decision 940): their times are put on that clock from
   where each capture's time zero falls on it, and no offset is estimated (their clock
   offsets are 0). Exits need not be simultaneous (gloo's all-reduce, timed on a worker
   thread that may wait for a core before it closes its range, left 2-6 ms apart on a loaded
   machine): an estimate from them would move every arrival by the median difference.
3. **Who is last.** At each call the rank that arrives last held every other rank for
   ``margin`` = its arrival - the next-to-last arrival; each other rank waited from its own
   arrival until the last one's (at most until it left). Per pod step a rank's ``late`` is the
   margin summed over the calls it was last at (negative: how long before the last rank it
   arrived), its ``wait`` the waiting summed.
4. **Late steps, stragglers.** A rank is late in a step when its margin there is at least
   `LATE_SHARE` of the median rank's own time in that step (step time - wait) and
   `LATE_MIN_NS`; it is a **straggler** when it is repeatedly last (`repeatedly_last`): late
   in at least `MIN_LATE_STEPS` steps (all of them when there are fewer) and
   `MIN_LATE_FRACTION` of the steps, and either in `PERSISTENT_SHARE` of the steps or by
   `STRONG_SHARE` of the own time (the median over its late steps), whatever share of the
   run that is. Scheduling noise makes ranks last by turns (`by_turns`, `late_around`):
   then a rank is a straggler when its run-ups show it doing more than the others in most
   steps, or at the steps where its own work explains lateness standing out from the
   others' (`repeatedly_late_rows`, `OwnWork`, decision 501).
5. **Why.** For the calls where the straggler was last in its late steps: what it did since
   its previous collective (its run-up: input, host compute, device compute, untraced
   "All Others"...), against the median of the other ranks over the same calls; the
   category with the largest excess is the reason, given with both figures. A loop's fetch
   from a plain Python iterator (`StepDb.fetched`, decision 343) is input there, out of the
   untraced time XProf's categories put it in (decision 387). An untraced reason names the
   Python the sampler saw in those run-ups beyond the other ranks (`stragglers_python`).

The ranks that waited are labelled waiting, never late. A run without collectives to
match (CPU workers without collectives, profiles from before collectives were traced) falls
back to `stragglers_own_time`: own time (step time - collective time beyond the shortest
rank's) against the median rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.intervals import merge_sorted
from stepscope.stats.steps.pairing import HostSteps, StepPairing, pair_host_steps
from stepscope.stats.stragglers_cores import cores_held
from stepscope.stats.stragglers_cpu import work_words
from stepscope.stats.stragglers_first_step import (
    by_own_start,
    first_compared,
    unless_all_waited,
)
from stepscope.stats.stragglers_match import against_the_median, clock_note, match_calls
from stepscope.stats.stragglers_own_time import by_own_time
from stepscope.stats.stragglers_python import runup_functions
from stepscope.stats.stragglers_runups import REASONS, own_work
from stepscope.stats.stragglers_stalls import stalls
from stepscope.stats.stragglers_types import (
    BY_ARRIVAL,
    LATE_MIN_NS,
    LATE_SHARE,
    MIN_LATE_FRACTION,
    MIN_LATE_STEPS,
    ONE_COMPARED,
    FetchTimes,
    Matched,
    PodLateness,
    Rank,
    Straggler,
    burst,
    costly,
    fetch_times,
    fetch_words,
    nan_reduce,
    ranges,
    repeatedly_late_rows,
    steps_said,
    waiting_for_it,
)
from stepscope.stats.stragglers_words import PIPELINE_HELD, held_by, period, what
from stepscope.stats.stragglers_work import (
    SAME_WORK_REASONS,
    same_work,
    work_steps,
)
from stepscope.words import counted, of_steps

__all__ = [
    "LATE_MIN_NS",
    "LATE_SHARE",
    "MIN_LATE_FRACTION",
    "MIN_LATE_STEPS",
    "PodLateness",
    "Rank",
    "Straggler",
    "find_stragglers",
    "held_by",
    "ranges",
]

_INPUT, _OTHER = CATEGORY_NAMES.index("input"), CATEGORY_NAMES.index("other")
_HOST = CATEGORY_NAMES.index("host_compute")


def find_stragglers(ranks: Sequence[Rank]) -> PodLateness:
    """Late ranks of the run and why (see the module docstring)."""
    hosts = tuple(r.host for r in ranks)
    pairing = pair_host_steps(
        [HostSteps(r.host, r.steps.step_num, r.steps.start_ns, r.steps.dur_ns) for r in ranks]
    )
    dur = np.full((len(ranks), pairing.n_steps), np.nan)
    for i, (r, rows) in enumerate(zip(ranks, pairing.rows, strict=True)):
        have = rows >= 0
        dur[i, have] = r.steps.dur_ns[rows[have]]
    matched = match_calls(ranks, pairing) if len(ranks) > 1 else None
    fetch = fetch_times(ranks, pairing)
    if matched is None or not (matched.pod_step >= 0).any():
        pod = _named(by_own_time(ranks, pairing, dur, fetch), ranks)
    else:
        pod = _named(_by_arrival(hosts, pairing, dur, matched, fetch), ranks)
    step_ns = float(np.nanmedian(dur)) if (~np.isnan(dur)).any() else 0.0
    cores = cores_held(ranks, pairing, step_ns)
    return replace(pod, notes=(*pod.notes, cores)) if cores else pod


def _named(pod: PodLateness, ranks: Sequence[Rank]) -> PodLateness:
    """Stragglers late from untraced host work, with the Python functions the sampler saw on
    them: a rank sleeping in its batch generator said only "untraced host work ('All
    Others')", where its own overview named `batches`."""
    by_host = {r.host: r for r in ranks}
    out = []
    for s in pod.stragglers:
        if s.method == BY_ARRIVAL:  # named from its run-ups (`runup_functions`)
            out.append(s)
            continue
        rank = by_host.get(s.host)
        # input from its Python iterator (decision 387) is untraced too: the samples show it
        from_iterator = s.reason == "input" and rank is not None and rank.steps.fetched.counted
        if (s.reason != "other" and not from_iterator) or rank is None:
            out.append(s)
            continue
        python = rank.steps.untraced.python
        step_ns = int(rank.steps.dur_ns.sum())
        lead = python.leading(2)
        # Named only when the first function holds at least half the share of the step the
        # reason does: samples spread thin over many functions explain nothing of it. (A
        # 30 ms sleep in the loop's own function is named by its line, decision 396.)
        late_share = s.reason_ns / max(len(s.steps), 1) / max(float(rank.steps.dur_ns.mean()), 1.0)
        if lead and float(python.ns[lead[0]]) / max(step_ns, 1) < 0.5 * late_share:
            lead = []
        named = ", ".join(python.describe(k, step_ns) for k in lead)
        if not named:
            out.append(s)
            continue
        text = s.explanation.removesuffix(".") + f". Python sampled on {s.host}: {named}."
        fetched = rank.steps.fetched
        leading = {python.function[k] for k in lead}
        if not from_iterator and fetched.counted and fetched.function[0] in leading:
            # A function named is the Python iterator the loop gets its batches from
            # (decision 343), though too little of its fetch fell in the run-ups for input
            # to be the reason (decision 387 moves it there when it does).
            text += (
                f" {fetched.function[0]} is the iterator its loop gets each batch from: "
                "this rank waits on its input."
            )
        out.append(replace(s, python=named, explanation=text))
    return replace(pod, stragglers=tuple(out))


def _by_arrival(
    hosts: tuple[str, ...],
    pairing: StepPairing,
    dur: np.ndarray,
    m: Matched,
    fetch: FetchTimes | None = None,
) -> PodLateness:
    n_h, n_s = dur.shape
    arrive, exit_ = m.arrive_ns, m.exit_ns
    n_r, n_c = arrive.shape
    last = np.argmax(arrive, axis=0)  # ties: the first rank
    latest = arrive[last, np.arange(n_c)]
    second = np.sort(arrive, axis=0)[-2] if n_r > 1 else latest
    margin = latest - second
    in_pod = m.pod_step >= 0
    late_ns = np.full((n_h, n_s), np.nan)
    wait_ns = np.full((n_h, n_s), np.nan)
    held = np.zeros((n_h, n_s))
    stepped = np.zeros(n_s, bool)
    stepped[m.pod_step[in_pod]] = True
    pod = m.pod_step[in_pod]
    # The figures count a rank's lateness and waiting once per chain of calls it left behind
    # (`left_behind`, decision 1035); which steps are late is still read from the unions of
    # every call's margin, as the turns' thresholds were set on them (decision 501).
    behind = left_behind(arrive, exit_, m.pod_step)
    once = _held_once(m, behind, last, n_h, n_s)
    # the first step: late there by a run-up beyond the others' only (decision 1038)
    if stepped.sum() > 1:  # (a capture of one step: that step is all it has)
        second = by_own_start(m, second, latest, first_compared(stepped))
    wait_all = np.full((n_h, n_s), np.nan)
    for j, row in enumerate(m.rows.tolist()):
        # Unions per step: calls that overlap (DDP's buckets) must not count twice.
        mine = last[in_pod] == j
        held[row] = _union_per_step(pod[mine], second[in_pod][mine], latest[in_pod][mine], n_s)
        lo = arrive[j, in_pod]
        hi = np.where(mine, lo, np.minimum(latest, exit_[j])[in_pod])  # not waiting when last
        have = ~np.isnan(dur[row]) & stepped
        wait_all[row, have] = _union_per_step(pod, lo, hi, n_s)[have]
        # nor in a call it left behind: it was at work on the next one's run-up
        hi = np.where(behind[j, in_pod], lo, hi)
        waited = _union_per_step(pod, lo, hi, n_s)
        wait_ns[row, have] = waited[have]
        late_ns[row, have] = once[row, have] - waited[have]
    own = dur - np.nan_to_num(wait_all)
    stepped = unless_all_waited(stepped, wait_ns, m.rows)  # every rank waited: set-up
    threshold = np.maximum(LATE_SHARE * np.nan_to_num(nan_reduce(own, "median")), LATE_MIN_NS)
    late = (held >= threshold[None, :]) & stepped[None, :]
    n_compared = int(stepped.sum())
    last_count = np.zeros(n_h, np.int64)
    np.add.at(last_count, m.rows[last[in_pod]], (margin[in_pod] >= LATE_MIN_NS).astype(np.int64))
    found = []
    own = own_work(m, last, held, threshold, stepped)
    for j, row, steps in repeatedly_late_rows(
        late, held, threshold, m.rows, n_compared, own, stepped
    ):
        found.append(
            _straggler(hosts, pairing, m, j, row, steps, last, once, wait_ns, n_compared, fetch)
        )
    found = costly(sorted(found, key=lambda s: (-s.late_ns, s.host)), dur, stepped)
    hidden = _next_in_line(
        hosts, pairing, m, found, threshold, stepped, wait_ns, n_compared, fetch, behind
    )
    stalled, unheld = stalls(hosts, pairing, dur, m, held, found, stepped)
    stalled = costly(stalled, dur, stepped)
    found = sorted(found + stalled, key=lambda s: (-s.late_ns, s.host)) + costly(
        hidden, dur, stepped
    )
    late_rows = {hosts.index(s.host) for s in found}
    waiting = np.zeros(n_h, bool)
    for s in found:
        cols_s = [int(np.flatnonzero(pairing.step_num == n)[0]) for n in s.held_steps or s.steps]
        waiting |= np.nan_to_num(wait_ns[:, cols_s]).sum(axis=1) > 0
    waiting[list(late_rows)] = False
    offsets = np.full(n_h, np.nan)
    # on a shared clock every offset is 0: only the time zeros differ, and no clock
    offsets[m.rows] = 0 if m.shared_clock else against_the_median(m.offsets_ns)
    return PodLateness(
        hosts,
        pairing.step_num,
        dur,
        wait_ns,
        late_ns,
        late,
        tuple(found),
        pairing.description,
        BY_ARRIVAL,
        offsets,
        m.exit_spread_ns,
        int(in_pod.sum()),
        last_count,
        waiting,
        clock_note(hosts, m),
        (unheld,) if unheld else (),
    )


def _next_in_line(
    hosts: tuple[str, ...],
    pairing: StepPairing,
    m: Matched,
    found: list[Straggler],
    threshold: np.ndarray,
    stepped: np.ndarray,
    wait_ns: np.ndarray,
    n_compared: int,
    fetch: FetchTimes | None = None,
    left: np.ndarray | None = None,
) -> list[Straggler]:
    """The stragglers hidden behind ``found``: the same rule over the other ranks alone (a
    rank slow in compute arrives before the one slow in input, so it is never last of all,
    but once that one is fixed it holds the job). Given with `Straggler.behind` set."""
    if not found:
        return []
    gone = {hosts.index(s.host) for s in found}
    keep = np.array([r not in gone for r in m.rows.tolist()])
    if keep.sum() < 2:
        return []
    sub = Matched(
        m.rows[keep],
        m.pod_step,
        m.arrive_ns[keep],
        m.exit_ns[keep],
        m.runup_ns[keep],
        m.offsets_ns[keep],
        m.exit_spread_ns,
        m.keyed_by,
        m.call_index[keep] if m.call_index is not None else None,
        tuple(p for p, k in zip(m.python, keep.tolist(), strict=True) if k) if m.python else (),
        m.before_ns[keep] if m.before_ns is not None else None,
        m.runup_ops[keep] if m.runup_ops is not None else None,
        tuple(c for c, k in zip(m.cpu, keep.tolist(), strict=True) if k) if m.cpu else (),
        m.pipeline_ns[keep] if m.pipeline_ns is not None else None,
        m.shared_clock,
    )
    n_c = sub.arrive_ns.shape[1]
    last = np.argmax(sub.arrive_ns, axis=0)
    latest = sub.arrive_ns[last, np.arange(n_c)]
    second = np.sort(sub.arrive_ns, axis=0)[-2]
    in_pod = sub.pod_step >= 0
    pod = sub.pod_step[in_pod]
    behind = ", ".join(s.host for s in found)
    out = []
    held = np.zeros((len(hosts), len(threshold)))
    for j, row in enumerate(sub.rows.tolist()):
        mine = last[in_pod] == j
        held[row] = _union_per_step(
            pod[mine], second[in_pod][mine], latest[in_pod][mine], len(threshold)
        )
    late = (held >= threshold[None, :]) & stepped[None, :]
    own = own_work(sub, last, held, threshold, stepped)
    # its figures counted as the first's (`_held_once`), the steps found as before
    once = held if left is None else _held_once(sub, left[keep], last, len(hosts), len(threshold))
    for j, row, steps in repeatedly_late_rows(
        late, held, threshold, sub.rows, n_compared, own, stepped, transient=False
    ):
        hidden = _straggler(
            hosts, pairing, sub, j, row, steps, last, once, wait_ns, n_compared, fetch
        )
        said = hidden.explanation.split("; ")[0].rstrip(".")
        text = (
            f"Next in line, hidden behind {behind}: "
            + said.replace(" is late at ", " is the last of the other ranks at ")
            + f" (once {behind} is fixed, the others will wait for it)."
        )
        out.append(replace(hidden, explanation=text, behind=behind, waited_ns=0, waiters=0))
    return sorted(out, key=lambda s: (-s.late_ns, s.host))


def left_behind(arrive: np.ndarray, exit_: np.ndarray, pod_step: np.ndarray) -> np.ndarray:
    """(R, C) bool: the calls each rank left behind, arriving at the next call of the same
    pod step (by its own arrivals) before it left them. DDP issues each gradient bucket's
    all-reduce as soon as it is ready (gloo runs two at once): a rank held at the first
    bucket goes on computing the next one's gradients and waits at the last one only."""
    out = np.zeros(arrive.shape, bool)
    for k in range(arrive.shape[0]):
        order = np.lexsort((arrive[k], pod_step))
        step, lo, hi = pod_step[order], arrive[k, order], exit_[k, order]
        nxt = (step[1:] == step[:-1]) & (step[:-1] >= 0) & (lo[1:] < hi[:-1])
        out[k, order[:-1][nxt]] = True
    return out


def _held_once(m: Matched, behind: np.ndarray, last: np.ndarray, n_h: int, n_s: int) -> np.ndarray:
    """(hosts, steps): how long each rank held the others per step, its margins counted
    where the next-to-last rank did not leave the call behind. The late rank arrives late
    at each of the step's buckets by the same lateness, one bucket's gradients apart: the
    union of the margins counted that gap as well (a 2-rank job on gloo whose rank 0 did
    1.6 ms of Python a step read 2.83 ms a late step; decision 1035)."""
    arrive = m.arrive_ns
    n_r, n_c = arrive.shape
    order = np.argsort(arrive, axis=0, kind="stable")
    second_rank = order[-2] if n_r > 1 else last
    second = arrive[second_rank, np.arange(n_c)]
    latest = arrive[last, np.arange(n_c)]
    count = (m.pod_step >= 0) & ~behind[second_rank, np.arange(n_c)]
    out = np.zeros((n_h, n_s))
    for j, row in enumerate(m.rows.tolist()):
        mine = count & (last == j)
        out[row] = _union_per_step(m.pod_step[mine], second[mine], latest[mine], n_s)
    return out


def _union_per_step(step: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_steps: int) -> np.ndarray:
    """Per step, the length of the union of the intervals [lo, hi) of that step."""
    out = np.zeros(n_steps, np.int64)
    keep = hi > lo
    if not keep.any():
        return out
    step, lo, hi = step[keep], lo[keep], hi[keep]
    base = int(lo.min())
    width = int(hi.max()) - base + 1
    key_lo = step * width + (lo - base)
    key_hi = step * width + (hi - base)
    order = np.argsort(key_lo, kind="stable")
    _, u_lo, u_hi = merge_sorted(key_lo[order], key_hi[order])
    np.add.at(out, u_lo // width, u_hi - u_lo)
    return out


def _straggler(
    hosts: tuple[str, ...],
    pairing: StepPairing,
    m: Matched,
    j: int,
    row: int,
    steps: np.ndarray,
    last: np.ndarray,
    held: np.ndarray,
    wait_ns: np.ndarray,
    n_compared: int,
    fetch: FetchTimes | None = None,
    focus: bool = True,
) -> Straggler:
    mine = (last == j) & np.isin(m.pod_step, steps)
    others = np.ones(len(m.rows), bool)
    others[j] = False
    runup = m.runup_ns[:, mine, :].astype(np.float64)  # (R, calls, categories)
    own = runup[j].sum(axis=0)
    peers = np.median(runup[others], axis=0).sum(axis=0) if others.any() else np.zeros_like(own)
    iterator = ""
    if fetch is not None:
        # its fetch in those steps (at most its run-ups' untraced time: the calls it was last
        # at come after the fetch, the step's first all-reduce among them) is input
        moved = fetch.moved(row, steps, own[_OTHER])
        peer_rows = m.rows[others].tolist()
        peer_moved = (
            min(float(np.median([fetch.ns[r, steps].sum() for r in peer_rows])), peers[_OTHER])
            if peer_rows
            else 0.0
        )
        own[_INPUT] += moved
        own[_OTHER] -= moved
        peers[_INPUT] += max(peer_moved, 0.0)
        peers[_OTHER] -= max(peer_moved, 0.0)
        iterator = fetch.of_iterator(row) if moved > 0 else ""
    excess = {c: own[k] - peers[k] for k, c in enumerate(CATEGORY_NAMES) if c in REASONS}
    reason = max(REASONS, key=lambda c: (excess[c], -REASONS.index(c)))
    if excess[reason] <= 0:
        reason = "other"
    k = CATEGORY_NAMES.index(reason)
    # its input mostly the tf.data map's Python, as its own limits say (decision 670)
    piped = float(m.pipeline_ns[j, mine].sum()) if m.pipeline_ns is not None else 0.0
    pipeline = reason == "input" and not iterator and 2 * piped >= own[k] > 0
    late_ns = int(held[row, steps].sum())
    waited = np.nan_to_num(wait_ns[:, steps])
    waited[row] = 0
    waiters = int((waited.sum(axis=1) > 0).sum())
    held_at = tuple(int(n) for n in pairing.step_num[steps])
    work = work_steps(m, pairing, j, row, mine, steps)
    numbers = tuple(int(n) for n in np.unique(pairing.step_num[work]))
    n = len(numbers)
    calls = int(mine.sum())
    every = f"every {p} steps: " if (p := period(numbers)) else ""
    s_calls = counted(calls, "collective call")
    if (work == steps).all():
        arrived = f"it arrived last at {s_calls} there, "
    elif (work != steps).all():
        arrived = (
            f"its work at the end of each made it arrive last at {s_calls} of the next "
            f"({steps_said(held_at)}), "
        )
    else:  # some of them: those steps' collectives are named with the step before each
        later = tuple(int(x) for x in pairing.step_num[steps[work != steps]])
        arrived = (
            f"it arrived last at {s_calls} of {steps_said(held_at)} (of "
            f"{steps_said(later)} after its work at the end of the step before), "
        )
    text = (
        f"{hosts[row]} is late at {steps_said(numbers)} "
        f"({every}{of_steps(n, n_compared, ONE_COMPARED)}): "
        + arrived
        + f"{late_ns / n / 1e6:.2f} ms per step after the next rank; since its previous "
        "collective it spent "
        f"{own[k] / n / 1e6:.2f} ms per step in {what(reason)}"
        + (f" ({fetch_words(iterator)})" if iterator and reason == "input" else "")
        + (f" ({PIPELINE_HELD})" if pipeline else "")
        + f" where the other ranks spent {peers[k] / n / 1e6:.2f} ms"
    )
    same = (
        same_work(m, j, mine, own[_HOST], peers[_HOST], n) if reason in SAME_WORK_REASONS else None
    )
    if reason in SAME_WORK_REASONS:  # as many ops slower, or its thread's CPU time
        text += work_words(m, j, mine, same, n)
    if waiters:
        text += f"; {waiting_for_it(waiters)} ({waited.sum() / 1e6:.2f} ms in all)"
    python = ""
    if reason == "other" or (reason == "input" and iterator):
        # what its thread ran untraced in those run-ups, beyond the other ranks
        untraced = runup[:, :, _OTHER].sum(axis=1)
        python = runup_functions(
            m.python, m.call_index, j, mine, untraced, n, float(excess.get(reason, 0.0))
        )
    first_end = len(text)  # where its first sentence ends: the two parts go there
    text += "."
    if python:
        text += f" Python sampled on {hosts[row]} in that time: {python}."
        fetched = fetch.functions[row] if fetch is not None else ""
        if reason == "other" and fetched and python.startswith(fetched + " "):
            # the function named is the Python iterator its loop gets its batches from
            # (decision 343), though too little of its fetch fell in the run-ups for input
            # to be the reason (decision 387 moves it there when it does)
            text += (
                f" {fetched} is the iterator its loop gets each batch from: this rank waits "
                "on its input."
            )
    found = Straggler(
        hosts[row],
        numbers,
        late_ns,
        reason,
        int(excess.get(reason, own[k] - peers[k])),
        int(waited.sum()),
        waiters,
        text,
        BY_ARRIVAL,
        int(mine.sum()),
        int(own[k]),
        int(peers[k]),
        python=python,
        held_steps=held_at if held_at != numbers else (),
        slowed=same[2] if same is not None else 0.0,
        pipeline=pipeline,
    )
    big = burst(held[row, steps]) if focus else None
    if big is None:
        return found
    # Most of its late time in a few steps (a rank doing extra work at steps 10-14, last
    # by a few ms in 23 others on a busy machine): the average over all of them describes
    # neither (decision 546). Each part is described by its own run-ups.
    args = (hosts, pairing, m, j, row)
    rest = (held, wait_ns, n_compared, fetch, False)
    peak = _straggler(*args, steps[big], last, *rest)
    other = _straggler(*args, steps[~big], last, *rest)
    n_peak, n_other = len(peak.steps), len(other.steps)
    words = (
        f"most of it ({peak.late_ns / max(late_ns, 1):.0%}) at {steps_said(peak.steps)}: "
        f"{peak.late_ns / n_peak / 1e6:.2f} ms per step after the next rank, from "
        f"{what(peak.reason, peak.pipeline)} ({peak.reason_ns / n_peak / 1e6:.2f} ms per step "
        f"where the other ranks spent {peak.reason_peers_ns / n_peak / 1e6:.2f} ms); at its "
        f"{n_other} other late steps by a median "
        f"{float(np.median(held[row, steps[~big]])) / 1e6:.2f} ms, from "
        f"{what(other.reason, other.pipeline)}"
    )
    # after the first sentence, not the samples' ("... (36 of 36 samples); most of it (72%)
    # at steps 4-6" read as most of the samples)
    said = f"{text[:first_end]}; {words}.{text[first_end + 1 :]}"
    return replace(found, focus=words, explanation=said)
