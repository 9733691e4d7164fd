"""A rank that stalls the whole job a few times, each time for longer than a step (decision
645): a process stopped or frozen for 100 ms every few hundred steps, a rank paused by a
debugger, a garbage collection of seconds.

The straggler rules (`stragglers`) want a rank late at 5% of the steps at least: four stalls
of 100 ms in 150 steps of 7 ms (a fifth of the run's time) named no rank. And a rank stopped
while inside its all-reduce arrives on time: every rank's all-reduce just lasts 100 ms longer,
with no one last to arrive. Two kinds of stall, then, at the pod steps after the first (its
set-up is no stall):

- **by arrival**: one rank arrives last at a step's collectives by at least the job's
  median step time (`STALL_SHARE`): it held every other rank that long;
- **inside**: every rank had arrived, and the call lasted that much longer than the calls'
  median after the last arrival. The rank that held the others then is the one whose steps'
  thread was not running, by its CPU readings (`stats.host.thread_cpu`): its process's
  sampler took no reading through at least half of it (`HELD_READ`) while every other rank's
  read on, or its thread waited for a core that long. Without readings no rank is named.

A rank is named when it made at least `MIN_STALLS` stalls, holding at least half of the
stalls' time (`STALLS_SHARE`), and is no straggler already. Its steps are those holding its
work (decision 600: a stall after a step's all-reduce holds the next one's). What its thread
did in those stalls, by the readings of each stall's window (a run-up for an arrival, the
call's lasting for an inside stall): not read (stopped, or kept off every core), runnable
waiting for a core, on a core, or neither (sleeping, blocked on I/O or a lock).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.steps.pairing import StepPairing
from stepscope.stats.stragglers_python import runup_functions
from stepscope.stats.stragglers_runups import REASONS
from stepscope.stats.stragglers_types import BY_ARRIVAL, Matched, Straggler, nan_reduce, steps_said
from stepscope.stats.stragglers_words import what
from stepscope.words import counted

STALL_SHARE = 3.0  # a stall holds every rank 3 times the job's median step time at least
MIN_STALLS = 1  # the same rank, at this many steps at least...
# ...and a rank stalling once held the others this many times as long as anyone held them
# at any other step (decision 685: a 36 ms late arrival on a loaded machine is no stall)
LONE_STANDOUT = 2.0
STALLS_SHARE = 0.5  # ...holding this share of all the stalls' time at least
_OTHER = CATEGORY_NAMES.index("other")
HELD_READ = 0.5  # inside: the holder's evidence covers this share of the stall at least

# what the steps' thread did in the stalls, by its CPU readings (`_kind`)
STOPPED, WAITING, RUNNING, BLOCKED, UNREAD = "stopped", "waiting", "running", "blocked", "unread"
_DID = {
    STOPPED: "its process did not run: stepscope's sampler in it took no reading for {gap} "
    "ms of those {held} ms, while the other ranks' read on (a process stopped, by SIGSTOP, "
    "a debugger or a container's CPU limit, or kept off every core)",
    WAITING: "its steps' thread was runnable but waiting for a core {rq} ms of those {held} "
    "ms: other processes held the cores",
    RUNNING: "its steps' thread ran on a core {on} ms of those {held} ms: work of its own",
    BLOCKED: "its steps' thread was neither on a core nor waiting for one {idle} ms of those "
    "{held} ms: sleeping, or blocked on I/O, a lock or another process",
}

# a stall without readings: what the trace cannot tell (decision 686)
UNREAD_WORDS = (
    "It has no CPU readings then (the stack sampler's Thread CPU line: off with "
    "python_sampler_hz=0): whether its process was stopped, its thread waiting for a core or "
    "working untraced is not known"
)

# What to change, by what its thread did in the stalls (the job finding's fix)
STALL_FIX = {
    STOPPED: "This rank's process stops now and then while every other rank waits: look for "
    "what pauses it (a debugger or a profiler that stops the process to read it, a job "
    "scheduler suspending it, SIGSTOP, its memory swapped out: vmstat's si/so, a container's "
    "CPU limit: nr_throttled in its cgroup's cpu.stat) and give each rank cores and memory of "
    "its own.",
    WAITING: "Other processes take this rank's cores now and then while every other rank "
    "waits: find them (top, pidstat -t 1 on that host) and give each rank cores of its own "
    "(taskset, numactl) and as many threads as it has cores (torch.set_num_threads, "
    "OMP_NUM_THREADS).",
    RUNNING: "This rank runs work of its own at those steps while every other rank waits (a "
    "checkpoint, an evaluation, logging, a garbage collection): run it on every rank at the "
    "same step, in the background (a thread, an asynchronous checkpoint), or less often.",
    BLOCKED: "This rank's thread sleeps or blocks at those steps while every other rank waits "
    "(I/O, a lock, a subprocess, a network call): find the call (its Python samples at those "
    "steps) and move it off the training loop, or make every rank do it at the same step.",
}


def _window_kind(
    m: Matched, j: int, lo: np.ndarray, hi: np.ndarray
) -> tuple[str, dict[str, float]]:
    """What rank ``j``'s steps' thread did in the windows [lo, hi) of its own clock."""
    if j >= len(m.cpu) or not m.cpu[j].read or not len(lo):
        return UNREAD, {}
    cpu = m.cpu[j]
    covered, on, rq = (float(x.sum()) for x in cpu.within(lo, hi))
    gap = float(sum(cpu.unread_ns(int(a), int(b)) for a, b in zip(lo, hi, strict=True)))
    span = float((hi - lo).sum())
    idle = max(covered - on - rq, 0.0)
    figures = {"gap": gap, "on": on, "rq": rq, "idle": idle, "held": span}
    if covered <= 0:
        return UNREAD, figures
    if gap >= HELD_READ * span and on < 0.5 * gap and rq < 0.5 * gap:
        return STOPPED, figures
    kind = max(((on, RUNNING), (rq, WAITING), (idle, BLOCKED)))[1]
    return kind, figures


def _inside_holder(m: Matched, c: int, excess: float, latest: int) -> int:
    """The rank that held call ``c`` after every rank arrived (``excess`` ns beyond the
    usual), by its readings; -1 when none stands out."""
    if not m.cpu or excess <= 0:
        return -1
    gaps, waits = [], []
    for j in range(len(m.rows)):
        off = int(m.offsets_ns[j])
        lo, hi = latest + off, int(m.exit_ns[j, c]) + off
        cpu = m.cpu[j]
        gaps.append(float(cpu.unread_ns(lo, hi)) if cpu.read else 0.0)
        waits.append(float(cpu.within(np.array([lo]), np.array([hi]))[2][0]) if cpu.read else 0.0)
    for evidence in (np.array(gaps), np.array(waits)):
        k = int(np.argmax(evidence))
        rest = np.delete(evidence, k)
        if evidence[k] >= HELD_READ * excess and (rest < 0.5 * evidence[k]).all():
            return k
    return -1


def stalls(
    hosts: tuple[str, ...],
    pairing: StepPairing,
    dur: np.ndarray,
    m: Matched,
    held: np.ndarray,
    found: Sequence[Straggler],
    stepped: np.ndarray,
) -> tuple[list[Straggler], str]:
    """The ranks that stalled the job (see the module docstring), not among ``found``, and
    the calls that lasted long after every rank arrived with no rank's readings to tell who
    held them, in words (`_unheld`; "" when none). ``held``: ranks x pod steps, how long
    each rank held every other at its arrivals."""
    n_r, n_c = m.arrive_ns.shape
    if n_r < 2 or not n_c:
        return [], ""
    step_ns = float(np.nanmedian(nan_reduce(dur, "median")[stepped])) if stepped.any() else 0.0
    bar = STALL_SHARE * step_ns
    if bar <= 0:
        return [], ""
    in_pod = m.pod_step > 0  # the first step's set-up is no stall
    latest = m.arrive_ns.max(axis=0)
    tail = np.median(m.exit_ns, axis=0) - latest
    excess = tail - float(np.median(tail[m.pod_step >= 0])) if (m.pod_step >= 0).any() else tail
    n_s = held.shape[1]
    stall_held = np.zeros((n_r, n_s))
    for j, row in enumerate(m.rows.tolist()):
        cols = np.flatnonzero((held[row] >= bar) & stepped)
        cols = cols[cols > 0]
        stall_held[j, cols] = held[row, cols]
    inside_cols: dict[int, list[int]] = {}
    inside_ns = np.zeros((n_r, n_s))
    unheld = []  # calls stalled after every rank arrived, no rank's readings telling
    for c in np.flatnonzero(in_pod & (excess >= bar)).tolist():
        k = _inside_holder(m, c, float(excess[c]), int(latest[c]))
        if k >= 0:
            inside_ns[k, m.pod_step[c]] += float(excess[c])
            inside_cols.setdefault(k, []).append(c)
        else:
            unheld.append(c)
    total = float(stall_held.sum() + inside_ns.sum())
    # the longest any rank held the others at each pod step, by arrival or by a call lasting
    # longer than usual, whoever held it: what a lone stall must stand out from
    longest = np.zeros(n_s)
    longest[stepped] = held[m.rows][:, stepped].max(axis=0)
    np.maximum.at(longest, m.pod_step[in_pod], np.maximum(excess[in_pod], 0.0))
    longest[0] = 0.0
    # a call no reading explains is said when it stands out from the steps without a stall
    quiet = float(longest[longest < bar].max(initial=0.0))
    said = [c for c in unheld if excess[c] >= LONE_STANDOUT * quiet]
    named = {s.host for s in found}
    out = []
    for j, row in enumerate(m.rows.tolist()):
        mine_ns = stall_held[j] + inside_ns[j]
        cols = np.flatnonzero(mine_ns > 0)
        if hosts[row] in named or len(cols) < MIN_STALLS or mine_ns.sum() < STALLS_SHARE * total:
            continue
        if len(cols) == 1 and mine_ns[cols[0]] < LONE_STANDOUT * np.delete(longest, cols).max(
            initial=0.0
        ):
            continue  # one stall no longer than the job's other holds: the machine's noise
        out.append(
            _stalled(
                hosts,
                pairing,
                m,
                j,
                row,
                cols,
                stall_held[j],
                inside_ns[j],
                inside_cols.get(j, []),
                step_ns,
            )
        )
    note = _unheld(hosts, pairing, m, said, excess, step_ns) if said else ""
    if note and len(out) == 1:  # one rank stalled the job by its arrivals: a suspect
        held_at = steps_said(out[0].held_steps or out[0].steps)
        note += (
            f"; {out[0].host}, which stalled the job by its arrival at {held_at}, may have "
            "held these too"
        )
    return out, note


def _unheld(
    hosts: tuple[str, ...],
    pairing: StepPairing,
    m: Matched,
    calls: list[int],
    excess: np.ndarray,
    step_ns: float,
) -> str:
    """The calls ``calls`` that lasted ``excess`` longer than usual after every rank had
    arrived, no rank's CPU readings showing it held them (decision 686): the trace tells
    that the job stalled there, and who arrived last (by little: no lateness explains it);
    not which rank held it."""
    cols = np.array(calls)
    steps = steps_said(tuple(int(n) for n in pairing.step_num[m.pod_step[cols]]))
    order = np.sort(m.arrive_ns[:, cols], axis=0)
    last = np.argmax(m.arrive_ns[:, cols], axis=0)
    by = (order[-1] - order[-2]) / 1e6
    shown = min(len(cols), 4)
    who = ", ".join(
        f"{hosts[int(m.rows[last[k]])]} ({by[k]:.2f} ms after the next)" for k in range(shown)
    ) + (", ..." if len(cols) > shown else "")
    each = float(excess[cols].sum()) / len(cols) / 1e6
    read = [c.read for c in m.cpu] if m.cpu else []
    if not any(read):
        unknown = (
            "no rank has CPU readings (the stack sampler's Thread CPU line: the capture's "
            "python_sampler_hz was 0, or its threads were not sampled)"
        )
    elif not all(read):
        unknown = "not every rank has CPU readings, and those read show no rank stopped then"
    else:
        unknown = "no rank's CPU readings show its process stopped or its thread waiting then"
    return (
        f"Stalled inside a collective: at {steps} every rank had arrived at its collective and "
        f"it lasted {each:.2f} ms longer than usual{' each time' if len(cols) > 1 else ''} on "
        f"all of them (the job's steps take {step_ns / 1e6:.2f} ms); the last to arrive: "
        f"{who}, too little to explain it. A rank stopped or kept off its cores inside the "
        "call, its communication thread, or the network held every rank; which rank is not "
        f"known: {unknown}"
    )


def _stalled(
    hosts: tuple[str, ...],
    pairing: StepPairing,
    m: Matched,
    j: int,
    row: int,
    cols: np.ndarray,
    arrival_ns: np.ndarray,
    inside_ns: np.ndarray,
    inside_calls: list[int],
    step_ns: float,
) -> Straggler:
    arrived = cols[arrival_ns[cols] > 0]
    inside = cols[inside_ns[cols] > 0]
    off = int(m.offsets_ns[j])
    latest = m.arrive_ns.max(axis=0)
    second = np.sort(m.arrive_ns, axis=0)[-2]
    last = np.argmax(m.arrive_ns, axis=0)
    # the windows it held the others in, on its own clock: from the next-to-last arrival
    # to its own at the calls it was last at; from the last arrival to its exit at the
    # calls it held after every rank had arrived
    mine = (last == j) & np.isin(m.pod_step, arrived)
    lo = [second[mine] + off]
    hi = [latest[mine] + off]
    if inside_calls:
        calls = np.array(inside_calls)
        lo.append(latest[calls] + off)
        hi.append(m.exit_ns[j, calls] + off)
    kind, figures = _window_kind(m, j, np.concatenate(lo), np.concatenate(hi))
    work = _work_steps(m, pairing, j, row, mine, lo[0], hi[0])
    steps_at = np.unique(np.concatenate([work, inside]))
    numbers = _numbers(pairing, steps_at)
    held_at = _numbers(pairing, np.unique(cols))
    late_ns = int(arrival_ns[cols].sum() + inside_ns[cols].sum())
    n = len(numbers)
    waiters = len(m.rows) - 1
    # every other rank waited out each stall (the arrival's or the call's lasting)
    waited = late_ns * waiters
    runup = m.runup_ns[j, mine].sum(axis=0).astype(np.float64)
    peers = np.median(np.delete(m.runup_ns[:, mine], j, axis=0).sum(axis=1), axis=0)
    excess = {c: runup[k] - peers[k] for k, c in enumerate(CATEGORY_NAMES) if c in REASONS}
    reason = max(REASONS, key=lambda c: (excess[c], -REASONS.index(c)))
    # the run-ups explain the arrivals only when their excess is most of the time held
    explained = excess[reason] >= 0.5 * float(arrival_ns[arrived].sum()) and len(arrived)
    k = CATEGORY_NAMES.index(reason if explained else "other")
    python = ""
    if len(arrived) and k == _OTHER and kind != STOPPED:
        # what its thread ran untraced while it held the others (a checkpoint's `torch.save`,
        # a `time.sleep`): the sampler's functions there beyond the other ranks' (a stopped
        # process's sampler took none there: its samples at the stall's edges say nothing)
        untraced = m.runup_ns[:, mine, _OTHER].sum(axis=1)
        # its time a stall, not a step: "per step" read as every step's (decision 721)
        per = "per stall" if len(arrived) > 1 else "in the stall"
        python = runup_functions(
            m.python, m.call_index, j, mine, untraced, len(arrived), float(excess["other"]), per
        )
    where = _where(pairing, arrived, work, inside, inside_ns, reason if explained else "")
    did = ""
    if kind != UNREAD:
        did = _DID[kind].format(**{key: f"{v / 1e6:.1f}" for key, v in figures.items()})
    said = steps_said(numbers)
    step_said = f"the job's steps take {step_ns / 1e6:.2f} ms"
    if n == 1:  # once: "stalled every rank once, at step 60, for 147.39 ms" (decision 685)
        focus = f"stalled every rank once, at {said}, for {late_ns / 1e6:.2f} ms ({step_said})"
        text = (
            f"{hosts[row]} stalled the job once, at {said} of {len(pairing.step_num)}, for "
            f"{late_ns / 1e6:.2f} ms, where {step_said}: "
        )
    else:
        focus = f"stalling every rank at {said}, {late_ns / n / 1e6:.2f} ms each time ({step_said})"
        text = (
            f"{hosts[row]} stalled the job {counted(n, 'time')} ({said} of "
            f"{len(pairing.step_num)}), {late_ns / n / 1e6:.2f} ms each time, "
            f"{late_ns / 1e6:.2f} ms in all, where {step_said}: "
        )
    focus += (f": {did}" if did else "") + (f"; Python sampled on it: {python}" if python else "")
    text += (
        "; ".join(where)
        + (f". Its CPU readings then: {did}" if did else f". {UNREAD_WORDS}")
        + (f". Python sampled on {hosts[row]} in that time: {python}" if python else "")
        + f". The other {counted(waiters, 'rank')} waited for it ({waited / 1e6:.2f} ms in all)."
    )
    return Straggler(
        hosts[row],
        numbers,
        late_ns,
        CATEGORY_NAMES[k],
        int(max(runup[k] - peers[k], 0.0)),
        waited,
        waiters,
        text,
        BY_ARRIVAL,
        int(mine.sum()),
        int(runup[k]),
        int(peers[k]),
        focus=focus,
        held_steps=held_at if held_at != numbers else (),
        python=python,
        stall=kind,
        inside=tuple((int(pairing.step_num[c]), int(inside_ns[c])) for c in inside.tolist()),
    )


def _numbers(pairing: StepPairing, cols: np.ndarray) -> tuple[int, ...]:
    """The pod step numbers of columns ``cols``."""
    return tuple(int(n) for n in pairing.step_num[cols])


def _where(
    pairing: StepPairing,
    arrived: np.ndarray,
    work: np.ndarray,
    inside: np.ndarray,
    inside_ns: np.ndarray,
    reason: str,
) -> list[str]:
    """Where a rank stalled the job, in words: arriving last at the collectives of its late
    steps (columns ``arrived``), or at the next step's after its steps ``work`` (stalled at
    a step's end), ``reason`` the run-ups' when they explain the arrivals ("" when not); and
    inside the collectives of the columns ``inside``, every rank arrived."""
    where = []
    if len(arrived):
        calls_at = steps_said(_numbers(pairing, arrived))
        if (work != arrived).all():  # stalled at the end of each step
            done = steps_said(_numbers(pairing, work))
            said = f"after {done} it arrived last at the next step's collectives ({calls_at})"
        elif (work == arrived).all():
            said = f"it arrived last at the collectives of {calls_at}"
        else:
            said = (
                f"it arrived last at the collectives of {calls_at} (stalled at the end of the "
                "step before for some)"
            )
        where.append(said + (f", after {what(reason)}" if reason else ""))
    if len(inside):
        each = inside_ns[inside].sum() / len(inside) / 1e6
        where.append(
            f"at {steps_said(_numbers(pairing, inside))} every rank had arrived at the "
            f"collective and it lasted {each:.2f} ms longer than usual on all of them"
        )
    return where


def _work_steps(
    m: Matched,
    pairing: StepPairing,
    j: int,
    row: int,
    mine: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> np.ndarray:
    """The pod step holding each arrival stall of rank ``j`` (its calls ``mine``, the
    windows [lo, hi) it held the others in, on its clock): the call's step, or the step
    before where most of the window lies before the call's step began on it (decision 600:
    a rank stopped after a step's all-reduce holds the next one's)."""
    pod = m.pod_step[mine]
    if m.before_ns is None or not len(pod):
        return np.unique(pod)
    arrive = m.arrive_ns[j, mine] + int(m.offsets_ns[j])
    began = arrive - m.runup_ns[j, mine].sum(axis=1) + m.before_ns[j, mine]
    early = np.clip(began - lo, 0, hi - lo) > 0.5 * (hi - lo)
    has_before = pairing.rows[row][np.maximum(pod - 1, 0)] >= 0
    return np.unique(np.where(early & has_before & (pod > 0), pod - 1, pod))
