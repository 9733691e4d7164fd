"""The diagnostics finding of a straggler in a sentence or two (decision 556): who, when (a
long list of steps shortened as the headline does), by how much, why, and what the others
lose; every step, each waiting rank and the clock offsets are the pod viewer's."""

from __future__ import annotations

from stepscope.stats.diagnostics.multi import skew_across_hosts
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, job

LATE = (1, *range(0, 40, 2))  # 21 of 40 steps: 0-2, 4, 6, 8, ...


def _input_straggler() -> list[Rank]:
    """Rank "s" of three waits 10 ms on its input at `LATE` steps (6 ms after the others,
    ready at 4 ms from host compute), on time elsewhere."""

    def ready(r: int, s: int) -> int:
        return 10 * MS if r == 1 and s in LATE else 4 * MS

    def runup(r: int, s: int) -> dict[str, int]:
        return {"input": ready(r, s)} if r == 1 else {"host_compute": ready(r, s)}

    return job(3, 40, ready, runup=runup, hosts=["a", "s", "c"])


def test_the_finding_says_who_when_how_much_why_and_the_others_loss() -> None:
    """It said the straggler's whole explanation (all 21 steps in 20 ranges, the calls it
    arrived last at), "Waiting (not late): a, c." and the clock offsets of every rank. The
    others' loss: 2 ranks x 21 steps x 6 ms of their 2 x 40 x 20 ms."""
    finding = skew_across_hosts(_input_straggler(), {})
    assert finding is not None
    assert finding.summary == (
        "s is late at 21 of 40 steps (steps 0-2, 4, 6, 8, ...), 6.00 ms per step after the "
        "next rank, from input (10.00 ms per step where the other ranks spent 0.00 ms); 2 "
        "other ranks wait for it in their collectives, 252.00 ms in all (16% of their "
        "time)."
    )
    assert sorted(finding.steps) == sorted(LATE)  # the evidence keeps every step
