"""A plain PyTorch loop over a DataLoader with workers under `stepscope.start`/`stop` (no
stepscope call in the loop; decisions 351-353): the workers' batches and stack samples come
back into the profile for fork, spawn and persistent workers; workers started before the
session are left alone; 0 workers has none. Structure and counts only (no timings): the
job measures its own truth (tests/support/plain_loader_job.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.stats.input.loader_verdict import CPU_WAIT_PERCENT
from tests.support.fixtures import REPO

# torch runs in the loop's process only (see test_loader_workers_torch.py)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="pip install torch"),
]

STEPS, BATCH, ITEM_MS = 12, 4, 5.0


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str, item_ms: float = ITEM_MS
) -> tuple[Any, Any]:
    spool = tmp_path / "tmp"
    spool.mkdir()
    path = os.pathsep.join([str(REPO / "src"), str(REPO)])  # this checkout's stepscope
    env = {**os.environ, "PYTHONPATH": path, "TMPDIR": str(spool), "OMP_NUM_THREADS": "1"}
    logdir = tmp_path / "logs"
    cmd = [sys.executable, "-m", "tests.support.plain_loader_job", str(logdir), *args]
    cmd += ["--steps", str(STEPS), "--batch", str(BATCH), "--item-ms", str(item_ms)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(spool.glob("stepscope-loader-*")) == []  # every spool removed
    truth = json.loads((logdir / "truth.json").read_text())
    assert main(["tool", truth["run"], "input_pipeline_analyzer", "--no-cache"]) == 0
    return truth, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_plain_loop_workers_are_in_the_profile(
    context: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth, out = _run(tmp_path, capsys, "--context", context)
    [found] = out["loader_workers"]
    assert found["loader"] == "Iterator::DataLoader(Items)"
    assert found["workers"] == 2
    pids = [int(r["worker"].rpartition("pid ")[2].rstrip(")")) for r in found["rows"]]
    assert [r["worker"].split(" (")[0] for r in found["rows"]] == [
        "DataLoader worker 0",
        "DataLoader worker 1",
    ]
    # the workers' own processes, the ones whose dataset measured its items
    assert truth["main_pid"] not in pids and {str(p) for p in pids} <= set(truth["workers"])
    assert sum(r["batches"] for r in found["rows"]) >= STEPS  # each batch the loop took
    for row in found["rows"]:  # each item sleeps ITEM_MS in __getitem__
        assert row["ms_per_batch"] >= BATCH * ITEM_MS
        assert row["get_item_ms"] >= row["batches"] * BATCH * ITEM_MS
    # the workers' stack samples: the dataset's __getitem__ is where their batches are
    assert found["samples"] > 0
    assert "__getitem__ (plain_loader_job.py)" in [f["function"] for f in found["functions"]]
    assert found["verdict"] in ("workers_busy", "workers_idle", "uneven_batches", "keeping_up")
    assert found["advice"] and found["cores"] >= 1


def test_a_worker_the_loop_waits_on_is_told_how_many_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One worker sleeping 20 ms a batch, a step of a tiny model: the loop waits on it, the
    worker busy all the while (decision 391): add workers, with a count. On a loaded
    machine (a fresh-clone CI beside another pytest run; two or three busy loops beside it:
    3 of 4 runs at load 13-15, decision 1050) the worker's batches wait for a CPU (50-56
    ms, not 20) and the advice rightly says the cores are the limit (decisions 356, 426):
    then its figures must say the worker or the loop waited for a core."""
    _, out = _run(tmp_path, capsys, "--workers", "1")
    [found] = out["loader_workers"]
    advice = found["advice"]
    loop_waited = re.search(r"for (\d+)% of that its own thread was runnable", advice)
    starved = found["cpu_wait_percent"] >= CPU_WAIT_PERCENT or (
        loop_waited is not None and float(loop_waited.group(1)) >= CPU_WAIT_PERCENT
    )
    if not starved:
        assert found["verdict"] == "workers_busy" and found["busy_waiting_percent"] >= 80, found
        assert re.search(r"add workers, they need little CPU: num_workers=\d+ \(now 1\)", advice)
    else:  # the cores, said with the figure that made the verdict
        assert found["verdict"] in ("workers_busy", "workers_idle"), found
        assert re.search(r"waited for a CPU|waiting for a CPU core", advice), found


def test_a_loop_its_model_holds_up_is_not_told_to_add_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Batches made at once, 150 ms of the step's own work: the workers keep up, and neither
    their verdict nor the analyzer's recommendations say "more workers" (the analyzer's
    generic DataLoader advice did)."""
    truth, out = _run(tmp_path, capsys, "--step-sleep-ms", "150", item_ms=0.0)
    [found] = out["loader_workers"]
    texts = [found["advice"], *out["recommendations"]]
    # the next() of a made batch takes ~1 ms, 5-15 ms at load 7: well under 10% of 150;
    # unless the machine held the loop up there (one next() of 375 ms, the loop's thread
    # runnable half of it: 16.8% input, decision 1096), which its figures must then say
    loop_waited = re.search(r"for (\d+)% of that its own thread was runnable", found["advice"])
    if loop_waited is None or float(loop_waited.group(1)) < CPU_WAIT_PERCENT:
        assert found["verdict"] == "keeping_up", (found, truth["next_s"])
        assert "Nothing to change in the DataLoader" in found["advice"]
    else:
        assert found["verdict"] == "workers_idle", (found, truth["next_s"])
        assert "waiting for a CPU core" in found["advice"]
    assert not [t for t in texts if "more workers" in t or "use more" in t]


def test_persistent_workers_started_in_the_session_are_captured_across_epochs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = _run(tmp_path, capsys, "--persistent", "--epochs", "2")
    [found] = out["loader_workers"]
    assert found["workers"] == 2  # the same two processes for both epochs
    assert sum(r["batches"] for r in found["rows"]) >= 2 * STEPS


def test_workers_started_before_the_session_are_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth, out = _run(tmp_path, capsys, "--persistent", "--warm-epochs", "1")
    assert out["loader_workers"] == []
    assert len(truth["next_s"]) == STEPS  # the loop ran through, untouched


def test_no_workers_no_worker_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truth, out = _run(tmp_path, capsys, "--workers", "0")
    assert out["loader_workers"] == []
    assert len(truth["next_s"]) == STEPS


def test_a_killed_worker_leaves_a_saved_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL of a worker mid-pass: torch raises in the loop's next() (the loop catches it),
    stop() saves what was recorded, both workers' lines included, and removes the spool."""
    truth, out = _run(tmp_path, capsys, "--kill-worker-after", "6")
    assert truth["next_s"][-1] == -1.0  # torch told the loop
    [found] = out["loader_workers"]
    assert found["workers"] == 2 and sum(r["batches"] for r in found["rows"]) >= 6
