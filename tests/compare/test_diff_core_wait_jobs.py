"""A job's wait for a CPU core in a diff at ALL_HOSTS (decision 991): each rank's steps'
thread's runnable time over its own start and length of each job step, counted as the job's
step counts its categories (the ranks' mean stretched to the job's step, the pacing rank's),
present only when every rank has readings; the verdict rule of decision 951 then works for
jobs and names the ranks' threads. Summaries built in code, and real analyses of two-rank
runs of synthetic sampled loops."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stepscope.errors import StepscopeError
from stepscope.model import ALL_HOSTS
from stepscope.stats.compare import RunSummary, diff_runs, evaluate, metric_names, parse_rule
from stepscope.stats.compare.run_summary import steps_core_wait_ns
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.summary import StepSummary
from stepscope.xspace.io import write_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.compare.synthetic import MS, summary
from tests.support.compare import LOAD, loaded_diff, path_summary
from tests.support.compare import LOAD_RULE as RULE
from tests.support.cpu_readings import sampled_loop


def _job(rank_dur_ms: list[list[int]], hosts: tuple[str, ...] = ("a", "b")) -> StepSummary:
    """Two ranks' steps back to back from 0, paired by number; the job's step is the pacing
    rank's (slowest on average), as `summarize_steps` makes it."""
    dur = np.array(rank_dur_ms, np.int64) * MS
    start = np.concatenate([np.zeros((len(dur), 1), np.int64), dur.cumsum(axis=1)[:, :-1]], 1)
    pacing = int(np.argmax(dur.mean(axis=1)))
    n = dur.shape[1]
    return StepSummary(
        "marker",
        "synthetic job",
        hosts,
        False,
        np.arange(n, dtype=np.int64),
        tuple(f"step {k}" for k in range(n)),
        start.min(axis=0),
        dur[pacing],
        {c: np.zeros(n, np.int64) for c in CATEGORY_NAMES},
        2 * n,
        0,
        rank_dur_ns=dur,
        rank_hosts=hosts,
        rank_start_ns=start,
    )


def _readings(steps: StepSummary, row: int, wait_ms: list[float]) -> ThreadCpu:
    """One reading over each of rank ``row``'s steps, runnable ``wait_ms`` of it."""
    start, dur = steps.rank_start_ns[row], steps.rank_dur_ns[row]
    runnable = np.round(np.array(wait_ms) * MS).astype(np.int64)
    return ThreadCpu(start, start + dur, dur - runnable, runnable)


def test_a_jobs_wait_is_the_ranks_mean_stretched_to_its_step() -> None:
    steps = _job([[10, 10, 10], [14, 12, 10]])  # b paces the job: 14, 12, 10 ms
    cpu = {"a": _readings(steps, 0, [1, 2, 3]), "b": _readings(steps, 1, [4, 4, 0])}
    wait = steps_core_wait_ns(steps, cpu.__getitem__)
    assert wait is not None
    # the ranks' mean (2.5, 3, 1.5 ms) times the job's step over the ranks' mean step
    expected = np.array([2.5 * 14 / 12, 3.0 * 12 / 11, 1.5 * 10 / 10]) * MS
    assert wait.tolist() == np.round(expected).astype(np.int64).tolist()
    # as the categories add up: every rank waiting all its steps is the job's whole step
    always = {
        h: _readings(steps, r, (steps.rank_dur_ns[r] / MS).tolist())
        for r, h in enumerate(steps.rank_hosts)
    }
    whole = steps_core_wait_ns(steps, always.__getitem__)
    assert whole is not None and whole.tolist() == steps.dur_ns.tolist()


def test_a_job_has_no_wait_unless_every_rank_was_read() -> None:
    steps = _job([[10, 10, 10], [10, 10, 10]])
    cpu = {"a": _readings(steps, 0, [1, 1, 1]), "b": ThreadCpu()}
    assert steps_core_wait_ns(steps, cpu.__getitem__) is None
    # several hosts, one with steps: the summary does not say whose they are
    one = replace(steps, rank_dur_ns=np.zeros((0, 0), np.int64), rank_hosts=())
    assert steps_core_wait_ns(one, {"a": cpu["a"]}.__getitem__) is None
    # one host: its own steps' thread
    alone = replace(one, hosts=("a",))
    assert steps_core_wait_ns(alone, cpu.__getitem__).tolist() == [MS] * 3  # type: ignore[union-attr]


