"""A straggler is named only where it cost the job something (decision 545): a rank last by a
little at a few steps, beside a worker late at most steps from its input, is not sent to the
user; and the job's headline shortens a long list of late steps."""

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


def test_a_rank_last_at_five_steps_for_under_half_a_pct_of_the_job_is_not_a_straggler() -> None:
    """Rank "a" holds "b" 1.95 ms at 5 steps: 9.75 ms, under 0.5% of the job's 2 s. Before
    decision 545 it was a second straggler ("a" is steadily 4 ms of host compute ahead of
    "b"'s input wait in the run-ups, so its late steps count)."""
    pod = find_stragglers(_two_ranks(BLIPS, by_ns=1_950_000))
    assert [s.host for s in pod.stragglers] == ["b"]
    assert pod.role(0) == "waiting"


def test_a_rank_that_held_the_others_exactly_half_a_pct_of_the_job_is_a_straggler() -> None:
    pod = find_stragglers(_two_ranks(BLIPS))
    held = {s.host: s.late_ns for s in pod.stragglers}
    assert held["a"] == 10 * MS and pod.role(0) == "straggler"


def test_the_headline_names_four_ranges_of_a_long_list_of_late_steps() -> None:
    """Rank "b" late at every other step (50 of 100: under the 75% that reads as a count
    alone): the headline gives the count and the first four ranges; the straggler's own
    explanation keeps them all."""
    pod = find_stragglers(_two_ranks((), b_late=tuple(range(0, N_STEPS, 2))))
    (b,) = pod.stragglers
    assert held_by(pod).startswith(
        "Held by a straggler: b is late at 50 of 100 steps (steps 0, 2, 4, 6, ...), 8.00 ms "
        "per step after the next rank"
    )
    assert "is late at steps 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20," in b.explanation
