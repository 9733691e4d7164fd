"""The first step of a job: the ranks begin it at their own times (their processes, their
captures, the first collectives' set-up), so a rank last there is late only by its own
run-up, and a first step every rank waited in is compared for none (decision 1038)."""

from __future__ import annotations

from stepscope.stats.stragglers import find_stragglers
from tests.support.arrivals import MS, Call, rank

STEPS = 10
SLOW = (4, 5, 6, 7, 8, 9)  # rank 1 computes 5 ms more in these steps: the straggler


def _job(start_late: int = 0, mutual: bool = False, own_first: int = 0) -> list:
    """Two ranks, two blocking all-reduces a step, each left 0.5 ms after the last arrival:
    4 ms of compute before the first (rank 1: 5 ms more in `SLOW`), 1 ms before the second.
    At step 0 rank 1 begins ``start_late`` later (its capture or process began later, its
    run-up the same) and computes ``own_first`` more; ``mutual``: rank 1 computes 8 ms more
    before the first call and rank 0 3 ms more before the second (each waits once)."""
    first = mutual or start_late or own_first
    calls: list[list[Call]] = [[], []]
    for s in range(STEPS):
        t0 = s * 20 * MS
        begun = (t0, t0 + (start_late if s == 0 else 0))
        work1 = [4 * MS, 4 * MS + (5 * MS if s in SLOW else 0)]
        work2 = [MS, MS]
        if s == 0 and first:
            work1[1] += own_first + (8 * MS if mutual else 0)
            work2[0] += 3 * MS if mutual else 0
        ready = [begun[r] + work1[r] for r in range(2)]
        exit1 = max(ready) + MS // 2
        second = [exit1 + work2[r] for r in range(2)]
        exit2 = max(second) + MS // 2
        for r in range(2):
            calls[r].append(Call(s, ready[r], exit1, runup={"host_compute": work1[r]}))
            calls[r].append(Call(s, second[r], exit2, runup={"host_compute": work2[r]}))
    return [rank(f"vm.rank{r}", calls[r], STEPS) for r in range(2)]


def test_a_straggler_is_found_at_its_steps() -> None:
    [late] = find_stragglers(_job()).stragglers
    assert (late.host, late.steps) == ("vm.rank1", SLOW)


def test_a_rank_begun_later_is_not_late_at_the_first_step() -> None:
    """Rank 1's step 0 began 8 ms after rank 0's with the same run-up: last by 8 ms, its
    start's doing (on main: named late at steps 0 and 4-9)."""
    pod = find_stragglers(_job(start_late=8 * MS))
    [late] = pod.stragglers
    assert (late.host, late.steps) == ("vm.rank1", SLOW)
    assert not pod.late[:, 0].any()


def test_its_own_longer_first_step_still_counts() -> None:
    """The same lateness from 8 ms more of its own compute: late at step 0 too."""
    pod = find_stragglers(_job(own_first=8 * MS))
    [late] = pod.stragglers
    assert late.steps == (0, *SLOW)


def test_a_first_step_every_rank_waited_in_counts_for_none() -> None:
    """Rank 1 last at step 0's first call by 8 ms of its own compute, rank 0 last at its
    second by 3 ms: each waited for the other (on main: rank 1 late at steps 0 and 4-9)."""
    pod = find_stragglers(_job(mutual=True))
    [late] = pod.stragglers
    assert (late.host, late.steps) == ("vm.rank1", SLOW)
    assert not pod.late[:, 0].any()
    assert (pod.wait_ns[:, 0] > 2 * MS).all()  # the waits stay in the figures
