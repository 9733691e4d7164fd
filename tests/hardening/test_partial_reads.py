"""Issue #28 item 7: an answer built from part of a recording says so: a truncated .json.gz,
repaired JSON, events dropped as damaged or at max_events (decision 103)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from stepscope.cli.main import main
from stepscope.xspace.partial import partial_reads
from tests.support.fixtures import FIXTURES

BERT = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"
TRIMMED = "gzip data is truncated or corrupt"


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of two hosts: one whole, one whose .json.gz was cut at 45% (the bytes a copy
    that stopped early leaves)."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "logs" / "run"
    run.mkdir(parents=True)
    data = BERT.read_bytes()
    (run / "cut.pt.trace.json.gz").write_bytes(data[: len(data) * 45 // 100])
    shutil.copy(BERT, run / "whole.pt.trace.json.gz")
    return run


def test_partial_warnings_are_told_from_the_others() -> None:
    warnings = [
        "gzip data is truncated or corrupt: read the first 10 bytes only",
        "2 fwdbwd flow ends matched no op (left out)",
        "skipped 3 events without a valid timestamp",
        "stepscope: 5 events were dropped because max_events=10 was reached; raise it",
    ]
    assert partial_reads(warnings) == (warnings[0], warnings[2], warnings[3])


@pytest.mark.parametrize("cached", [False, True])
def test_tool_answer_has_a_partial_reads_field(
    run_dir: Path, cached: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["tool", str(run_dir / "cut.pt.trace.json.gz"), "overview_page"]
    if cached:  # the converted profile read back from the cache keeps its warnings
        assert main(argv) == 0
        capsys.readouterr()
    assert main(argv if cached else [*argv, "--no-cache"]) == 0
    out, err = capsys.readouterr()
    (read,) = json.loads(out)["partial_reads"]
    assert read["warnings"][0].startswith(TRIMMED)
    assert "partial data" in err
    assert main(["tool", str(run_dir / "whole.pt.trace.json.gz"), "overview_page"]) == 0
    assert "partial_reads" not in json.loads(capsys.readouterr().out)


def test_report_says_partial_data_below_the_title(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(run_dir / "cut.pt.trace.json.gz"), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("PARTIAL DATA") and lines[2].strip().startswith(f"- {TRIMMED}")


def test_all_hosts_answer_names_the_host_read_in_part(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tool", str(run_dir), "overview_page", "--host", "ALL_HOSTS"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["host"] for r in data["partial_reads"]] == ["cut"]


def test_server_answer_carries_the_field_the_page_banner_reads(run_dir: Path) -> None:
    from stepscope.serve.app import create_app, server_names
    from stepscope.serve.state import ServerState

    logdir = run_dir.parent
    app = create_app(
        logdir,
        state=ServerState(logdir, use_cache=False),
        allowed_hosts=server_names("127.0.0.1", ()),
        token="t",
        port=6006,
    )
    with TestClient(app, base_url="http://127.0.0.1:6006") as client:
        cut = client.get("/api/tool/overview_page?run=run&host=cut").json()
        whole = client.get("/api/tool/overview_page?run=run&host=whole").json()
    assert cut["partial_reads"][0]["warnings"][0].startswith(TRIMMED)
    assert "partial_reads" not in whole
    page = (Path(__file__).parents[2] / "src/stepscope/serve/static/app.js").read_text()
    assert "partialBanner(data.partial_reads" in page  # the banner every tool page shows
