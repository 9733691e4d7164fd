"""A rank that stalls the whole job once, for several steps' time, is named at that step
(decision 685): one checkpoint of 150 ms in a 150-step job of 7 ms steps costs every rank
150 ms. One stall no longer than the job's other holds is the machine's noise."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.diagnostics.multi import skew_across_hosts
from stepscope.stats.runup_python import RunupPython
from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_stalls import STALL_FIX
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, STEP, job
from tests.support.cpu_readings import with_cpu

AT = 12  # of 30 steps
STALL = 100 * MS


def _late(late_ms: dict[tuple[int, int], int]) -> list[Rank]:
    """Ranks ready 4 ms into each step; rank r late by ``late_ms[(r, s)]`` ms at step s
    (untraced), every rank leaving that step's all-reduce that much later."""

    def ready(r: int, s: int) -> int:
        return 4 * MS + late_ms.get((r, s), 0) * MS

    def exit_(r: int, s: int) -> int:
        return 15 * MS + max((ms for (_, k), ms in late_ms.items() if k == s), default=0) * MS

    return job(
        3,
        30,
        ready,
        exit_=exit_,
        runup=lambda r, s: {"host_compute": 4 * MS, "other": ready(r, s) - 4 * MS},
        hosts=["a", "d", "c"],
    )


def test_one_long_stall_by_arrival_is_named_at_its_step() -> None:
    ranks = _late({(1, AT): 100})
    (d,) = find_stragglers(ranks).stragglers
    assert (d.host, d.steps, d.late_ns, d.waiters) == ("d", (AT,), STALL, 2)
    assert d.explanation.startswith(
        "d stalled the job once, at step 12 of 30, for 100.00 ms, where the job's steps take "
        "20.00 ms: it arrived last at the collectives of step 12"
    )
    assert "The other 2 ranks waited for it (200.00 ms in all)." in d.explanation
    finding = skew_across_hosts(ranks, {})
    assert finding is not None
    assert finding.summary.startswith(
        "d stalled every rank once, at step 12, for 100.00 ms (the job's steps take 20.00 ms)"
    )


def test_one_stall_inside_the_call_is_named_by_the_readings() -> None:
    """Every rank arrived at step 12's all-reduce and it lasted 100 ms longer: "d"'s sampler
    took no reading then, the others' read on."""
    ranks = job(3, 30, lambda r, s: 4 * MS, exit_=lambda r, s: 15 * MS + STALL * (s == AT))
    with_cpu(ranks, {1: [(AT * STEP + 5 * MS, AT * STEP + 110 * MS)]})
    found = find_stragglers(ranks).stragglers
    assert [(s.host, s.steps, s.stall) for s in found] == [("r1", (AT,), "stopped")]
    finding = skew_across_hosts(ranks, {})
    assert finding is not None and finding.fix == STALL_FIX["stopped"]


def test_one_stall_no_longer_than_the_jobs_other_holds_is_not_named() -> None:
    """Rank "d" held the others 100 ms at step 12, rank "c" 70 ms at step 20: "d" holds most
    of the stalls' time, but not twice what another rank held (a loaded machine's noise)."""
    assert find_stragglers(_late({(1, AT): 100, (2, 20): 70})).stragglers == ()
    (d,) = find_stragglers(_late({(1, AT): 100, (2, 20): 45})).stragglers
    assert d.host == "d"


def _sampled_in(ranks: list[Rank], steps: list[int], samples: int = 10) -> list[Rank]:
    """Rank "d"'s sampler saw ``torch.save`` on every sample of its run-ups at ``steps``."""
    d = ranks[1]
    weight, taken = np.zeros(d.calls.n_calls), np.zeros(d.calls.n_calls, np.int64)
    weight[steps], taken[steps] = 1.0, samples
    python = RunupPython(
        keys=("save (serialization.py)",),
        paths=("<module> (train.py:40);save (serialization.py)",),
        call=np.array(steps),
        key=np.zeros(len(steps), np.int64),
        weight=np.ones(len(steps)),
        samples=np.full(len(steps), samples),
        call_weight=weight,
        call_samples=taken,
    )
    ranks[1] = replace(d, calls=replace(d.calls, python=python))
    return ranks


def test_a_stalls_sampled_python_is_said_per_stall() -> None:
    """The Python sampled in a stall is its time a stall: "100.00 ms per step" read as every
    step's 100 ms in a job of 20 ms steps (decision 721)."""
    (d,) = find_stragglers(_sampled_in(_late({(1, AT): 100}), [AT])).stragglers
    assert d.python == "save (serialization.py) 100.00 ms in the stall (10 of 10 samples)"
    assert d.focus.endswith(f"; Python sampled on it: {d.python}")
    twice = _sampled_in(_late({(1, AT): 100, (1, 20): 100}), [AT, 20])
    (d,) = find_stragglers(twice).stragglers
    assert d.python == "save (serialization.py) 100.00 ms per stall (20 of 20 samples)"
    assert f"Python sampled on d in that time: {d.python}." in d.explanation
