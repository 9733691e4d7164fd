"""Issue #28 item 3: bounds that ended in a traceback give a one-line message instead."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepscope import limits
from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES
from tests.support.kineto import assert_same_profile

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

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


def _kineto(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    path.write_text(json.dumps({**header, "traceEvents": events}))
    return path


def _op(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def test_inflation_bound_in_the_streaming_scan_is_the_bound_error(tmp_path: Path) -> None:
    """A .json.gz whose text passes the bound (a whitespace bomb; any file under a small
    limit) raised SystemError from the scanner's memoryview, not the bound's error."""
    from stepscope.xspace.kineto import kineto_to_columns

    bomb = tmp_path / "bomb.json.gz"
    text = b'{"traceEvents": [' + b" " * (3 << 20) + b"]}"
    bomb.write_bytes(gzip.compress(text, 9))
    limits.configure(2 << 20)
    try:
        with pytest.raises(limits.ProfileTooLargeError) as raised:
            kineto_to_columns(bomb)
    finally:
        limits.configure(None)
    assert "decompressing this file" in str(raised.value) and "2.0 MiB" in str(raised.value)


def test_stream_id_beyond_the_line_ids_is_skipped_and_exported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stream id of 2**63 overflowed the Chrome export's int64 thread ids."""
    kernel = {
        "ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
        "args": {"stream": 1 << 63, "device": 0, "correlation": 1},
    }  # fmt: skip
    trace = _kineto(tmp_path / "s.json", [_op("ProfilerStep#1", 0, 100), kernel])
    out = tmp_path / "out.json"
    assert main(["export", str(trace), "-o", str(out), "--no-cache"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert main(["info", str(trace), "--no-cache"]) == 0
    assert "skipped 1 device events with a stream id beyond" in capsys.readouterr().out
    assert_same_profile(trace)  # the column and XSpace paths skip it alike


def test_memory_profile_of_a_trace_without_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A small Kineto trace with memory events and no steps raised IndexError."""
    memory = {
        "ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
        "tid": 1, "ts": 30,
        "args": {"Device Type": 1, "Device Id": 0, "Addr": 2, "Bytes": 50,
                 "Total Allocated": 50, "Total Reserved": 0},
    }  # fmt: skip
    trace = _kineto(tmp_path / "m.json", [_op("aten::mm", 97, 4), memory])
    assert main(["tool", str(trace), "memory_profile", "--json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"]
