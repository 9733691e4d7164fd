"""The executors: a local process pool and a Dask LocalCluster give the in-process results;
retries; a lost worker process; per-host progress."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stepscope.errors import ProfileFormatError
from stepscope.executor import HostTask, InlineExecutor, make_executor
from stepscope.executor.local import LocalExecutor
from stepscope.model.runs import HostFile
from tests.pod.builders import cpu_pod
from tests.support.pod import CPU_TOOLS, tool_json

ATTEMPTS: dict[str, int] = {}


def flaky(task: HostTask) -> str:
    """Fails with an OSError the first time per host (in this process), then succeeds."""
    ATTEMPTS[task.host.host] = ATTEMPTS.get(task.host.host, 0) + 1
    if ATTEMPTS[task.host.host] == 1:
        raise OSError("transient")
    return task.host.host


def corrupt(task: HostTask) -> str:
    raise ProfileFormatError(task.host.path, "not a valid XSpace profile")


def crash_on_host1(task: HostTask) -> str:
    if task.host.host == "h1":
        os._exit(17)  # a worker killed (out of memory, a native crash)
    return task.host.host


def _tasks(n: int) -> list[HostTask]:
    return [HostTask(HostFile(f"h{i}", f"/nowhere/h{i}.xplane.pb", "xspace", 1)) for i in range(n)]


def test_transient_failures_are_retried_and_user_errors_are_not() -> None:
    ATTEMPTS.clear()
    [(_, outcome)] = list(InlineExecutor(retries=2).map(flaky, _tasks(1)))
    assert outcome.ok and outcome.value == "h0" and outcome.attempts == 2
    [(_, failed)] = list(InlineExecutor(retries=2).map(corrupt, _tasks(1)))
    assert (
        failed.attempts == 1 and failed.error == "/nowhere/h0.xplane.pb: not a valid XSpace profile"
    )


def test_workers_option() -> None:
    assert isinstance(make_executor(workers=0), InlineExecutor)
    pool = make_executor(workers=2)
    assert isinstance(pool, LocalExecutor) and pool.workers == 2
    with pytest.raises(Exception, match="--workers -1"):
        make_executor(workers=-1)


@pytest.mark.integration
def test_a_lost_worker_process_fails_its_host_only() -> None:
    pool = LocalExecutor(2, retries=1)
    progress: list[tuple[str, str]] = []
    try:
        found = dict(
            pool.map(crash_on_host1, _tasks(4), lambda h, s, d, t: progress.append((h, s)))
        )
    finally:
        pool.close()
    assert sorted(found) == [0, 1, 2, 3]
    assert not found[1].ok and "worker process analyzing it died" in found[1].error
    assert all(found[i].ok and found[i].value == f"h{i}" for i in (0, 2, 3))
    assert ("h1", "failed") in progress


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cpu_pod(tmp_path_factory.mktemp("pod"), 16, corrupt=(5,))


@pytest.mark.integration
def test_local_pool_equals_in_process(pod: Path, tmp_path: Path) -> None:
    pool = LocalExecutor(2)
    try:
        for tool in CPU_TOOLS:
            assert tool_json(pod, tool, tmp_path / "a", pool) == tool_json(
                pod, tool, tmp_path / "b", InlineExecutor()
            )
    finally:
        pool.close()


@pytest.mark.integration
def test_dask_local_cluster_equals_the_local_executor(pod: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dask = make_executor(client=client)
        assert dask.name == "dask" and dask.workers == 2
        pool = LocalExecutor(2)
        try:
            for tool in CPU_TOOLS:
                on_dask = tool_json(pod, tool, tmp_path / "dask", dask)
                assert on_dask == tool_json(pod, tool, tmp_path / "local", pool)
                assert [e["host"] for e in on_dask["host_errors"]] == ["host005"]
        finally:
            pool.close()
