"""Issue #13 item 12: a program that dies before `stepscope.stop()` still leaves its profile,
marked as partial with the reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.capture import session
from stepscope.xspace import load_xspace
from tests.support.fixtures import REPO

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

SCRIPT = """
import os, signal, sys, time
import stepscope
stepscope.start(sys.argv[1])
for i in range(3):
    with stepscope.step(i):
        with stepscope.trace("work"):
            time.sleep(0.001)
print("recorded", flush=True)
if sys.argv[2] == "exception":
    raise RuntimeError("training diverged")
if sys.argv[2] == "sigterm":
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
"""


def _run(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), how],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    files = sorted(tmp_path.rglob("*.xplane.pb"))
    assert len(files) == 1, result.stderr[-2000:]
    space = load_xspace(files[0])
    assert sum(len(line.events) for p in space.planes for line in p.lines) >= 6
    return result, list(space.warnings)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("how", "returncode", "reason"),
    [
        ("exception", 1, "uncaught RuntimeError"),
        ("sigterm", -signal.SIGTERM, "received SIGTERM"),
        ("exit", 0, "the program exited"),
    ],
)
def test_profile_saved_when_the_program_dies(
    tmp_path: Path, how: str, returncode: int, reason: str
) -> None:
    result, warnings = _run(tmp_path, how)
    assert result.returncode == returncode  # the program's own outcome is unchanged
    assert any("partial profile" in w and reason in w for w in warnings), warnings
    assert "saved a partial profile" in result.stderr


def test_save_partial_marks_the_profile(tmp_path: Path) -> None:
    session.start(tmp_path)
    run_dir = session.save_partial("the test ended it")
    assert run_dir is not None and not session.is_running()
    space = load_xspace(next(Path(run_dir).glob("*.xplane.pb")))
    assert any("partial profile: the test ended it" in w for w in space.warnings)
    assert session.save_partial("again") is None  # nothing running: nothing to save
