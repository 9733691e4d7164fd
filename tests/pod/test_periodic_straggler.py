"""A rank pausing every k steps amid ranks late by turns is a straggler at its pauses, and
the finding says so with its fix (decision 557)."""

from __future__ import annotations

from stepscope.stats.diagnostics.multi import skew_across_hosts
from stepscope.stats.stragglers import find_stragglers, held_by
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, job

STEP_NS = 60 * MS  # every rank's steps; all leave each all-reduce at 50 ms
PAUSES = (6, 16, 26, 36)  # rank "p" writes a checkpoint before these steps' all-reduce
# a busy machine's scheduling: "a" and "c" late by turns by 8-9 ms, "c" once by 32 ms
NOISE = {("a", 7): 8, ("a", 14): 8, ("a", 23): 8, ("a", 33): 8}
NOISE |= {("c", 2): 9, ("c", 11): 9, ("c", 21): 9, ("c", 29): 9, ("c", 3): 32}


def _pausing(pauses: tuple[int, ...], pause_ms: int = 35) -> list[Rank]:
    """Three ranks of 40 steps, ready at 4 ms: "p" idle (untraced) ``pause_ms`` more at
    ``pauses``, "a" and "c" late from host compute at their `NOISE` steps."""
    hosts = ["a", "p", "c"]

    def extra_ms(r: int, s: int) -> int:
        if hosts[r] == "p":
            return pause_ms if s in pauses else 0
        return NOISE.get((hosts[r], s), 0)

    def ready(r: int, s: int) -> int:
        return (4 + extra_ms(r, s)) * MS

    def runup(r: int, s: int) -> dict[str, int]:
        if hosts[r] == "p":
            return {"host_compute": 4 * MS, "other": extra_ms(r, s) * MS}
        return {"host_compute": ready(r, s)}

    return job(3, 40, ready, end=50 * MS, runup=runup, hosts=hosts, step_ns=STEP_NS)


def test_a_rank_pausing_every_ten_steps_amid_turns_is_named_at_its_pauses() -> None:
    """/tmp/ranks13/j2b.py's job: rank 1 writing a checkpoint every 10 steps (36.5-45.5 ms
    by its own timing) read "No straggler": its 35 ms of untraced time had to pass twice
    the longest lateness of any other rank (here "c"'s one 32 ms), as a rank late at
    scattered steps must. At every 10th step it is the straggler."""
    pod = find_stragglers(_pausing(PAUSES))
    assert [(s.host, s.steps, s.reason) for s in pod.stragglers] == [("p", PAUSES, "other")]
    (p,) = pod.stragglers
    assert p.late_ns == 4 * 35 * MS and p.waiters == 2
    assert held_by(pod) == (
        "Held by a straggler: p is late at steps 6, 16, 26, 36 (every 10 steps: 4 of 40 "
        "steps), 35.00 ms per step after the next rank, from untraced host work ('All "
        "Others': Python, I/O, waits no traced op covers) (35.00 ms per step where the other "
        "ranks spent 0.00 ms); the other ranks wait for it."
    )
    assert "(every 10 steps: 4 of 40 steps)" in p.explanation


def test_pauses_at_no_period_amid_turns_are_not_named() -> None:
    """The same pauses, one of them a step late (27 for 26): noise can be as long, but it
    does not come back every k steps."""
    assert find_stragglers(_pausing((6, 16, 27, 36))).stragglers == ()


def test_pauses_every_ten_steps_within_the_others_noise_are_not_named() -> None:
    """12 ms pauses every 10 steps: under the bar of the others' lateness (twice its
    median of 9 ms)."""
    assert find_stragglers(_pausing(PAUSES, pause_ms=12)).stragglers == ()


def test_the_finding_names_the_period_and_its_fix() -> None:
    """The finding (decision 556's sentence) says every 10 steps, and its fix says what a
    rank does alone every k steps. The waiters' time: 2 x 4 x 35 ms of their 2 x 40 x 60
    ms."""
    finding = skew_across_hosts(_pausing(PAUSES), {})
    assert finding is not None and finding.summary == (
        "p is late at steps 6, 16, 26, 36 (every 10 steps: 4 of 40 steps), 35.00 ms per "
        "step after the next rank, from untraced host work ('All Others': Python, I/O, "
        "waits no traced op covers) (35.00 ms per step where the other ranks spent 0.00 ms); "
        "2 other ranks wait for it in their collectives, 280.00 ms in all (6% of their "
        "time)."
    )
    assert finding.fix.startswith(
        "Every 10 steps this rank alone does something the others do not (a checkpoint, an "
        "evaluation, logging, a garbage collection)"
    )
