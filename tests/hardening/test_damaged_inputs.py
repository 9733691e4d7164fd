"""Issue #13 items 4, 9, 10: damaged traces and log directories are skipped and counted,
never a traceback."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.errors import StepscopeError
from stepscope.model import discover_runs
from stepscope.stats.arrays import run_starts
from stepscope.xspace.kineto import kineto_bytes_to_xspace
from stepscope.xspace.kineto.categories import step_number
from tests.support.fixtures import tf_xplane

GOOD = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5}


def test_run_starts_holds_on_empty_input() -> None:
    assert run_starts(np.zeros(0, np.int64)).tolist() == []
    assert run_starts(np.array([3, 3, 4, 4, 4, 3])).tolist() == [1, 0, 1, 0, 0, 1]


@pytest.fixture(scope="module")
def kernels_without_launches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "kineto"
    doc = json.loads(gzip.decompress((source / "a100_triton_tiny.json.gz").read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("name") != "cuLaunchKernel"]
    path = tmp_path_factory.mktemp("k") / "nolaunch.pt.trace.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["tool", "{}", "overview_page", "--json"],
        ["tool", "{}", "diagnostics", "--json"],
        ["report", "{}"],
    ],
)
def test_kernels_whose_launch_is_missing(
    kernels_without_launches: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """IndexError in overview_page, diagnostics and report before."""
    code = main([a.replace("{}", str(kernels_without_launches)) for a in argv] + ["--no-cache"])
    assert code == 0, capsys.readouterr().err[-500:]


@pytest.mark.parametrize(
    ("bad", "skipped"),
    [
        ({**GOOD, "tid": 10**30}, "malformed events"),
        ({**GOOD, "tid": "9" * 30}, "thread id beyond int32"),
        ({**GOOD, "ts": -1e300}, "without a valid timestamp"),
        (
            {
                "ph": "i",
                "name": "[memory]",
                "pid": 1,
                "tid": 1,
                "ts": 30,
                "args": {"Bytes": 10**30, "Addr": 5, "Total Allocated": 1, "Device Id": -1},
            },
            "[memory] events with a value past int64",
        ),
    ],
)
def test_one_out_of_range_event_is_skipped_not_the_trace(bad: dict[str, Any], skipped: str) -> None:
    doc = {"traceEvents": [GOOD, bad]}
    space = kineto_bytes_to_xspace(json.dumps(doc).encode(), "one_bad.json")
    names = [m.name for p in space.planes for m in p.event_metadata.values()]
    assert "aten::mm" in names
    assert any(skipped in w for w in space.warnings), space.warnings


def test_step_numbers_beyond_64_bits_are_no_step_numbers() -> None:
    assert step_number("ProfilerStep#12") == 12
    assert step_number("ProfilerStep#" + "9" * 25) is None
    doc = {"traceEvents": [{**GOOD, "cat": "user_annotation", "name": "ProfilerStep#" + "9" * 25}]}
    space = kineto_bytes_to_xspace(json.dumps(doc).encode(), "steps.json")
    assert not space.warnings


def test_dangling_symlink_does_not_hide_the_log_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    os.symlink(tf_xplane("ctl"), run / "h.xplane.pb")
    os.symlink(tmp_path / "gone.xplane.pb", run / "dangling.xplane.pb")
    os.symlink(tmp_path / "gone", tmp_path / "plugins" / "profile" / "r2")
    (tmp_path / "k").mkdir()
    os.symlink(tmp_path / "gone.json", tmp_path / "k" / "w.pt.trace.json")
    runs = discover_runs(str(tmp_path))
    assert [(r.name, r.host_names) for r in runs] == [("r1", ["h"])]
    assert main(["runs", str(tmp_path)]) == 0
    assert "r1" in capsys.readouterr().out
    assert "skipped" in caplog.text and "dangling.xplane.pb" in caplog.text


def test_unknown_url_protocol_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "nosuch://bucket/logs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "stepscope: error: nosuch://bucket/logs: cannot open this URL: Protocol not known: nosuch"
    ]
    with pytest.raises(StepscopeError):
        discover_runs("nosuch://bucket/logs")


def test_tf_data_parent_cycles_end() -> None:
    """Damaged iterator events can link into a cycle; pointer jumping looped forever on it
    (overview_page, input_pipeline_analyzer and tf_data_bottleneck_analysis hung)."""
    from stepscope.stats.input.tf_data import _all_ancestors, _roots

    parent = np.array([1, 2, 0, -1, 3, 4], dtype=np.int64)  # 0 -> 1 -> 2 -> 0; 5 -> 4 -> 3
    values = np.array([True, True, False, True, True, True])
    assert _all_ancestors(parent, values).tolist() == [False, False, False, True, True, True]
    roots = _roots(parent)
    assert roots[3:].tolist() == [3, 3, 3] and set(roots[:3].tolist()) <= {0, 1, 2}
