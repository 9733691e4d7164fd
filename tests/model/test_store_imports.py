"""What the store costs a command that keeps nothing (decision 314)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import FIXTURES, REPO


@pytest.mark.integration
def test_an_uncached_overview_imports_no_zipfile(tmp_path: Path) -> None:
    """`store.values` (imported by the tools) names zipfile only where it reads a stored
    entry: an analysing command that reads none does not pay its 5-8 ms import."""
    code = (
        "import sys\n"
        "from stepscope.cli.main import main\n"
        "assert main(['tool', sys.argv[1], 'overview_page', '--no-cache', '-q']) == 0\n"
        "print('zipfile' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "STEPSCOPE_CACHE_DIR": str(tmp_path)}
    trace = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"
    done = subprocess.run(
        [sys.executable, "-c", code, str(trace)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stderr.strip().splitlines()[-1] == "False"
