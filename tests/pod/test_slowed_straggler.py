"""A rank late because its process was off its core is not said to do more work
(decision 602): its run-ups hold as many traced host ops as the other ranks', run several
times longer. A rank doing more work has more ops; the trace holds no CPU time, so the
words say what is known (the same work, slower) and what it looks like."""

from __future__ import annotations

from stepscope.stats.diagnostics.multi import skew_across_hosts
from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_types import Rank
from tests.support.late_ranks import LATE
from tests.support.late_ranks import slowed as _late


def test_the_same_ops_run_slower_are_said_so_with_a_cores_fix() -> None:
    """100 ops in 16 ms where the others ran them in 4: 4.0x longer, the same work."""
    ranks = _late(host_ms=16, late_ops=100)
    (d,) = find_stragglers(ranks).stragglers
    assert (d.host, d.steps, d.reason, d.slowed) == ("d", LATE, "host_compute", 4.0)
    assert (
        "where the other ranks spent 4.00 ms; its traced host ops there were as many as the "
        "others' (100 per step, the others 100) and ran 4.0x longer: the same work, slower "
        "(its process off its core, descheduled while other processes took it, looks like "
        "this, as do a slower core and larger inputs to the same ops (a bigger batch, longer "
        "sequences); the trace holds no CPU time to tell which)"
    ) in d.explanation
    finding = skew_across_hosts(ranks, {})
    assert finding is not None
    assert (
        "(16.00 ms per step where the other ranks spent 4.00 ms; its traced ops the others', "
        "run 4.0x longer)"
    ) in finding.summary
    assert finding.fix.startswith("The late rank runs the same ops as the others, slower:")
    # no claim of work of its own every k steps
    assert "this rank alone does something" not in finding.fix


def test_an_untraced_stall_with_its_ops_slowed_is_the_same_work_slower() -> None:
    """30 ms untraced and its 100 ops in 12 ms (3.0x): off its core, not its own work."""
    (d,) = find_stragglers(_late(host_ms=12, late_ops=100, untraced_ms=30)).stragglers
    assert (d.reason, d.slowed) == ("other", 3.0)
    assert "and ran 3.0x longer: the same work, slower" in d.explanation


def test_more_ops_are_more_work() -> None:
    """400 ops in 16 ms: work of its own (a checkpoint, metrics), said as before."""
    ranks = _late(host_ms=16, late_ops=400)
    _check_more_work(ranks)


def test_a_few_long_ops_may_be_more_work() -> None:
    """5 ops a step (the others' too) in 16 ms against 4: one long op may hold more work (a
    bigger batch); not told as the same work slowed."""
    _check_more_work(_late(host_ms=16, late_ops=5, ops_each=5))


def _check_more_work(ranks: list[Rank]) -> None:
    (d,) = find_stragglers(ranks).stragglers
    assert (d.reason, d.slowed) == ("host_compute", 0.0)
    assert "the same work" not in d.explanation
    finding = skew_across_hosts(ranks, {})
    assert finding is not None
    assert "The late rank does extra work on its CPU inside steps" in finding.fix
