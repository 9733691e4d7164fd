"""A collective that lasted long after every rank arrived, with no CPU readings to tell who
held it, is said of the job with what the trace knows and what it does not (decision 686):
the rank that arrived last (by too little to explain it), not a straggler."""

from __future__ import annotations

from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_stalls import UNREAD_WORDS
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, job
from tests.support.cpu_readings import with_cpu

INSIDE = (10, 20)  # of 30 steps: every rank leaves 100 ms late


def _ranks(late: dict[int, int] | None = None) -> list[Rank]:
    """Three ranks arriving 4 ms into each step (rank "c" 1 ms later), leaving at 15 ms; at
    `INSIDE` 100 ms later; rank "d" late by ``late[s]`` ms at step s."""
    late = late or {}

    def ready(r: int, s: int) -> int:
        return (4 + (r == 2) + (late.get(s, 0) if r == 1 else 0)) * MS

    def exit_(r: int, s: int) -> int:
        return (15 + (100 if s in INSIDE else 0) + late.get(s, 0)) * MS

    runup = {"runup": lambda r, s: {"host_compute": 4 * MS, "other": ready(r, s) - 4 * MS}}
    return job(3, 30, ready, exit_=exit_, hosts=["a", "d", "c"], **runup)


def test_a_call_lasting_long_without_readings_is_said_with_its_last_arrival() -> None:
    pod = find_stragglers(_ranks())
    assert pod.stragglers == ()
    (note,) = pod.notes
    assert note == (
        "Stalled inside a collective: at steps 10, 20 every rank had arrived at its collective "
        "and it lasted 100.00 ms longer than usual each time on all of them (the job's steps "
        "take 20.00 ms); the last to arrive: c (1.00 ms after the next), c (1.00 ms after the "
        "next), too little to explain it. A rank stopped or kept off its cores inside the "
        "call, its communication thread, or the network held every rank; which rank is not "
        "known: no rank has CPU readings (the stack sampler's Thread CPU line: the capture's "
        "python_sampler_hz was 0, or its threads were not sampled)"
    )


def test_readings_that_show_no_holder_are_said_so() -> None:
    ranks = _ranks()
    with_cpu(ranks, {})  # every rank read on throughout
    (note,) = find_stragglers(ranks).notes
    assert note.endswith(
        "which rank is not known: no rank's CPU readings show its process stopped or its "
        "thread waiting then"
    )


def test_a_rank_stalling_by_arrival_is_the_suspect() -> None:
    """Rank "d" arrived 120 ms late at steps 5 and 25: named, without readings said so, and
    the suspect of the calls that lasted long."""
    pod = find_stragglers(_ranks({5: 120, 25: 120}))
    (d,) = pod.stragglers
    assert d.host == "d" and UNREAD_WORDS in d.explanation
    (note,) = pod.notes
    assert note.endswith(
        "; d, which stalled the job by its arrival at steps 5, 25, may have held these too"
    )


def test_a_call_no_longer_than_the_other_holds_is_not_said() -> None:
    """Rank "d" late by 55 ms at step 5 (under the stall bar, 60 ms): calls lasting 100 ms
    are not twice that."""
    assert find_stragglers(_ranks({5: 55})).notes == ()
