"""Running a snippet of Python in a fresh interpreter (framework tests keep TensorFlow, JAX
and PyTorch out of the test process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stepscope.capture import bridges
from tests.support.fixtures import REPO


def run_script(code: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    env.pop(bridges.ENV_VAR, None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"script failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON output:\n{proc.stdout}\n{proc.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    result["_stderr"] = proc.stderr
    return result


def fresh_python(code: str, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter importing this checkout's sources (``env``, default
    this process's environment, plus PYTHONPATH); what it printed, stripped."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**(os.environ if env is None else env), "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"script failed ({proc.returncode}):\n{proc.stderr}"
    return proc.stdout.strip()


def imported_by_first_overview(trace: Path, module: str, cache_dir: Path, *flags: str) -> bool:
    """Whether ``stepscope tool TRACE overview_page --no-cache FLAGS``, run in a fresh
    interpreter with an empty cache, imports ``module`` (start-up cost tests)."""
    argv = ["tool", "{trace}", "overview_page", "--no-cache", *flags]
    code = (
        "import sys\n"
        "from stepscope.cli.main import main\n"
        f"assert main([a.format(trace=sys.argv[1]) for a in {argv!r}]) == 0\n"
        f"print({module!r} in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "STEPSCOPE_CACHE_DIR": str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(trace)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stderr.strip().splitlines()[-1] == "True"
