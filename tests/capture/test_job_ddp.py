"""Real DDP jobs (gloo, CPU): every rank's default `stepscope.start`/`stop` lands in one run
with one host file per rank, with `mp.spawn` and with torchrun (issue #26)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.capture.job import _machine
from tests.support.fixtures import REPO

pytestmark = pytest.mark.integration


def _run(args: list[str], port: int) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MASTER_PORT=str(port))
    proc = subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _hosts(logdir: Path) -> dict[str, list[str]]:
    runs = (logdir / "plugins" / "profile").iterdir()
    return {run.name: sorted(p.name for p in run.iterdir()) for run in runs}


def test_mp_spawn_ranks_write_one_run(tmp_path: Path) -> None:
    """Before: two runs (the second suffixed `_2`), each with a `vm.xplane.pb`."""
    _run(["-m", "tests.support.ddp_job", str(tmp_path), "--ranks", "2", "--steps", "3"], 29611)
    machine = _machine()
    [files] = _hosts(tmp_path).values()
    assert files == [f"{machine}.rank0.xplane.pb", f"{machine}.rank1.xplane.pb"]


def test_torchrun_ranks_write_one_run(tmp_path: Path) -> None:
    _run(
        [
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            "29612",
            "-m",
            "tests.support.ddp_job",
            str(tmp_path),
            "--launcher",
            "torchrun",
            "--steps",
            "3",
        ],
        29612,
    )
    machine = _machine()
    [files] = _hosts(tmp_path).values()
    assert files == [f"{machine}.rank0.xplane.pb", f"{machine}.rank1.xplane.pb"]
