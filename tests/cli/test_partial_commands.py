"""`stepscope summary`, `diff` and `export` of a trace read in part say so on stderr, as
`report` and `tool` do (decision 613): a cut trace's baseline was written, and diffed, without
a word. The trace: a fixture cut in a temporary folder."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from stepscope.cli.main import main
from tests.support.fixtures import FIXTURES

TRACE = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
SAID = "stepscope: warning: partial data, the answer covers what could be read:"


@pytest.fixture
def cut_trace(tmp_path: Path) -> Path:
    whole = gzip.decompress(TRACE.read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole[: int(len(whole) * 0.6)])
    return cut


@pytest.mark.parametrize(
    "command",
    [["summary", "{}", "-o", "{out}"], ["diff", "{}", "{}"], ["export", "{}", "-o", "{out}"]],
)
def test_a_command_on_a_cut_trace_says_it_read_part(
    command: list[str], cut_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "out.json")
    args = [str(cut_trace) if a == "{}" else out if a == "{out}" else a for a in command]
    assert main([*args, "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert SAID in err
    assert "cut: repaired invalid JSON: file is truncated" in err


def test_a_whole_trace_says_nothing_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summary", str(TRACE), "-o", str(tmp_path / "s.json"), "--no-cache"]) == 0
    assert "partial data" not in capsys.readouterr().err
