"""Four balanced ranks on a busy machine, each late at a few scattered steps, take turns:
none is named for lateness the others reach too (decision 559)."""

from __future__ import annotations

from stepscope.stats.stragglers import find_stragglers
from tests.support.arrivals import MS, job

# /tmp/ranks13/j3d.py's run (balanced, load 9-15): ranks late at 4, 3, 2 and 2 steps
LATE_MS = {
    0: {18: 3.0, 26: 9.0, 31: 7.0, 33: 10.0},
    1: {19: 4.0, 24: 5.0, 27: 4.0},
    2: {10: 3.0, 15: 5.0},
    3: {12: 2.5, 28: 2.5},
}


def test_a_rank_late_at_three_steps_amid_others_late_at_two_takes_its_turn() -> None:
    """Rank 1, late by 4-5 ms at 3 of 35 steps (over 20% of its 19 ms own time), was named:
    only two of the four ranks were late at the 3 steps that make a straggler, so the ranks
    did not "take turns", and the others were late at one step within its own 19-27, so it
    was "late alone". Rank 0 was late at 4 steps, by up to 10 ms."""

    def ready(r: int, s: int) -> int:
        return int((4.0 + LATE_MS[r].get(s, 0.0)) * MS)

    assert find_stragglers(job(4, 35, ready)).stragglers == ()


def test_a_rank_late_at_three_steps_while_the_others_never_are_is_named() -> None:
    """The same rank 1 with the other ranks on time: late alone, a straggler."""

    def ready(r: int, s: int) -> int:
        return int((4.0 + (LATE_MS[1].get(s, 0.0) if r == 1 else 0.0)) * MS)

    (only,) = find_stragglers(job(4, 35, ready)).stragglers
    assert (only.host, only.steps) == ("r1", (19, 24, 27))
