"""A rank late at a few steps behind a straggler is not named next in line (decision 558):
among the few ranks left its lateness is measured against too little noise."""

from __future__ import annotations

from stepscope.stats.stragglers import find_stragglers, held_by
from stepscope.stats.stragglers_types import Rank
from stepscope.stats.stragglers_words import finding_summary
from tests.support.arrivals import MS, job

STEP_NS = 60 * MS  # every rank's steps; all leave each all-reduce at 50 ms


def _behind(late_steps: tuple[int, ...]) -> list[Rank]:
    """Rank "a" waits 20 ms on its input every step (the straggler); "b" computes 5 ms more
    at steps 4, 12, 20 and 25; "c" is idle (untraced) 12 ms more at ``late_steps``."""

    def ready(r: int, s: int) -> int:
        extra = (20, 5 * (s in (4, 12, 20, 25)), 12 * (s in late_steps))[r]
        return (4 + extra) * MS

    def runup(r: int, s: int) -> dict[str, int]:
        if r == 0:
            return {"input": 20 * MS, "host_compute": 4 * MS}
        if r == 2:
            return {"host_compute": 4 * MS, "other": ready(r, s) - 4 * MS}
        return {"host_compute": ready(r, s)}

    return job(3, 30, ready, end=50 * MS, runup=runup, hosts=["a", "b", "c"], step_ns=STEP_NS)


def test_a_rank_late_in_a_few_steps_behind_a_straggler_is_not_next_in_line() -> None:
    """/tmp/ranks13/job2.py, run j2a: once the rank checkpointing every 10 steps was named, the rank
    descheduled in the first 14 steps of that busy machine (late by 7-30 ms of untraced
    time) was "next in line, hidden behind" it: among the two ranks left, the other's few
    ms of lateness were all the noise it was measured against. Here "c", 12 ms late at
    7 steps against "b"'s 5 ms at 4 (a bar of 10 ms), is no longer named; "a" is."""
    pod = find_stragglers(_behind((0, 1, 2, 3, 4, 5, 8)))
    assert [(s.host, s.behind) for s in pod.stragglers] == [("a", "")]
    assert held_by(pod).startswith("Held by a straggler: a is late at 30 of 30 steps")


def test_a_rank_late_at_most_steps_behind_a_straggler_is_next_in_line() -> None:
    """The same "c" late at 25 of the 30 steps: next in line, hidden behind "a" (by 7 ms
    where "b" is late by 5 too: 11.40 ms per step)."""
    pod = find_stragglers(_behind(tuple(range(25))))
    assert [(s.host, s.behind) for s in pod.stragglers] == [("a", ""), ("c", "a")]
    assert finding_summary(pod).endswith(
        "Next in line, hidden behind a: c, the last of the other ranks at 25 of 30 steps, "
        "11.40 ms per step, from untraced host work ('All Others': Python, I/O, waits no "
        "traced op covers)."
    )
