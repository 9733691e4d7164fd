"""Session databases over the shared fixtures: each run is read once per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

from stepscope.sql import Database
from tests.support.fixtures import tf_xplane
from tests.support.sql import BIG_CTL, KINETO


@pytest.fixture(scope="session")
def big_ctl() -> Iterator[Database]:
    with Database(BIG_CTL) as db:
        yield db


@pytest.fixture(scope="session")
def ctl() -> Iterator[Database]:
    with Database(tf_xplane("ctl")) as db:
        yield db


@pytest.fixture(scope="session")
def nccl() -> Iterator[Database]:
    """A Kineto GPU trace: kernels, NCCL collectives, two streams."""
    with Database(KINETO / "a100_nccl_rank0.json.gz") as db:
        yield db


@pytest.fixture(scope="session")
def two_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """An XSpace run of two hosts (two copies of the ctl fixture under other names)."""
    run = tmp_path_factory.mktemp("two_hosts") / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    for host in ("worker0", "worker1"):
        shutil.copy(tf_xplane("ctl"), run / f"{host}.xplane.pb")
    with Database(run) as db:
        yield db


@pytest.fixture(scope="session")
def kineto_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A Kineto run of two hosts: a GPU rank and a CPU gloo rank. Recorded months apart, a
    folder of the two is two runs (decision 186), so the run is put together by hand."""
    from stepscope.model import HostFile, Run

    folder = tmp_path_factory.mktemp("kineto_run")
    hosts = []
    for name in ("a100_nccl_rank0.json.gz", "cpu_only_gloo_rank34.json.gz"):
        shutil.copy(KINETO / name, folder / name)
        path = folder / name
        hosts.append(
            HostFile(name.removesuffix(".json.gz"), str(path), "kineto", path.stat().st_size)
        )
    with Database(Run("kineto_run", str(folder), tuple(hosts))) as db:
        yield db
