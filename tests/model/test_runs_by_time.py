"""Traces of one folder recorded far apart in time are separate runs (decision 186): the
shared Kineto fixtures, nine unrelated traces of 2021-2026 in one folder, were one run of nine
hosts spanning 4.7 years."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from stepscope.errors import NotFoundError
from stepscope.model.runs import RUN_GAP_NS, discover_runs, open_run
from stepscope.xspace.formats.kineto import recorded_at
from tests.support.fixtures import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

BASE_NS = 1_700_000_000_000_000_000  # 2023-11-14 22:13:20 UTC


def _trace(path: Path, first_ts_us: float, base_ns: int | None = BASE_NS) -> None:
    doc: dict[str, object] = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 1,
                "tid": 1,
                "ts": first_ts_us,
                "dur": 5.0,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::add",
                "pid": 1,
                "tid": 1,
                "ts": first_ts_us - 2.0,
                "dur": 1.0,
            },
        ],
        "traceName": str(path),
    }
    if base_ns is not None:
        doc["baseTimeNanoseconds"] = base_ns  # Kineto writes it after the events
    text = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)


def test_traces_of_one_job_stay_one_run(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    _trace(job / "rank0.1.pt.trace.json.gz", 1_000.0)
    _trace(job / "rank1.2.pt.trace.json", 1_000.0 + 60e6)  # a minute later: still the job
    runs = discover_runs(str(tmp_path))
    assert [(r.name, r.host_names) for r in runs] == [("job", ["rank0", "rank1"])]
    assert open_run(str(job)).host_names == ["rank0", "rank1"]


def test_traces_far_apart_are_separate_runs(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    _trace(folder / "rank0.1.pt.trace.json.gz", 1_000.0)
    _trace(folder / "rank1.1.pt.trace.json.gz", 3_000.0)
    _trace(folder / "rank0.2.pt.trace.json.gz", 1_000.0 + 3600e6)  # the script again, 1 h on
    # no baseTimeNanoseconds: ts is the time itself (the 2021 schema), here 2024-01-01
    _trace(folder / "old.json", 1_704_067_200e6, base_ns=None)
    (folder / "cut.json").write_text('{"traceEvents": [')  # says no time: stays by the folder
    runs = {r.name: r.host_names for r in discover_runs(str(tmp_path))}
    assert runs == {
        "traces@2023_11_14_22_13_20": ["rank0", "rank1"],
        "traces@2023_11_14_23_13_20": ["rank0"],
        "traces@2024_01_01_00_00_00": ["old"],
        "traces": ["cut"],
    }
    with pytest.raises(NotFoundError, match=r"recorded at 4 times far apart.*one trace file"):
        open_run(str(folder))


def test_the_gap_is_between_consecutive_starts(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    gap_us = RUN_GAP_NS / 1000
    for k, ts in enumerate((0.0, gap_us, 2 * gap_us, 3 * gap_us + 1)):  # the last: 1 µs beyond
        _trace(folder / f"w{k}.pt.trace.json", 1e6 + ts)
    runs = sorted(r.host_names for r in discover_runs(str(tmp_path)))
    assert runs == [["w0", "w1", "w2"], ["w3"]]


@pytest.mark.integration  # inflates the nine fixtures (~0.3 s)
def test_the_kineto_fixtures_folder_is_nine_runs() -> None:
    runs = discover_runs(str(FIXTURES / "kineto"))
    assert len(runs) == 9 and all(len(r.hosts) == 1 for r in runs)
    assert all(re.fullmatch(r"kineto@\d{4}(_\d\d){5}", r.name) for r in runs)
    bert = next(r for r in runs if r.host_names == ["h100_bert_small_inference"])
    assert bert.name == "kineto@2025_07_18_09_14_43"  # 16 min before the timesformer trace


def test_recorded_at_reads_the_base_before_the_events_too() -> None:
    # stepscope's own Chrome-trace export writes baseTimeNanoseconds first
    head = b'{"displayTimeUnit":"ns","baseTimeNanoseconds":5000,"traceEvents":[{"ts":1.5}'
    assert recorded_at(head, b"]}") == 6500
    assert recorded_at(b'{"traceEvents":[]}', b"") is None
    assert recorded_at(b'{"other":1}', b"") is None
