"""A straggler is named only where it cost the job something (decision 545): a rank last by a
little at a few steps, beside a worker late at most steps from its input, is not sent to the
user; the job's headline shortens a long list of late steps; and a straggler late mostly in a
few of its steps is told in two parts (decision 546)."""

from __future__ import annotations

from stepscope.stats.stragglers import find_stragglers, held_by
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, job

N_STEPS = 100  # of 20 ms each: the job's step time is 2 s, 0.5% of it 10 ms
BLIPS = (2, 6, 30, 34, 70)  # 5 steps: the fewest late steps a straggler of 100 has


def _two_ranks(
    blips: tuple[int, ...], by_ns: int = 2 * MS, b_late: tuple[int, ...] = ()
) -> list[Rank]:
    """Rank "b" waits on its input (ready at 12 ms) in every step but ``blips``, where it is
    ready at 4 ms and rank "a", which does 4 ms of host compute a step, is ready ``by_ns``
    after it: last by that, over the late threshold from 1.9 ms (10% of the median own
    time: (20 + 20 - by) / 2 ms). With ``b_late``, "b" is late only at those steps (else
    ready at 4 ms with "a")."""

    def ready(r: int, s: int) -> int:
        if s in blips:
            return 4 * MS + by_ns if r == 0 else 4 * MS
        if r == 1 and (not b_late or s in b_late):
            return 12 * MS
        return 4 * MS

    def runup(r: int, s: int) -> dict[str, int]:
        return {"host_compute": ready(r, s)} if r == 0 else {"input": ready(r, s)}

    return job(2, N_STEPS, ready, runup=runup, hosts=["a", "b"])


def _woken_late(by_ns: int) -> list[Rank]:
    """Rank "a" does ``by_ns`` more host compute than "b" in every step's run-up (4 ms +
    ``by_ns`` against "b"'s 4 ms of input), so it is steadily the one with more work of its
    own; "b" is woken 8 ms late from its previous collective in every step but ``BLIPS``
    (its run-up no longer: nothing of its own), and at those "a" is last by ``by_ns``."""

    def ready(r: int, s: int) -> int:
        if r == 0:
            return 4 * MS + by_ns
        return 4 * MS if s in BLIPS else 12 * MS

    def runup(r: int, s: int) -> dict[str, int]:
        return {"host_compute": 4 * MS + by_ns} if r == 0 else {"input": 4 * MS}

    return job(2, N_STEPS, ready, runup=runup, hosts=["a", "b"])


def test_a_rank_last_at_five_steps_for_under_half_a_pct_of_the_job_is_not_a_straggler() -> None:
    """Rank "a" holds "b" 1.95 ms at 5 steps: 9.75 ms, under 0.5% of the job's 2 s, though
    its run-ups are steadily longer than "b"'s (decision 545)."""
    pod = find_stragglers(_woken_late(1_950_000))
    assert [s.host for s in pod.stragglers] == ["b"]
    assert pod.role(0) == "waiting"


def test_a_rank_that_held_the_others_exactly_half_a_pct_of_the_job_is_a_straggler() -> None:
    pod = find_stragglers(_woken_late(2 * MS))
    held = {s.host: s.late_ns for s in pod.stragglers}
    assert held["a"] == 10 * MS and pod.role(0) == "straggler"


def test_a_rank_with_more_of_one_thing_but_less_in_all_is_not_a_straggler() -> None:
    """Rank "a" does 4 ms of host compute a step, "b" none but 12 ms of input: "a" is last
    only at the 5 steps where "b"'s input took 4 ms, by 2 ms (exactly 0.5% of the job).
    Before decision 1078 "a" was a straggler there: its host compute exceeded "b"'s in the
    median step, though its whole run-up was 8 ms shorter (a 2-worker TF job's worker 0,
    named at 3 steps of 40 by 1.07 ms beside the worker waiting for its tf.data map)."""
    pod = find_stragglers(_two_ranks(BLIPS))
    assert [s.host for s in pod.stragglers] == ["b"]
    assert pod.role(0) == "waiting"


def test_the_headline_names_four_ranges_of_a_long_list_of_late_steps() -> None:
    """Rank "b" late at step 1 and every other step (51 of 100: under the 75% that reads as
    a count alone): the headline gives the count and the first four ranges; the straggler's
    own explanation keeps them all. (At every other step alone, it says so: decision 557.)"""
    pod = find_stragglers(_two_ranks((), b_late=(1, *range(0, N_STEPS, 2))))
    (b,) = pod.stragglers
    assert held_by(pod).startswith(
        "Held by a straggler: b is late at 51 of 100 steps (steps 0-2, 4, 6, 8, ...), 8.00 ms "
        "per step after the next rank"
    )
    assert "is late at steps 0-2, 4, 6, 8, 10, 12, 14, 16, 18, 20," in b.explanation


def test_a_straggler_late_mostly_in_a_few_steps_is_told_in_two_parts() -> None:
    """Rank "a" is ready 2 ms after "b" at every step (over the 1.9 ms threshold: late at 40
    of 40) and 12 ms after it at steps 10-19, with as much more host compute: two thirds of
    its late time there. The average over all 40 steps (4.50 ms) describes neither part;
    the headline gives each its own figures (decision 546)."""
    hot = range(10, 20)

    def ready(r: int, s: int) -> int:
        return 4 * MS if r == 1 else (16 if s in hot else 6) * MS

    ranks = job(2, 40, ready, end=18 * MS, hosts=["a", "b"])
    pod = find_stragglers(ranks)
    (a,) = pod.stragglers
    assert held_by(pod) == (
        "Held by a straggler: a is late at 40 of 40 steps, most of it (67%) at steps 10-19: "
        "12.00 ms per step after the next rank, from host compute (16.00 ms per step where "
        "the other ranks spent 4.00 ms); at its 30 other late steps by a median 2.00 ms, "
        "from host compute; the other ranks wait for it."
    )
    assert a.explanation.endswith(f"; {a.focus}.") and a.late_ns == 180 * MS


def test_a_straggler_late_by_as_much_at_every_step_is_told_in_one_part() -> None:
    pod = find_stragglers(job(2, 40, lambda r, s: 4 * MS if r == 1 else 6 * MS, hosts=["a", "b"]))
    (a,) = pod.stragglers
    assert a.focus == "" and "most of it" not in held_by(pod)


def test_a_one_step_pods_straggler_is_late_at_step_0_at_one_call() -> None:
    """A pod of one step (a two-rank fixture run read "late at steps 0 (1 of 1 steps): it
    arrived last at 1 collective calls there")."""
    pod = find_stragglers(
        job(2, 1, lambda r, s: 12 * MS if r == 0 else 4 * MS, end=14 * MS, hosts=["a", "b"])
    )
    (a,) = pod.stragglers
    assert a.explanation.startswith(
        "a is late at step 0 (the one step compared): it arrived last at 1 collective call there, "
    )
