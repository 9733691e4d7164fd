"""A rank doing untraced work every step (Python: a metric, logging) while scheduling noise
makes the ranks late by turns: its run-ups show the work in the median step, untraced as it
is (decision 1036). A 4-rank gloo job on 2 cores whose rank 0 did 2.9 ms of Python a step
read "No straggler", its run-ups' untraced time 2.85 ms a step against 0.49-0.53."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.collective_calls import collective_calls
from stepscope.stats.stragglers import PodLateness, Rank, find_stragglers
from tests.pod.builders import gloo_job
from tests.support.analysis import build


def _pod(idle_ms: float, every: bool = True) -> PodLateness:
    """Ranks 0, 1 and 3 late by turns by 4 ms (each a quarter of the steps); rank 2 idle
    (untraced) ``idle_ms`` before its batch: every step, or ``every=False`` in a third of
    the steps only."""
    builders = gloo_job(
        4,
        steps=22,
        input_ms=lambda r, s: 5.0 if s % 4 == r != 2 else 1.0,
        idle_ms=lambda r, s: idle_ms if r == 2 and (every or s % 3 == 0) else 0.0,
    )
    ranks = []
    for b in builders:
        profile = build(b)
        db = build_step_db(profile)
        ranks.append(Rank(b.hostnames[0], db, collective_calls(profile, db)))
    return find_stragglers(ranks)


def test_untraced_work_in_every_steps_run_up_names_the_rank_amid_turns() -> None:
    """1 ms of untraced time every step: last only in the quarter of the steps where none
    of the others is late, as the rank computing 0.6 ms more every step was (decision 501),
    and named the same way, from its untraced time."""
    pod = _pod(1.0)
    assert [(s.host, s.reason) for s in pod.stragglers] == [("vm.rank2", "other")]


def test_untraced_time_in_some_steps_only_is_still_turns() -> None:
    """The same time in a third of the steps: the median step shows none of it."""
    pod = _pod(1.0, every=False)
    assert "vm.rank2" not in [s.host for s in pod.stragglers]
