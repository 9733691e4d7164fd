"""A straggler is named at the steps its own step table shows its work in (decision 600).

A rank writing a checkpoint after step 5's all-reduce holds the others in step 6's: its own
step 5 is the long one (its overview, the periodic-steps finding and its script's own timing
say 5), while the others wait in their step 6. The straggler finding said "late at steps 6,
16, 26, 36" beside "every 10 steps (steps 5, 15, 25 and 35)" for the same pauses.
"""

from __future__ import annotations

from stepscope.stats.diagnostics.multi import skew_across_hosts
from stepscope.stats.stragglers import find_stragglers
from tests.support.arrivals import MS
from tests.support.late_ranks import HELD, PAUSE_MS, STEP_NS
from tests.support.late_ranks import pausing as _pausing


def test_a_pause_after_a_steps_collective_is_named_at_that_step() -> None:
    """The pause ends p's steps 5, 15, 25, 35 (its step table's long steps): it is named
    there, and its explanation says which steps' collectives the others waited in."""
    ranks = _pausing(at_the_end=HELD)
    long_steps = tuple(int(n) for n in ranks[1].steps.step_num[ranks[1].steps.dur_ns > STEP_NS])
    assert long_steps == (5, 15, 25, 35)
    pod = find_stragglers(ranks)
    (p,) = pod.stragglers
    assert (p.host, p.steps, p.held_steps, p.reason) == ("p", long_steps, HELD, "other")
    assert p.late_ns == 4 * PAUSE_MS * MS and p.waiters == 2
    assert p.explanation.startswith(
        "p is late at steps 5, 15, 25, 35 (every 10 steps: 4 of 40 steps): its work at the "
        "end of each made it arrive last at 4 collective calls of the next (steps 6, 16, 26, "
        "36), 35.00 ms per step after the next rank"
    )
    # the waiters are found at the steps they waited in
    assert [pod.role(i) for i in range(3)] == ["waiting", "straggler", "waiting"]
    finding = skew_across_hosts(ranks, {})
    assert finding is not None and finding.steps == long_steps
    assert finding.summary.startswith("p is late at steps 5, 15, 25, 35 (every 10 steps")


def test_a_pause_inside_the_held_step_is_named_at_that_step() -> None:
    """The same pause at the start of steps 6, 16, 26, 36 (a slow fetch): those steps."""
    pod = find_stragglers(_pausing(at_the_end=()))
    (p,) = pod.stragglers
    assert (p.steps, p.held_steps) == (HELD, ())
    assert "it arrived last at 4 collective calls there" in p.explanation


def test_some_pauses_after_the_collective_some_inside() -> None:
    """Pauses ending steps 5 and 15, and inside steps 26 and 36: each named where it is, and
    the collectives the others waited in said with the ones after a step's end."""
    (p,) = find_stragglers(_pausing(at_the_end=(6, 16))).stragglers
    assert (p.steps, p.held_steps) == ((5, 15, 26, 36), HELD)
    assert p.explanation.startswith(
        "p is late at steps 5, 15, 26, 36 (4 of 40 steps): it arrived last at 4 collective "
        "calls of steps 6, 16, 26, 36 (of steps 6, 16 after its work at the end of the step "
        "before), 35.00 ms per step after the next rank"
    )
