"""What the store costs a command that keeps nothing (decision 314)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import FIXTURES
from tests.support.scripts import imported_by_first_overview

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


@pytest.mark.integration
def test_an_uncached_overview_imports_no_zipfile(tmp_path: Path) -> None:
    """`store.values` (imported by the tools) names zipfile only where it reads a stored
    entry: an analysing command that reads none does not pay its 5-8 ms import."""
    trace = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"
    assert not imported_by_first_overview(trace, "zipfile", tmp_path, "-q")


@pytest.mark.integration
def test_a_server_imports_what_a_stored_read_needs_before_any_request(tmp_path: Path) -> None:
    """A server reads stored entries while it answers (the steps after their child): zipfile,
    14-15 ms of CPU, is imported as it starts, not at that read beside the windows (decision
    660)."""
    code = (
        "import sys; from stepscope.serve.app import create_app; "
        "before = 'zipfile' in sys.modules; create_app(sys.argv[1]); "
        "print(before, 'zipfile' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
