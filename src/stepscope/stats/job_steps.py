"""A job of several ranks as one: its step time, XProf's figure beside it, and one row per rank.

The job's steps are its **pacing rank's**, the rank slowest on average (`summarize_steps`,
decision 398): in synchronous training every rank's steps average the job's period, and the
per-step largest of them is longer by where each rank's step boundaries fall (a 4-rank DDP
job whose scripts measured 60.4 ms a step read 65.5 by that rule); without synchronization
the job is done when its slowest rank is. XProf 2.24.2 computes its ALL_HOSTS step time per
step as the slowest host's (checked by running it on a two-worker TensorFlow capture), shown
beside it, and its ALL_HOSTS breakdown is the first host's alone; stepscope's is the ranks'
mean breakdown stretched to the job's step. The mean step time over the ranks and their
spread (slowest - fastest, per pod step) are given too.

The rows say per rank: its step time, input, compute, collectives, the time it waited for
the rank that arrived last, how many collective calls it arrived last at, its role
(straggler / waiting) and its clock offset (`stepscope.stats.stragglers`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.stats.stragglers_types import PodLateness, Rank
from stepscope.stats.summary import StepStats, StepSummary

XPROF_VERSION = "2.24.2"


@record
class RankRow:
    """One rank of the job over the pod steps."""

    host: str = out("the rank (host file)")
    role: str = out(
        "`straggler`, `next straggler` (the last of the others, hidden behind a straggler), "
        "`waiting` (waited for a straggler) or empty"
    )
    steps: int = out("pod steps it has")
    step_ms: float = out("its average step time", unit="ms", digits=6)
    input_ms: float = out(
        "its average input time per step: its `input` limit (`bound_by`), a loop's wait on a "
        "Python batch iterator included",
        unit="ms",
        digits=6,
    )
    compute_ms: float = out(
        "its average compute per step: its `compute` limit (`bound_by`)", unit="ms", digits=6
    )
    host_ms: float = out(
        "its average Python / host work and dispatch per step: its `host` and `dispatch` "
        "limits (`bound_by`)",
        unit="ms",
        digits=6,
    )
    collectives_ms: float = out(
        "its average collective time per step: its `collectives` limit (`bound_by`)",
        unit="ms",
        digits=6,
    )
    waiting_ms: float = out(
        "its average time per step waiting in collectives for the last rank", unit="ms", digits=6
    )
    late_arrivals: int = out("collective calls it arrived last at (by 20 us or more)")
    clock_offset_ms: float | None = out(
        "its clock against the median rank's, estimated from the collectives' exits; `null` "
        "when not estimated",
        unit="ms",
        digits=6,
    )


@record
class JobSteps:
    """The job's step time (several hosts), with XProf's figure, mean and spread."""

    ranks: int = out("ranks (hosts) with steps")
    rule: str = out("how the job's step time is made from the ranks'")
    pacing_host: str = out("the rank whose steps are the job's: the slowest on average")
    step_time: StepStats = out(
        "the job's step time: the pacing rank's steps (the overview's `step_time`)",
        unit="ms",
        key="step_time_ms",
    )
    rank_mean_step_time: StepStats = out(
        "per pod step, the mean of the ranks' step times", unit="ms", key="rank_mean_step_time_ms"
    )
    spread_ms: float = out(
        "per pod step, slowest minus fastest rank's step time, averaged", unit="ms", digits=6
    )
    xprof_step_time: StepStats = out(
        f"XProf {XPROF_VERSION}'s ALL_HOSTS step time: its step intersection (steps paired "
        "by position, shifted to overlap the most on each host's own clock), then per step the "
        "slowest host",
        unit="ms",
        key="xprof_step_time_ms",
    )
    xprof_breakdown_ms: dict[str, float] = out(
        f"XProf {XPROF_VERSION}'s ALL_HOSTS breakdown: the first host's categories over XProf's "
        "pod steps, average per step, in XProf's categories (collective wait counted as host "
        "compute; collectives counted by time window, where XProf's grouping can leave a "
        "fraction of a ms out); stepscope's is every rank's mean, stretched to the job's step",
        unit="ms",
        digits=6,
    )
    xprof_note: str = out("where XProf's ALL_HOSTS figures and stepscope's differ, in words")
    rows: tuple[RankRow, ...] = out("one per rank")
    straggler_rule: str = out("`collective arrival` or `own time` (no collectives to match)")
    stragglers: tuple[str, ...] = out("each straggler's explanation (cause and steps)")
    held_alike: tuple[str, ...] = out(
        "what held every rank alike rather than one rank, in words: every rank's steps' "
        "thread waiting for a core (the stack sampler's CPU readings); a collective that "
        "lasted long after every rank had arrived, no rank's readings telling which held it"
    )
    clock: str = out(
        "the collectives matched and the clock offsets estimated from them (none where "
        "every rank ran on one machine in one boot: its clock)"
    )


def _ms(ns: float) -> float:
    return float(ns) / 1e6


# The rank rows' "by what bounds them" figures: each key the sum of these `bound_by` limits.
# A loop's wait on its Python batch iterator is input here (decision 388), where XProf's
# categories put that untraced time in "All Others".
BOUND_LIMITS: dict[str, tuple[str, ...]] = {
    "input": ("input",),
    "compute": ("compute",),
    "host": ("host", "dispatch"),
    "collectives": ("collectives",),
}


def bound_ms(db: StepDb, rows: np.ndarray) -> dict[str, float]:
    """The average per step over the steps ``rows`` of ``db``, per `BOUND_LIMITS` key, in
    ms: what the overview's Ranks table and the pod viewer give for a rank."""
    n = len(rows)
    limits = db.limit_ns()
    return {
        key: _ms(sum(float(limits[c][rows].sum()) for c in names) / n) if n else 0.0
        for key, names in BOUND_LIMITS.items()
    }


