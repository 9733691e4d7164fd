"""`stepscope import` of many rank files through the executor: the same run as one file after
the other, a bad file reported and skipped, the staged files never left behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.model import open_run
from stepscope.xspace.formats import load_xspace
from tests.pod.builders import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

TRACE = FIXTURES / "kineto" / "cpu_only_gloo_rank34.json.gz"


def _traces(root: Path) -> Path:
    root.mkdir()
    for i in range(3):  # three files that all say they are rank 34
        shutil.copy(TRACE, root / f"copy{i}.pt.trace.json.gz")
    (root / "broken.pt.trace.json.gz").write_bytes(b"\x1f\x8b not gzip")
    return root


def _import(traces: Path, logdir: Path, workers: str, capsys: pytest.CaptureFixture[str]) -> dict:
    code = main(["import", str(traces), "--logdir", str(logdir), "--json", "--workers", workers])
    assert code == 1  # the broken file is reported and skipped
    out, err = capsys.readouterr()
    assert "broken.pt.trace.json.gz" in err and "Traceback" not in err
    return json.loads(out)


@pytest.mark.parametrize("workers", ["0", pytest.param("2", marks=pytest.mark.integration)])
def test_import_through_the_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    found = _import(_traces(tmp_path / "traces"), tmp_path / "logs", workers, capsys)
    assert [h["host"] for h in found["hosts"]] == ["rank34", "rank34_2", "rank34_3"]
    assert len(found["failures"]) == 1 and len(found["warnings"]) >= 2
    run_dir = Path(found["run_dir"])
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "rank34.xplane.pb",
        "rank34_2.xplane.pb",
        "rank34_3.xplane.pb",
    ]
    assert load_xspace(run_dir / "rank34_2.xplane.pb").hostnames == ["rank34_2"]
    assert open_run(str(run_dir)).host_names == ["rank34", "rank34_2", "rank34_3"]
