"""Real DDP jobs (gloo, CPU): every rank's default `stepscope.start`/`stop` lands in one run
with one host file per rank, with `mp.spawn` and with torchrun (issue #26). The jobs are the
session's (tests/support/ddp_runs.py): tests/pod/test_job_ddp.py reads what the pod tools say
about the same runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.capture.job import _machine
from tests.support.capture import deferred_files
from tests.support.ddp_runs import SlowInputRuns, Truths

pytestmark = pytest.mark.integration


def _hosts(logdir: Path) -> dict[str, list[str]]:
    runs = (logdir / "plugins" / "profile").iterdir()
    return {run.name: sorted(p.name for p in run.iterdir()) for run in runs}


def test_mp_spawn_ranks_write_one_run(ddp_slow_input_runs: SlowInputRuns) -> None:
    """Before: two runs (the second suffixed `_2`), each with a `vm.xplane.pb`."""
    logdir, truths = ddp_slow_input_runs.get(0)
    machine = _machine()
    [files] = _hosts(logdir).values()
    # each rank's host file, its torch trace kept to be merged when read (decision 910)
    assert files == [*deferred_files(f"{machine}.rank0"), *deferred_files(f"{machine}.rank1")]
    assert [t["rank"] for t in truths] == [0, 1]


def test_torchrun_ranks_write_one_run(ddp_torchrun_four_ranks: tuple[Path, Truths]) -> None:
    logdir, truths = ddp_torchrun_four_ranks
    machine = _machine()
    [files] = _hosts(logdir).values()
    assert files == [name for k in range(4) for name in deferred_files(f"{machine}.rank{k}")]
    assert [t["rank"] for t in truths] == [0, 1, 2, 3]
