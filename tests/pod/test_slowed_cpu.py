"""A rank running the same ops as the others, slower (decision 602), is told descheduled or
not by its steps' thread's CPU readings (decision 646): runnable but waiting for a core
most of its late run-ups, or on a core the whole time (a slower core, larger inputs)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, STEP
from tests.support.late_ranks import slowed as _late


def _read(ranks: list[Rank], on_share: float, runnable_share: float) -> list[Rank]:
    """Readings every 1 ms over 30 steps: rank "d" on a core ``on_share`` and runnable
    ``runnable_share`` of each; the others on a core 90% of it."""
    start = np.arange(0, 30 * STEP, MS, dtype=np.int64)
    out = []
    for rank in ranks:
        on, rq = (on_share, runnable_share) if rank.host == "d" else (0.9, 0.0)
        cpu = ThreadCpu(
            start,
            start + MS,
            np.full(len(start), int(on * MS), np.int64),
            np.full(len(start), int(rq * MS), np.int64),
        )
        assert rank.calls is not None
        out.append(replace(rank, calls=replace(rank.calls, cpu=cpu)))
    return out


def test_a_thread_waiting_for_a_core_is_said_descheduled() -> None:
    (d,) = find_stragglers(_read(_late(host_ms=16, late_ops=100), 0.2, 0.75)).stragglers
    assert d.slowed == 4.0
    assert (
        "the same work, slower (its steps' thread was on a core 20% of those run-ups and "
        "runnable, waiting for one, 75% (the other ranks' 90% and 0%): descheduled, other "
        "processes held its cores)"
    ) in d.explanation
    assert "the trace holds no CPU time" not in d.explanation


def test_a_thread_on_its_core_throughout_is_not_said_descheduled() -> None:
    (d,) = find_stragglers(_read(_late(host_ms=16, late_ops=100), 0.95, 0.02)).stragglers
    assert (
        "(the other ranks' 90% and 0%): it ran the whole time, not descheduled; a slower "
        "core, or larger inputs to the same ops (a bigger batch, longer sequences), look like "
        "this)"
    ) in d.explanation


def test_without_readings_the_trace_says_it_cannot_tell() -> None:
    (d,) = find_stragglers(_late(host_ms=16, late_ops=100)).stragglers
    assert "the trace holds no CPU time to tell which" in d.explanation


def test_a_thread_on_its_core_beyond_the_slowdown_did_work_of_its_own() -> None:
    """30 ms untraced (a checkpoint's `torch.save`: Python, no op) with its 100 ops 3x
    slower, its thread on a core 90% of it (37.6 ms per step: the readings end 2 ms before
    its last arrival) against the others' 3.6, more than 2 x 3.0 times theirs. Not the same
    work slower: its CPU time is said instead."""
    ranks = _read(_late(host_ms=12, late_ops=100, untraced_ms=30), 0.9, 0.0)
    (d,) = find_stragglers(ranks).stragglers
    assert (d.reason, d.slowed) == ("other", 0.0)
    assert "the same work, slower" not in d.explanation
    assert (
        "; its steps' thread was on a core 37.60 ms per step of those run-ups (the other "
        "ranks 3.60 ms) and runnable, waiting for one, 0.00 ms (the others 0.00 ms)"
    ) in d.explanation
