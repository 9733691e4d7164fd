"""Bridge tests: each test starts with the default bridge choice and no session running.

Real frameworks run in subprocesses (`run_script`): once ``torch`` is imported, every later
`stepscope.start` in the process would run the PyTorch bridge, which would change what the
other capture tests record; a subprocess also keeps TensorFlow, JAX and PyTorch apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture import bridges, session

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean_bridges(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(bridges.ENV_VAR, raising=False)
    monkeypatch.setattr(bridges, "_frameworks", None)
    monkeypatch.setattr(bridges, "_torch_settings", None)
    monkeypatch.setattr(bridges, "_registered", [])
    yield
    if session._session is not None:
        try:
            session.stop(save=False)
        except Exception:
            session._session = None


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
