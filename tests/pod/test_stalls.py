"""A rank that stalls the whole job a few times, each stall longer than several steps, is
named at the steps holding the stalls (decision 645), whether it arrived last at the
collectives or every rank had arrived and the call lasted longer on all of them; what its
thread did then is read from its CPU readings (`ThreadCpu`)."""

from __future__ import annotations

from stepscope.stats.diagnostics.multi import skew_across_hosts
from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_stalls import STALL_FIX
from stepscope.stats.stragglers_types import Rank
from stepscope.tools.pod_viewer import _lateness
from tests.support.arrivals import MS, STEP, job
from tests.support.cpu_readings import with_cpu

STALLED = (10, 20)  # of 30 steps: 2, fewer than the straggler rules' 5% of the steps
STALL = 100 * MS


def _stopped_inside() -> list[Rank]:
    """Three ranks arrive 4 ms into each step and leave at 15 ms; at `STALLED` every rank
    leaves 100 ms later (rank "d" stopped inside the all-reduce): no rank arrived last."""
    return job(
        3,
        30,
        lambda r, s: 4 * MS,
        exit_=lambda r, s: 15 * MS + (STALL if s in STALLED else 0),
        hosts=["a", "d", "c"],
    )


def test_a_rank_stopped_inside_the_collective_is_named_by_its_readings() -> None:
    ranks = _stopped_inside()
    with_cpu(ranks, {1: [(s * STEP + 5 * MS, s * STEP + 110 * MS) for s in STALLED]})
    (d,) = find_stragglers(ranks).stragglers
    assert (d.host, d.steps, d.stall) == ("d", STALLED, "stopped")
    assert d.late_ns == 2 * STALL
    assert (
        "d stalled the job 2 times (steps 10, 20 of 30), 100.00 ms each time, 200.00 ms in "
        "all, where the job's steps take 20.00 ms: at steps 10, 20 every rank had arrived at "
        "the collective and it lasted 100.00 ms longer than usual on all of them. Its CPU "
        "readings then: its process did not run: stepscope's sampler in it took no reading "
        "for 210.0 ms of those 222.0 ms, while the other ranks' read on"
    ) in d.explanation
    finding = skew_across_hosts(ranks, {})
    assert finding is not None
    assert finding.summary.startswith("d is late at 2 of 30 steps, stalling every rank at")
    assert finding.fix == STALL_FIX["stopped"]


def test_the_heatmap_marks_a_stall_inside_the_call_at_its_step() -> None:
    """No arrival marks it: the pod viewer's cell of the stalling rank at each stalled step
    is late by the time it held the others (decision 648)."""
    ranks = _stopped_inside()
    with_cpu(ranks, {1: [(s * STEP + 5 * MS, s * STEP + 110 * MS) for s in STALLED]})
    heatmap, _ = _lateness(find_stragglers(ranks))
    assert heatmap is not None
    assert [heatmap.steps[k] for k, x in enumerate(heatmap.late[1]) if x] == list(STALLED)
    assert [heatmap.late_ms[1][s] for s in STALLED] == [100.0, 100.0]


def test_without_readings_a_call_lasting_longer_names_no_rank() -> None:
    """Every rank arrived at once: only the readings can tell who held the call."""
    assert find_stragglers(_stopped_inside()).stragglers == ()
    ranks = _stopped_inside()
    with_cpu(ranks, {})  # every rank read on throughout: nobody stopped
    assert find_stragglers(ranks).stragglers == ()


def _late_arrivals(who: dict[int, int]) -> list[Rank]:
    """Ranks ready 4 ms into each step; rank r arrives 100 ms late at step ``who[r]``..."""

    def ready(r: int, s: int) -> int:
        return 4 * MS + (STALL if who.get(s) == r else 0)

    return job(
        3,
        30,
        ready,
        exit_=lambda r, s: 15 * MS + (STALL if s in who else 0),
        runup=lambda r, s: {"host_compute": 4 * MS, "other": ready(r, s) - 4 * MS},
        hosts=["a", "d", "c"],
    )


def test_a_rank_last_by_a_long_stall_at_a_few_steps_is_named() -> None:
    """Last by 100 ms at 2 of 30 steps (the straggler rules want 5%): named, the reason its
    run-ups' (untraced), the fix the reason's without readings."""
    ranks = _late_arrivals({s: 1 for s in STALLED})
    (d,) = find_stragglers(ranks).stragglers
    assert (d.host, d.steps, d.stall, d.reason) == ("d", STALLED, "unread", "other")
    assert "it arrived last at the collectives of steps 10, 20, after untraced host work" in (
        d.explanation
    )
    finding = skew_across_hosts(ranks, {})
    assert finding is not None and finding.fix.startswith("The late rank spends longer in host")


def test_a_rank_waiting_for_a_core_in_its_stalls_is_told_so() -> None:
    ranks = _late_arrivals({s: 1 for s in STALLED})
    with_cpu(ranks, {1: [(s * STEP + 4 * MS, s * STEP + 104 * MS) for s in STALLED]}, d_ns=90 * MS)
    (d,) = find_stragglers(ranks).stragglers
    assert d.stall == "waiting"
    assert "its steps' thread was runnable but waiting for a core 180.0 ms of those 200.0 ms" in (
        d.explanation
    )
    finding = skew_across_hosts(ranks, {})
    assert finding is not None and finding.fix == STALL_FIX["waiting"]


def test_ranks_stalling_by_turns_are_not_named() -> None:
    """One long stall each on three ranks: no rank holds the job more than the others."""
    assert find_stragglers(_late_arrivals({5: 0, 12: 1, 22: 2})).stragglers == ()
