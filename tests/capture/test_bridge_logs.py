"""A framework that aborts the process while its profiler starts or stops leaves its last
words where the user can read them (`stepscope.capture.bridges.logs.captured_output`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CHILD = """
import os, sys
from stepscope.capture.bridges.logs import captured_output
print("profiling", file=sys.stderr, flush=True)
with captured_output([]):
    os.write(2, b"F0000 profiler.cc:12] Check failed: the framework's last words\\n")
    os.abort()
"""


def test_an_abort_inside_a_profiler_call_leaves_its_words_and_stack(tmp_path: Path) -> None:
    """A TensorFlow worker of a two-worker job died with SIGABRT in its profiler's stop and
    said nothing at all: fd 2 pointed at an unlinked temporary file."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    env["TMPDIR"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -signal.SIGABRT
    assert done.stderr.startswith("profiling\n")
    assert "Fatal Python error: Aborted" in done.stderr  # the stack, on the real stderr
    assert 'File "<string>", line 7 in <module>' in done.stderr
    [kept] = tmp_path.glob("stepscope-stderr-*-*.txt")
    assert "Check failed: the framework's last words" in kept.read_text()


def test_a_completed_call_keeps_nothing_and_restores_stderr(tmp_path: Path) -> None:
    child = (
        "import os, sys, faulthandler\n"
        "from stepscope.capture.bridges.logs import captured_output\n"
        "said = []\n"
        "with captured_output(said):\n"
        "    os.write(2, b'W0000 a warning\\n')\n"
        "assert said == ['W0000 a warning\\n'], said\n"
        "assert not faulthandler.is_enabled()\n"
        "os.write(2, b'after\\n')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    env["TMPDIR"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "W0000 a warning\nafter\n"
    assert list(tmp_path.iterdir()) == []
