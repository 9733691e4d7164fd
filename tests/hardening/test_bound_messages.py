"""Issue #28 item 3: bounds that ended in a traceback give a one-line message instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES

TINY = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"


@pytest.mark.parametrize(
    ("flag", "value"), [("--start-ms", "nan"), ("--end-ms", "inf"), ("--start-ms", "-inf")]
)
def test_export_window_must_be_finite(
    tmp_path: Path, flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["export", str(TINY), "-o", str(tmp_path / "t.json"), f"{flag}={value}"])
    err = capsys.readouterr().err
    assert code == 2 and f"{flag} {value}: give a finite number" in err
    assert list(tmp_path.iterdir()) == []


def test_export_window_far_outside_the_trace_is_clamped(tmp_path: Path) -> None:
    import json

    out = tmp_path / "t.json"
    argv = ["export", str(TINY), "-o", str(out), "--start-ms=-1e300", "--end-ms=1e300"]
    assert main([*argv, "--no-cache"]) == 0
    assert json.loads(out.read_text())["traceEvents"]


@pytest.mark.integration
def test_export_to_closed_stdout_is_one_line() -> None:
    code = "import sys; from stepscope.cli.main import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "export", str(TINY), "-o", "-"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        # the child starts with descriptor 1 closed, as `stepscope export -o - >&-` does
        preexec_fn=lambda: __import__("os").close(1),
    )
    assert done.returncode == 2, done.stderr
    assert "standard output is closed" in done.stderr and "Traceback" not in done.stderr
