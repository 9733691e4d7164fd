"""Every rank of a job waiting for a CPU core is said of the whole job (decision 687): 4
ranks of 2 threads on 2 cores beside a busy loop are all slow, and a rank late at a
collective may be late by the machine's doing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.diagnostics.cores import job_cores_wait
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_cores import CORES_FIX
from stepscope.stats.stragglers_types import Rank
from stepscope.stats.stragglers_words import job_held
from tests.support.arrivals import MS, STEP, job


def _ranks(
    runnable_ms: dict[int, float],
    read: tuple[int, ...] = (0, 1, 2),
    late_ms: int = 0,
    on_ms: float = 1.0,
) -> list[Rank]:
    """Three ranks of 30 steps arriving 4 ms into each (rank 1 ``late_ms`` later); the ranks
    in ``read`` with readings every 5 ms, on a core ``on_ms`` of each and runnable
    ``runnable_ms[r]`` ms."""
    ranks = job(3, 30, lambda r, s: (4 + (late_ms if r == 1 else 0)) * MS)
    for r in read:
        start = np.arange(0, 30 * STEP, 5 * MS, dtype=np.int64)
        on = np.full(len(start), int(on_ms * MS), np.int64)
        rq = np.full(len(start), int(runnable_ms[r] * MS), np.int64)
        calls = ranks[r].calls
        assert calls is not None
        cpu = ThreadCpu(start, start + 5 * MS, on, rq)
        ranks[r] = replace(ranks[r], calls=replace(calls, cpu=cpu))
    return ranks


def test_every_rank_waiting_for_a_core_is_said_of_the_job() -> None:
    ranks = _ranks({0: 3.0, 1: 3.5, 2: 4.0})
    pod = find_stragglers(ranks)
    assert pod.stragglers == ()
    (note,) = pod.notes
    assert note == (
        "Every rank waits for a core: each rank's steps' thread was runnable but waiting for a "
        "core 60-80% of its steps' time and on a core 20% (the stack sampler's CPU readings): "
        "the job's threads and the machine's other processes want more cores than it has, so "
        "every rank's steps (median 20.00 ms) are slow, their compute and collectives mostly "
        "this wait, and a rank late at a collective may be late by the machine's doing, not "
        "its own"
    )
    finding = job_cores_wait(ranks, {})
    assert finding is not None
    assert (finding.severity, finding.fix) == ("high", CORES_FIX)
    assert finding.time_ns == 30 * 4 * (3 + 3.5 + 4) * MS


def test_not_said_when_a_rank_waits_little_or_was_not_read() -> None:
    """One rank waiting 4 of 5 ms, the others 0.5: no "every rank" (a straggler's matter);
    every rank waiting, one without readings: not known of every rank."""
    for ranks in (_ranks({0: 0.5, 1: 4.0, 2: 0.5}), _ranks({0: 3, 1: 3, 2: 3}, read=(0, 1))):
        assert find_stragglers(ranks).notes == ()
        assert job_cores_wait(ranks, {}) is None


def test_every_rank_waiting_for_a_core_leads_a_straggler_in_the_headline() -> None:
    """Every rank waiting for a core and one rank late at its collectives: the job's headline
    says the core wait first, then the straggler (decision 734). 4 ranks of 2 threads on one
    core read "Held by a straggler: vm.rank1 is late at steps 1, 8, 16, 24 (4 of 40 steps)"
    first, as if rank 1 were the cause."""
    ranks = _ranks({0: 3.0, 1: 3.5, 2: 4.0}, late_ms=8)
    pod = find_stragglers(ranks)
    assert [s.host for s in pod.stragglers] == ["r1"]
    said = job_held(pod)
    assert said.startswith("Every rank waits for a core: each rank's steps' thread")
    assert "Held by a straggler: r1 is late" in said
    assert said.index("Held by a straggler") > said.index("Every rank waits for a core")


def test_ranks_waiting_longer_than_they_run_wait_for_a_core() -> None:
    """Decision 1039: 4 ranks of 2 threads on one core beside a busy loop read runnable 21-23%
    of their steps on a quiet machine (asleep in their collectives much of the rest), under
    `CORE_WAIT`: a rank runnable 20-22% of its steps and on a core 8% waited for a core
    most of the time it wanted one. The same runnable time beside 30% on a core, or 12%
    runnable, is no job-wide wait."""
    ranks = _ranks({0: 1.0, 1: 1.05, 2: 1.1}, on_ms=0.4)
    (note,) = find_stragglers(ranks).notes
    assert note.startswith(
        "Every rank waits for a core: each rank's steps' thread was runnable but waiting for a "
        "core 20-22% of its steps' time and on a core 8% "
    )
    assert job_cores_wait(ranks, {}) is not None
    for ranks in (
        _ranks({0: 1.0, 1: 1.05, 2: 1.1}, on_ms=1.5),
        _ranks({0: 0.6, 1: 0.6, 2: 0.6}, on_ms=0.4),
    ):
        assert find_stragglers(ranks).notes == ()
        assert job_cores_wait(ranks, {}) is None
