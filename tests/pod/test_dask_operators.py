"""Dask as an operator runs it (issue #32): a real `distributed.LocalCluster` with two worker
processes, one of which cannot open some of the run's files ($STEPSCOPE_PATH_MAP sends them
nowhere on it, as a worker without the mount would); a cluster with no worker; every tool of
the CLI at ALL_HOSTS; the workers' own summary cache."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.executor import HostTask
from stepscope.executor.dask import DRIVER, DaskExecutor
from stepscope.executor.worker import PATH_MAP_ENV
from stepscope.model import open_run
from stepscope.tools.registry import all_tools
from tests.pod.builders import FIXTURES, cpu_pod
from tests.support.optional import skip_without

pytestmark = [pytest.mark.integration, pytest.mark.untimed]
skip_without("distributed")

GONE = "/nonexistent-stepscope-test-mount"
JAX_GPU = FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb"
TF_CPU = next((FIXTURES / "tf" / "ctl" / "plugins" / "profile").glob("*/vm.xplane.pb"))


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Run roots by who can open them: every worker, the "good" one only, no worker."""
    base = tmp_path_factory.mktemp("operators")
    roots = {
        name: base / name
        for name in ("all", "good_only", "nobody", "worker_cache", "mounted", "elsewhere")
    }
    roots["mounted"].mkdir()
    roots["elsewhere"].symlink_to(roots["mounted"])  # one file system at two paths
    return roots


def _worker(cluster: Any, env: dict[str, str]) -> dict[str, Any]:
    [spec] = cluster.new_worker_spec().values()
    return {**spec, "options": {**spec["options"], "env": env}}


@pytest.fixture(scope="module")
def cluster(roots: dict[str, Path]) -> Iterator[str]:
    """A LocalCluster of two one-thread worker processes, "good" and "blind", with their own
    summary cache directory; its scheduler's address."""
    cache = {"STEPSCOPE_CACHE_DIR": str(roots["worker_cache"])}
    nobody = f"{roots['nobody']}={GONE}/b;{roots['mounted']}={roots['elsewhere']}"
    import distributed

    with distributed.LocalCluster(
        n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None
    ) as local:
        local.worker_spec["good"] = _worker(local, {**cache, PATH_MAP_ENV: nobody})
        local.worker_spec["blind"] = _worker(
            local, {**cache, PATH_MAP_ENV: f"{roots['good_only']}={GONE}/a;{nobody}"}
        )
        local.sync(local._correct_state)
        with distributed.Client(local) as client:
            client.wait_for_workers(2, timeout=120)
        yield local.scheduler_address


def _pod(root: Path, hosts: int = 8) -> Path:
    if not root.exists():
        cpu_pod(root, hosts)
    return root / "plugins" / "profile" / "pod"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, (json.loads(out) if out.startswith("{") else out), err


