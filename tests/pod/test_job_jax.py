"""A JAX 2-process CPU job (``jax.distributed.initialize`` on localhost), captured with
defaults (issue #26): one run, one file per process, the process slow in its input named
with its cause and steps, the waiter's collective wait against what the script measured."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.cli.main import main
from tests.support.fixtures import REPO
from tests.support.ports import free_port

# JAX runs in the job's processes only
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="pip install jax"),
]


def test_jax_processes_are_one_job_and_the_slow_one_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the tree's own stepscope, not the one installed (a worktree's jobs ran main's)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    env["OMP_NUM_THREADS"] = "1"
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    cmd = ["-m", "tests.support.jax_job", str(tmp_path), "--port", str(free_port())]
    proc = subprocess.run(
        [sys.executable, *cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    truths = [json.loads((tmp_path / f"truth.rank{r}.json").read_text()) for r in (0, 1)]
    [run] = (tmp_path / "plugins" / "profile").iterdir()
    machine = socket.gethostname()
    assert sorted(p.name for p in run.iterdir()) == [
        f"{machine}.rank0.xplane.pb",
        f"{machine}.rank1.xplane.pb",
    ]
    assert main(["tool", str(run), "pod_viewer", "--workers", "0", "--no-cache"]) == 0
    pod: dict[str, Any] = json.loads(capsys.readouterr().out)
    [late] = pod["stragglers"]
    steps = [s["step_num"] for s in pod["steps"]]
    # the sleep making the batch is untraced Python: "All Others"
    assert (late["host"], late["reason"], late["steps"]) == (f"{machine}.rank1", "other", steps)
    input_ms = 1e3 * float(np.mean([truths[1]["input_s"][k] for k in steps]))
    assert late["reason_ms_per_step"] == pytest.approx(input_ms, rel=0.2)
    [waiter] = [w for w in pod["workers"] if w["role"] == "waiting"]
    col = pod["workers"].index(waiter)
    ours = [
        100
        * s["workers"][col]["breakdown_ms"]["collective_wait"]
        / s["workers"][col]["duration_ms"]
        for s in pod["steps"]
    ]
    # the waiter's jitted step is a sum of 1024 floats: its time there is the all-reduce's wait
    measured = [100 * truths[0]["run_s"][k] / truths[0]["step_s"][k] for k in steps]
    assert float(np.median(ours)) == pytest.approx(float(np.median(measured)), abs=5)
