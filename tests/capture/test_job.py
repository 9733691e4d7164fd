"""Job identity: the ranks of one job save into one run, one recognizable host file per rank,
and no capture ever overwrites a profile (`stepscope.capture.job`, issue #26)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import stepscope
from stepscope.capture import job
from stepscope.capture.save import CaptureResult, save
from stepscope.errors import StepscopeError
from stepscope.tmpfiles import write_new
from stepscope.xspace import load_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace

TORCHRUN = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "TORCHELASTIC_RUN_ID": "abc"}


@pytest.mark.parametrize(
    ("env", "rank", "world", "key"),
    [
        (TORCHRUN, 3, 8, "torchelastic abc"),
        (
            {"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_JOB_ID": "777"},
            5,
            16,
            "slurm 777.",
        ),
        (
            {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "PMIX_NAMESPACE": "ns9"},
            1,
            4,
            "pmix ns9",
        ),
        ({"PMI_RANK": "2", "PMI_SIZE": "3", "SLURM_JOB_ID": "9"}, 2, 3, "slurm 9."),
    ],
)
def test_launchers_give_rank_world_and_job_key(
    env: dict[str, str], rank: int, world: int, key: str
) -> None:
    found = job.detect(env)
    assert (found.rank, found.world_size, found.job_key) == (rank, world, key)
    assert found.host_name("node7") == f"node7.rank{rank}"


def test_ranks_of_one_machine_share_their_launcher_without_a_job_id() -> None:
    """torchrun without a rendezvous id, or ranks given RANK/WORLD_SIZE by hand: their
    parent process (and rendezvous address) is what they share."""
    env = {"RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "none", "MASTER_PORT": "29500"}
    found = job.detect(env)
    assert found.job_key.startswith("launcher ") and "master :29500" in found.job_key
    assert found.source == "torchrun + launcher process"


def test_one_process_is_no_job() -> None:
    for env in ({}, {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_ID": "5"}):
        found = job.detect(env)
        assert not found.in_job and found.job_key == ""
        assert found.host_name("vm") == "vm"


def test_tf_config_names_the_task() -> None:
    config = {
        "cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1", "d:1"]},
        "task": {"type": "worker", "index": 1},
    }
    found = job.detect({"TF_CONFIG": json.dumps(config)})
    assert (found.rank, found.world_size, found.task) == (2, 4, "worker1")
    assert found.host_name("vm") == "vm.worker1" and found.job_key.startswith("tf_config ")


def _identity(rank: int, key: str = "slurm 1.0") -> job.JobIdentity:
    return job.JobIdentity(rank, 4, rank, key, "test")


def test_ranks_of_one_job_agree_on_one_run(tmp_path: Path) -> None:
    """Each rank names the run after its own start; the first to save wins, the others
    (starting in another second) join it."""
    first = job.place(str(tmp_path), "2026_01_01_00_00_01", None, identity=_identity(0))
    later = job.place(str(tmp_path), "2026_01_01_00_00_02", None, identity=_identity(3))
    assert first.run_dir == later.run_dir and first.run_dir.name == "2026_01_01_00_00_01"
    machine = job._machine()
    assert (first.hostname, later.hostname) == (f"{machine}.rank0", f"{machine}.rank3")


def test_a_ranks_next_capture_is_a_new_run_of_the_job(tmp_path: Path) -> None:
    placed = job.place(str(tmp_path), "2026_01_01_00_00_01", None, identity=_identity(0))
    write_new(placed.run_dir / f"{placed.hostname}.xplane.pb", b"")
    again = job.place(str(tmp_path), "2026_01_01_00_00_09", None, identity=_identity(0))
    other = job.place(str(tmp_path), "2026_01_01_00_00_08", None, identity=_identity(1))
    assert again.run_dir.name == "2026_01_01_00_00_09"
    assert other.run_dir == placed.run_dir  # rank 1's first capture: the job's first run


def test_ranks_racing_to_name_the_run_agree(tmp_path: Path) -> None:
    found: list[Path] = []
    barrier = threading.Barrier(8)

    def rank(k: int) -> None:
        barrier.wait()
        found.append(
            job.place(str(tmp_path), f"2026_01_01_00_00_0{k}", None, identity=_identity(k)).run_dir
        )

    threads = [threading.Thread(target=rank, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(found)) == 1
    assert [p.name for p in (tmp_path / "plugins" / "profile").iterdir()] == [found[0].name]


def test_run_name_names_the_run_and_a_clash_gets_the_next(tmp_path: Path) -> None:
    placed = job.place(str(tmp_path), "t", "vm", run_name="exp1")
    assert placed.run_dir.name == "exp1" and placed.hostname == "vm"
    write_new(placed.run_dir / "vm.xplane.pb", b"")
    assert job.place(str(tmp_path), "t", "vm", run_name="exp1").run_dir.name == "exp1_2"
    with pytest.raises(StepscopeError, match="plain directory name"):
        job.place(str(tmp_path), "t", "vm", run_name="../up")


def test_write_new_never_replaces_and_one_of_many_wins(tmp_path: Path) -> None:
    target = tmp_path / "vm.xplane.pb"
    target.write_bytes(b"the user's profile")
    with pytest.raises(FileExistsError):
        write_new(target, b"another")
    assert target.read_bytes() == b"the user's profile"
    wins: list[int] = []
    barrier = threading.Barrier(6)

    def writer(k: int) -> None:
        barrier.wait()
        try:
            write_new(tmp_path / "race.xplane.pb", bytes([k]) * 1000)
            wins.append(k)
        except FileExistsError:
            pass

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert (tmp_path / "race.xplane.pb").read_bytes() == bytes([wins[0]]) * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race.xplane.pb", "vm.xplane.pb"]


def test_a_taken_host_file_moves_the_save_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What two processes saving one name at once met: one profile silently replaced."""
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").write_bytes(b"first")
    result = CaptureResult("vm", stepscope.ProfilerOptions(), str(tmp_path), run.name, 0, 0, 0, 0)
    space = XSpace(hostnames=["vm"])
    saved = save(space, result, run)
    assert (run / "vm.xplane.pb").read_bytes() == b"first"
    assert saved.name == "2026_01_01_00_00_00_2" and (saved / "vm.xplane.pb").exists()
    assert "already exists" in capsys.readouterr().err


def test_start_stop_of_two_ranks_write_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before issue #26 two ranks with defaults gave two runs, one host named after the
    machine in each (or one rank's profile replaced the other's)."""
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job42")
    monkeypatch.setenv("WORLD_SIZE", "2")
    runs = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        stepscope.start(tmp_path)
        with stepscope.trace("work"):
            pass
        runs.append(stepscope.stop())
    assert runs[0] == runs[1] and runs[0] is not None
    machine = job._machine()
    assert sorted(p.name for p in runs[0].iterdir()) == [
        f"{machine}.rank0.xplane.pb",
        f"{machine}.rank1.xplane.pb",
    ]
    assert list(load_xspace(runs[0] / f"{machine}.rank1.xplane.pb").hostnames) == [
        f"{machine}.rank1"
    ]


def test_run_name_argument_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with stepscope.profile(tmp_path, run_name="baseline") as prof:
        pass
    assert prof.run_dir is not None and prof.run_dir.name == "baseline"
    monkeypatch.setenv(job.RUN_NAME_ENV, "from_env")
    stepscope.start(tmp_path)
    assert stepscope.stop().name == "from_env"
    with pytest.raises(StepscopeError, match="plain directory name"):
        stepscope.start(tmp_path, run_name="a/b")
