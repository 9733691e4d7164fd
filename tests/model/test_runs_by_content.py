"""Kineto traces whose names do not end in .pt.trace.json[.gz] are found by what they hold."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from stepscope.model.runs import discover_runs
from tests.support.fixtures import FIXTURES

BERT = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"


def test_trace_json_files_are_found_by_content(tmp_path: Path) -> None:
    run = tmp_path / "logs" / "bert"
    run.mkdir(parents=True)
    shutil.copy(BERT, run / "rank0.json.gz")  # gzip, any name
    (run / "rank1.json").write_bytes(gzip.decompress(BERT.read_bytes()))  # plain JSON
    (run / "config.json").write_text('{"lr": 0.1, "note": "traceEvents is a word here"}')
    (run / "list.json").write_text('[{"traceEvents": []}]')  # not an object
    (run / "broken.json.gz").write_bytes(b"not gzip at all")
    runs = discover_runs(str(tmp_path / "logs"))
    assert [r.name for r in runs] == ["bert"]
    assert runs[0].host_names == ["rank0", "rank1"]
    assert {h.format for h in runs[0].hosts} == {"kineto"}


def test_tensorflow_session_json_files_are_not_runs(tmp_path: Path) -> None:
    session = tmp_path / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    shutil.copy(next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb")), session / "vm.xplane.pb")
    shutil.copy(BERT, session / "vm.trace.json.gz")  # TF's old trace-viewer dump beside it
    runs = discover_runs(str(tmp_path))
    assert [(r.name, r.host_names) for r in runs] == [("s1", ["vm"])]
