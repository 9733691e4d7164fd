"""Where a late rank's work lies and what it was: the pod step whose work made it late (its
own step, or the one before when its run-ups lie mostly before the step began on it,
decision 600), and whether its late run-ups held the same traced work as the others', run
slower (decision 602)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.steps.pairing import StepPairing
from stepscope.stats.stragglers_cpu import more_work
from stepscope.stats.stragglers_types import Matched, PodLateness, Rank

_HOST = CATEGORY_NAMES.index("host_compute")


def before_step(rank: Rank, at: np.ndarray) -> np.ndarray:
    """Per call of ``rank`` (``at``: indices into its calls), the part of its run-up before
    the call's step began on the rank: the end of its previous step, after that step's last
    collective (an optimizer step, then a checkpoint written by this rank alone). 0 for
    device kernels: their run-ups are the device's, which runs behind the host's steps."""
    calls = rank.calls
    if calls is None or calls.layer == "device kernels" or not rank.steps.n_steps:
        return np.zeros(len(at), np.int64)
    arrive = calls.arrive_ns[at]
    since = arrive - calls.runup_ns[at].sum(axis=1)  # the run-up covers [since, arrive)
    step = calls.step[at]
    start = np.where(step >= 0, rank.steps.start_ns[np.maximum(step, 0)], since)
    return np.clip(start - since, 0, arrive - since).astype(np.int64)


def work_steps(
    m: Matched, pairing: StepPairing, j: int, row: int, mine: np.ndarray, steps: np.ndarray
) -> np.ndarray:
    """The pod steps whose work made rank ``j`` (``row`` of the run) late at its calls
    ``mine`` in the pod steps ``steps``: each step itself, or the step before it where its
    run-ups beyond the other ranks' lie mostly before the step began on it (decision 600):
    a checkpoint written after step 5's all-reduce holds the others in step 6's, while its
    own step table, its overview and the periodic-steps finding show the time in step 5."""
    others = np.ones(len(m.rows), bool)
    others[j] = False
    if m.before_ns is None or not others.any() or not len(steps):
        return steps
    before = m.before_ns[:, mine].astype(np.float64)
    inside = m.runup_ns[:, mine, :].sum(axis=2).astype(np.float64) - before
    n_s = len(pairing.step_num)
    per_before, per_inside = np.zeros(n_s), np.zeros(n_s)
    pod = m.pod_step[mine]
    np.add.at(per_before, pod, before[j] - np.median(before[others], axis=0))
    np.add.at(per_inside, pod, inside[j] - np.median(inside[others], axis=0))
    has_before = np.zeros(n_s + 1, bool)
    has_before[1:] = pairing.rows[row] >= 0  # has_before[s]: the rank has pod step s - 1
    earlier = (per_before[steps] > per_inside[steps]) & (per_before[steps] > 0)
    return np.where(earlier & has_before[steps], steps - 1, steps)


# A late rank whose run-ups held as many traced host ops as the others' (within `SAME_OPS`),
# run `SLOWER` times as long or more, did the same work slower (decision 602): its process
# off its core, descheduled while other processes took it (its untraced time grows with it).
SAME_WORK_REASONS = ("host_compute", "other")
SAME_OPS = 0.10
SLOWER = 2.0
# ...of at least this many ops per late step (the others' median): a step of one or two long
# ops may hold more work in them (a bigger batch), where every one of hundreds of small ops
# stretched alike is the whole thread slowed
MIN_OPS_PER_STEP = 10


def same_work(
    m: Matched, j: int, mine: np.ndarray, own_ns: float, peers_ns: float, n_steps: int
) -> tuple[float, float, float] | None:
    """(its traced host-compute ops in its run-ups ``mine``, the other ranks' median, how
    many times longer they took: ``own_ns`` against ``peers_ns``) when the ops are as many
    (`SAME_OPS`), `MIN_OPS_PER_STEP` or more over its ``n_steps`` late steps, and took
    `SLOWER` times as long or more, and its thread's CPU readings (where read) do not show it
    on a core longer than the others' (`stragglers_cpu.more_work`); else None."""
    if m.runup_ops is None or len(m.rows) < 2 or peers_ns <= 0 or own_ns < SLOWER * peers_ns:
        return None
    others = np.delete(np.arange(len(m.rows)), j)
    own_ops = float(m.runup_ops[j, mine, _HOST].sum())
    peer_ops = float(np.median(m.runup_ops[others][:, mine, _HOST].sum(axis=1)))
    if peer_ops < MIN_OPS_PER_STEP * n_steps or abs(own_ops - peer_ops) > SAME_OPS * peer_ops:
        return None
    if more_work(m, j, mine, own_ns / peers_ns):
        return None
    return own_ops, peer_ops, own_ns / peers_ns


def late_at_work(pod: PodLateness) -> tuple[np.ndarray, np.ndarray]:
    """(late_ns, late) of ``pod`` (hosts x pod steps) with each straggler's lateness at the
    steps holding its work (decision 647): a rank that arrived last at step 6's all-reduce
    after its checkpoint at the end of step 5 is marked at step 5, as its explanation, its
    step table and its overview say; the cell of step 6 takes its step 5 arrival's. A rank
    that stalled a call after every rank had arrived is marked there, by the time it held
    them (`Straggler.inside`)."""
    late_ns, late = pod.late_ns.copy(), pod.late.copy()
    col = {int(n): k for k, n in enumerate(pod.step_num.tolist())}
    for s in pod.stragglers:
        if s.behind or not s.held_steps or s.host not in pod.hosts:
            continue
        i = pod.hosts.index(s.host)
        work = set(s.steps)
        held_at = set(s.held_steps)
        for held in s.held_steps:
            if held in work or held - 1 not in work or held not in col or held - 1 not in col:
                continue
            a, b = col[held], col[held - 1]
            if held - 1 in held_at:
                # late at step k - 1 by that step's own work too: both are its lateness, and
                # step k holds none of its work (swapped, the longer lateness showed at k,
                # a step after the script timed it: decision 1052)
                late_ns[i, b] = pod.late_ns[i, b] + pod.late_ns[i, a]
                late_ns[i, a] = 0
                late[i, b], late[i, a] = True, False
                continue
            late_ns[i, [a, b]] = pod.late_ns[i, [b, a]]
            late[i, [a, b]] = pod.late[i, [b, a]]
    for s in pod.stragglers:  # stalls inside a call: every rank had arrived (decision 645)
        i = pod.hosts.index(s.host) if s.host in pod.hosts else -1
        for number, held_ns in s.inside:
            if i >= 0 and number in col:
                late_ns[i, col[number]] = max(late_ns[i, col[number]], held_ns)
                late[i, col[number]] = True
    return late_ns, late