def test_hosts_one_worker_cannot_open_are_analyzed_on_the_other(
    cluster: str, roots: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(_pod(roots["good_only"]))
    status, on_dask, err = _cli(capsys, "tool", run, "pod_viewer", "--dask", cluster, "--no-cache")
    assert status == 0, err
    assert "host_errors" not in on_dask
    # each host the blind worker was given is reported with the worker, why, and where it ran
    moved = [line for line in err.splitlines() if "(blind): cannot open" in line]
    assert moved and all("analyzed on tcp://" in line and "(good)" in line for line in moved)
    assert "could not be opened on some Dask workers" in err
    _, in_process, _ = _cli(capsys, "tool", run, "pod_viewer", "--workers", "0", "--no-cache")
    assert on_dask == in_process


def test_files_no_worker_can_open_are_shipped_from_this_process(
    cluster: str, roots: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(_pod(roots["nobody"]))
    status, on_dask, err = _cli(capsys, "tool", run, "overview_page", "--dask", cluster, "-q")
    assert status == 0, err
    assert err.count("from bytes shipped by the driver") == 8
    _, in_process, _ = _cli(capsys, "tool", run, "overview_page", "--workers", "0", "--no-cache")
    assert on_dask == in_process
    # the trace viewer's tasks leave entries keyed by the file's path: they run here instead
    status, _, err = _cli(
        capsys, "tool", run, "trace_viewer", "--host", "ALL_HOSTS", "--dask", cluster, "-q"
    )
    assert status == 0, err
    assert err.count(f"analyzed on {DRIVER}") == 8


def _first_host(task: HostTask) -> str:
    return task.host.host


def test_a_file_too_large_to_ship_runs_in_this_process(
    cluster: str, roots: dict[str, Path]
) -> None:
    run = open_run(str(_pod(roots["nobody"])))
    import distributed

    with distributed.Client(cluster) as client:
        executor = DaskExecutor(client=client, ship_max_bytes=0)
        found = dict(executor.map(_first_host, [HostTask(h) for h in run.hosts[:2]]))
    assert sorted(o.value for o in found.values()) == ["host000", "host001"]
    assert all(o.where == DRIVER and o.unread_by for o in found.values())


@pytest.fixture(scope="module")
def every_tool_run(roots: dict[str, Path]) -> Path:
    """Three hosts that give every ALL_HOSTS tool something to show: two JAX GPU hosts (XLA,
    kernels, memory) and a TensorFlow CPU host (tf.data)."""
    run = roots["all"] / "every_tool" / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    shutil.copy(JAX_GPU, run / "gpu0.xplane.pb")
    shutil.copy(JAX_GPU, run / "gpu1.xplane.pb")
    shutil.copy(TF_CPU, run / "cpu0.xplane.pb")
    return run


def test_every_tool_at_all_hosts_through_the_cli(
    cluster: str, every_tool_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Dask client lives as long as the command: the trace viewer fans out after the
    tools' summaries (it failed with ClosedClientError)."""
    tools = [t.name for t in all_tools() if t.multi_host]
    assert "trace_viewer" in tools and len(tools) >= 12
    for tool in tools:
        status, result, err = _cli(
            capsys, "tool", str(every_tool_run), tool, "--host", "ALL_HOSTS", "--dask", cluster
        )
        assert status == 0, f"{tool}: {err}"
        assert isinstance(result, dict) and "host_errors" not in result, tool


def test_workers_keep_summaries_in_their_own_cache(
    cluster: str, roots: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _pod(roots["all"] / "cached", hosts=3)
    status, _, err = _cli(capsys, "tool", str(run), "op_stats", "--dask", cluster)
    assert status == 0, err
    assert len(list((roots["worker_cache"] / "summaries").rglob("*.npz"))) >= 3


def test_the_trace_viewer_says_when_the_workers_entries_do_not_reach_it(
    cluster: str, roots: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Workers that see the run at another path key their converted profiles by that path:
    the driver does not find them under its own, builds them itself, and says why."""
    run = str(_pod(roots["mounted"] / "tv", hosts=3))
    status, _, err = _cli(
        capsys, "tool", run, "trace_viewer", "--host", "ALL_HOSTS", "--dask", cluster, "-q"
    )
    assert status == 0, err
    assert "the workers' converted profiles of 3 host(s) are not in this process's cache" in err


def test_a_cluster_without_workers_fails_within_the_timeout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = str(_pod(tmp_path / "pod", hosts=2))
    import distributed

    with distributed.LocalCluster(n_workers=0, dashboard_address=None) as empty:
        status, _, err = _cli(
            capsys, "tool", run, "pod_viewer", "--dask", empty.scheduler_address,
            "--dask-timeout", "1",
        )  # fmt: skip
    assert status == 2
    assert "waiting for Dask workers (0 connected)" in err
    assert err.strip().endswith(
        "no Dask worker connected within 1 s (--dask-timeout); start workers with "
        f"`dask worker {empty.scheduler_address}` or check that they can reach the scheduler"
    )


def test_doctor_names_the_worker_that_cannot_open_the_run(
    cluster: str, roots: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = str(_pod(roots["good_only"]))
    assert main(["doctor", "--dask", cluster, run]) == 1
    out, err = capsys.readouterr()
    assert "run pod: 8 host file(s)" in out and out.count("worker tcp://") == 2
    [problem] = err.splitlines()[1:]
    assert "(blind) cannot open 8 of the 8 run files checked (first: " in problem
    assert f"{GONE}/a/plugins/profile/pod/host000.xplane.pb: FileNotFoundError" in problem
    assert "STEPSCOPE_PATH_MAP" in problem
    assert main(["doctor", "--dask", cluster, str(_pod(roots["all"] / "cached", hosts=3))]) == 0
    assert capsys.readouterr().out.endswith("no problems found\n")
