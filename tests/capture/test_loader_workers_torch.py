"""A real PyTorch DataLoader with 2 worker processes, fork and spawn (issue #26): each worker's
batches come back into the rank's profile, and the step's get-next time splits into waiting
for batches to be made and getting them, summing to what the loop measured itself."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from tests.support.fixtures import REPO

# torch runs in the loop's process only: imported here, even at collection, it would make the
# PyTorch bridge join every later capture of this test process
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="pip install torch"),
]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_worker_batches_are_in_the_profile(
    context: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = tmp_path / "tmp"
    spool.mkdir()
    path = os.pathsep.join([str(REPO / "src"), str(REPO)])  # this checkout's stepscope
    env = {**os.environ, "PYTHONPATH": path, "TMPDIR": str(spool), "OMP_NUM_THREADS": "1"}
    logdir = tmp_path / "logs"
    steps, batch, item_ms = 12, 4, 5.0
    cmd = ["-m", "tests.support.loader_job", str(logdir), "--context", context]
    cmd += ["--steps", str(steps), "--batch", str(batch), "--item-ms", str(item_ms)]
    proc = subprocess.run(
        [sys.executable, *cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = json.loads((logdir / "truth.json").read_text())
    assert (
        main(["tool", truth["run"], "input_pipeline_analyzer", "--workers", "0", "--no-cache"]) == 0
    )
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    [found] = out["loader_workers"]
    assert [r["worker"].split(" (")[0] for r in found["rows"]] == [
        "DataLoader worker 0",
        "DataLoader worker 1",
    ]
    assert found["ready_batches"] + found["waited_batches"] == steps  # each asked batch
    made = sum(r["batches"] for r in found["rows"])
    assert made >= steps
    # each batch sleeps item_ms per sample in __getitem__: GetItem holds at least that
    get_item_ms = sum(r["get_item_ms"] for r in found["rows"])
    assert get_item_ms >= made * batch * item_ms
    assert found["slowest_stage"] == "GetItem"
    # the step's get-next time is waiting for the batch to be made or getting it: together,
    # what the loop measured as fetching its batches (from the previous step's end, the
    # first from before its `for`, the workers' start included: decision 635), which adds
    # the loop's own few us per step
    ours = sum(r["wait_ms"] + r["transfer_ms"] for r in found["rows"])
    measured = 1e3 * sum(truth["fetch_s"])
    assert measured - 0.05 * measured - 2 <= ours <= measured
    assert list(spool.glob("stepscope-loader-*")) == []  # the spool is removed