def _job_summary(rng: np.random.Generator, wait_ms: float, **extra: float) -> RunSummary:
    s = summary(rng, steps=30, **extra)
    wait = np.round((wait_ms + 0.1 * rng.standard_normal(30)) * MS).astype(np.int64)
    return replace(s, host=ALL_HOSTS, hosts=("a", "b"), core_wait_ns=np.maximum(wait, 0))


def test_a_jobs_slowdown_its_ranks_wait_explains_is_called_the_machines_load() -> None:
    rng = np.random.default_rng(991)
    base = _job_summary(rng, 0.2)
    cand = _job_summary(rng, 3.9, extra_compute_ms=4.0)
    diff = diff_runs(base, cand)
    assert diff.core_wait_share is not None and diff.core_wait_share >= 0.9
    assert f"{LOAD}: the ranks' steps' threads waited for a CPU core +" in diff.verdict
    assert "; the ranks' mean; runnable but off its core" in diff.verdict
    result = evaluate(parse_rule(RULE, metric_names()), diff)
    assert result.failed
    assert f"{LOAD}: the ranks' steps' threads' extra wait for a CPU core is" in result.reason


# Below: real analyses of two-rank runs (~0.2 s a run): integration tier.


def _write_job(root: Path, name: str, *ranks: XSpace) -> Path:
    run = root / name / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    for r, space in enumerate(ranks):
        write_xspace(space, run / f"vm.rank{r}.xplane.pb")
    return run


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunSummary]:
    root = tmp_path_factory.mktemp("job_cores")
    made = {
        "base": (sampled_loop(0, False), sampled_loop(0, False)),
        "loaded": (sampled_loop(8, True), sampled_loop(8, True)),
        # rank 0 slower on its core, rank 1 waiting for one: their steps the same length
        "one_waits": (sampled_loop(8, False), sampled_loop(8, True)),
        "one_unread": (sampled_loop(8, True), sampled_loop(8, True, readings=False)),
    }
    return {
        name: path_summary(str(_write_job(root, name, *ranks)), ALL_HOSTS)
        for name, ranks in made.items()
    }


@pytest.mark.integration
def test_a_job_longer_only_by_its_ranks_wait_is_the_machines_load(
    jobs: dict[str, RunSummary],
) -> None:
    base, loaded = jobs["base"], jobs["loaded"]
    assert base.hosts == ("vm.rank0", "vm.rank1")
    diff = loaded_diff(base, loaded, 8 * MS)
    assert f"{LOAD}: the ranks' steps' threads waited for a CPU core +8.00 ms/step" in diff.verdict
    assert evaluate(parse_rule(RULE, metric_names()), diff).failed


@pytest.mark.integration
def test_one_rank_waiting_counts_half_in_a_two_rank_job(jobs: dict[str, RunSummary]) -> None:
    """The ranks' mean: one rank of two waiting 8 ms a step is 4 ms of the job's step, half
    of its 8 ms change ("mostly")."""
    one = jobs["one_waits"]
    assert one.core_wait_ns is not None
    assert one.core_wait_ns.tolist() == [4 * MS] * one.n_steps
    diff = diff_runs(jobs["base"], one)
    assert diff.core_wait_share == pytest.approx(0.5)
    assert f"mostly {LOAD}" in diff.verdict


@pytest.mark.integration
def test_a_job_with_a_rank_unread_has_no_wait(jobs: dict[str, RunSummary]) -> None:
    assert jobs["one_unread"].core_wait_ns is None
    diff = diff_runs(jobs["base"], jobs["one_unread"])
    wait = diff.metric("core_wait")
    assert wait is not None and wait.cand is None and diff.core_wait_share is None
    with pytest.raises(StepscopeError, match="of every rank, for a job"):
        evaluate(parse_rule("core_wait>+1ms", metric_names()), diff)
