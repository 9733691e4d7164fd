"""The CLI's analysis commands load numpy with one OpenBLAS thread (stepscope makes no BLAS
call; the threads cost CPU at import); commands that run the user's code keep the default."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.scripts import fresh_python

pytestmark = [pytest.mark.integration, pytest.mark.untimed]


def _run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    return fresh_python(code, env={**clean, **env}).splitlines()[-1]


def _after(argv: list[str], own_process: bool = True, **env: str) -> str:
    """OPENBLAS_NUM_THREADS after `main` ran ``argv`` as the ``stepscope`` program (from
    sys.argv) or, with ``own_process`` False, as a script calling ``main(argv)``."""
    call = "main()" if own_process else f"main({argv!r})"
    code = (
        f"import os, sys; from stepscope.cli.main import main; sys.argv[1:] = {argv!r}\n"
        f"try:\n    {call}\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    return _run(code, **env)


def test_analysis_commands_ask_for_one_blas_thread(tmp_path: Path) -> None:
    assert _after(["runs", str(tmp_path)]) == "1"
    assert _after(["runs", str(tmp_path)], OPENBLAS_NUM_THREADS="3") == "3"  # the user's
    assert _after(["runs", str(tmp_path)], own_process=False) == "None"  # a user's script
    assert _after(["server", "--help"]) == "None"  # runs the user's training script
    assert _after(["demo", "--help"]) == "None"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux thread list")
def test_numpy_loads_without_blas_threads() -> None:
    code = (
        "import os; from stepscope.cli.blas import single_threaded_blas\n"
        "single_threaded_blas(); import numpy\n"
        "print(len(os.listdir('/proc/self/task')))"
    )
    assert _run(code) == "1"
