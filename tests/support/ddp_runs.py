"""Real CPU DDP jobs (`tests.support.ddp_job`) run once for the session and read by the tests of
several modules: tests/capture/test_job_ddp.py checks that every rank lands in one run, and
tests/pod/test_job_ddp.py what the pod tools say about the same runs. A job costs 5-15 s (the
ranks' interpreters, torch, gloo, the capture); two modules running one each cost it twice. A
pytest plugin of the root conftest, so each fixture is defined once for the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.fixtures import REPO

_PORTS = iter(range(29641, 29700))

Truths = list[dict[str, Any]]


def job(logdir: Path, *args: str, torchrun: int = 0) -> Truths:
    """Runs tests.support.ddp_job (its ranks forked, or ``mp.spawn``'s with ``--start-method
    spawn``, or torchrun with ``torchrun`` ranks);
    each rank's truth, in rank order."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    # the tree's own stepscope, not the one installed (a worktree's jobs ran main's capture)
    env.update(PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]), OMP_NUM_THREADS="1")
    port = str(next(_PORTS))
    command = ["-m", "tests.support.ddp_job", str(logdir), "--port", port, *args]
    if torchrun:
        launcher = ["-m", "torch.distributed.run", "--nproc-per-node", str(torchrun)]
        command = [*launcher, "--master-port", port, *command, "--launcher", "torchrun"]
    proc = subprocess.run(
        [sys.executable, *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    where = Path(args[args.index("--truth-dir") + 1]) if "--truth-dir" in args else logdir
    truths = sorted(where.glob("truth.rank*.json"))
    return [json.loads(p.read_text()) for p in truths]


class SlowInputRuns:
    """Runs of one 2-rank loop whose rank 1 waits 40 ms per batch for its data, each made when
    first asked for: (log directory, each rank's truth). The first is started by ``mp.spawn``
    (tests/capture/test_job_ddp.py reads it), the others' ranks are forked (tests.support.
    ddp_job's default: 7 s less CPU a job)."""

    def __init__(self, tmp: pytest.TempPathFactory) -> None:
        self._tmp = tmp
        self._runs: list[tuple[Path, Truths]] = []

    def get(self, k: int) -> tuple[Path, Truths]:
        while len(self._runs) <= k:
            logdir = self._tmp.mktemp("ddp_input")
            start = ("--start-method", "spawn") if not self._runs else ()
            self._runs.append((logdir, job(logdir, "--ranks", "2", "--slow-input", "1", *start)))
        return self._runs[k]


@pytest.fixture(scope="session")
def ddp_slow_input_runs(tmp_path_factory: pytest.TempPathFactory) -> SlowInputRuns:
    return SlowInputRuns(tmp_path_factory)


@pytest.fixture(scope="session")
def ddp_torchrun_four_ranks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truths]:
    """A 4-rank torchrun job: rank 1's loader is slow (60 ms a batch), rank 3 computes 30 ms
    more a step. (log directory, each rank's truth)"""
    logdir = tmp_path_factory.mktemp("ddp_torchrun")
    slow = ("--slow-input", "1", "--input-ms", "60", "--slow-compute", "3", "--compute-ms", "30")
    return logdir, job(logdir, *slow, torchrun=4)