def job_steps(summary: StepSummary, ranks: Sequence[Rank], pod: PodLateness | None) -> JobSteps:
    """The job's figures for a summary of several hosts (``summary.rank_dur_ns`` set)."""
    per_rank = summary.rank_dur_ns.astype(np.float64)
    mean = per_rank.mean(axis=0) if per_rank.size else np.zeros(0)
    spread = per_rank.max(axis=0) - per_rank.min(axis=0) if per_rank.size else np.zeros(0)
    first = dict(summary.first_host_category_ns)
    if "collective_wait" in first:  # not an XProf category: XProf counts it as host compute
        first["host_compute"] = first["host_compute"] + first.pop("collective_wait")
    xprof_breakdown = {c: _ms(float(np.mean(first[c]))) if len(first[c]) else 0.0 for c in first}
    first_host = summary.rank_hosts[0] if summary.rank_hosts else ""
    xprof = StepStats.of(summary.xprof_dur_ns)
    pacing = summary.rank_hosts[summary.pacing_rank] if summary.rank_hosts else ""
    # XProf's rule on stepscope's pod steps: the same figures when it pairs the same steps
    slowest = per_rank.max(axis=0) if per_rank.size else np.zeros(0)
    same = len(summary.xprof_dur_ns) == len(slowest) and np.array_equal(
        np.sort(summary.xprof_dur_ns), np.sort(slowest)
    )
    pairing = (
        "pairs the same steps"
        if same
        else f"pairs {len(summary.xprof_dur_ns)} steps by their times on each host's own "
        "clock (each capture's times start at its own start), not by step number"
    )
    job_avg_ms = _ms(float(summary.dur_ns.mean())) if len(summary.dur_ns) else 0.0
    longer = (
        f" (longer than {pacing}'s own average, {job_avg_ms:.2f} ms: where the ranks' step "
        "boundaries fall apart, each step's slowest is another rank's)"
        if same and xprof.avg_ms > 1.005 * job_avg_ms
        else ""
    )
    note = (
        f"XProf {XPROF_VERSION}'s ALL_HOSTS step time is per step the slowest host's, avg "
        f"{xprof.avg_ms:.2f} ms{longer}; its step intersection {pairing}; its ALL_HOSTS "
        f"breakdown is the first host's ({first_host}) alone, stepscope's the mean of every "
        "rank's, stretched to the job's step"
    )
    return JobSteps(
        len(summary.rank_hosts),
        "the job's step: the pacing rank's, the slowest on average (in synchronous training "
        "every rank's steps average the job's; without it the job ends with its slowest rank)",
        pacing,
        StepStats.of(summary.dur_ns),
        StepStats.of(mean),
        _ms(float(spread.mean())) if len(spread) else 0.0,
        xprof,
        xprof_breakdown,
        note,
        _rows(ranks, pod),
        pod.method if pod is not None else "",
        tuple(s.explanation for s in pod.stragglers) if pod is not None else (),
        pod.notes if pod is not None else (),
        pod.clock_note if pod is not None else "",
    )


def _rows(ranks: Sequence[Rank], pod: PodLateness | None) -> tuple[RankRow, ...]:
    """Each rank over its steps in the pod steps (paired as everywhere else)."""
    pairing = pair_host_steps(
        [HostSteps(r.host, r.steps.step_num, r.steps.start_ns, r.steps.dur_ns) for r in ranks]
    )
    rows = []
    for i, rank in enumerate(ranks):
        db = rank.steps
        picked = pairing.rows[i][pairing.rows[i] >= 0]
        n = len(picked)
        # each rank's own "bound by" limits (its report's "What bounds the steps"): a rank
        # waiting on its Python batch iterator has its fetch as input there, where XProf's
        # categories put that untraced time in "All Others" (decision 388)
        bound = bound_ms(db, picked)
        wait = 0.0
        role, late, offset = "", 0, None
        if pod is not None and rank.host in pod.hosts:
            j = pod.hosts.index(rank.host)
            present = ~np.isnan(pod.dur_ns[j])
            wait = float(np.nan_to_num(pod.wait_ns[j][present]).mean()) if present.any() else 0.0
            role = pod.role(j)
            late = int(pod.last_count[j]) if pod.last_count is not None else 0
            if pod.offsets_ns is not None and not np.isnan(pod.offsets_ns[j]):
                offset = _ms(pod.offsets_ns[j])
        rows.append(
            RankRow(
                rank.host,
                role,
                n,
                _ms(float(db.dur_ns[picked].mean())) if n else 0.0,
                bound["input"],
                bound["compute"],
                bound["host"],
                bound["collectives"],
                _ms(wait),
                late,
                offset,
            )
        )
    return tuple(rows)
