"""A profile stepscope captures opens in XProf 2.24 with the same steps and breakdown.

Runs XProf's own converter in-process (skipped where the `xprof` package is not installed)
and compares its figures with stepscope's on the same file (never with sleep durations: a
busy machine stretches those). XProf's rules that matter here: a step counts only if an
event of non-zero duration is recorded inside it (stepscope writes a 1 ns anchor in every
step for this), and with more than five steps it drops the first and the last ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.stats import build_step_db
from tests.support.capture import load_run, named

pytestmark = pytest.mark.integration

raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")

STEPS = 8
INPUT_S, COMPUTE_S = 0.012, 0.006


def _xprof(run_dir: Path, tool: str) -> Any:
    paths = [str(p) for p in run_dir.glob("*.xplane.pb")]
    data, _content_type = raw_to_tool_data.xspace_to_tool_data(
        paths, tool, {"use_saved_result": False}
    )
    assert data, f"XProf returned nothing for {tool}"
    return json.loads(data)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    def records() -> Iterator[int]:
        i = 0
        while True:
            time.sleep(INPUT_S)  # a slow source: the step waits for it
            yield i
            i += 1

    logdir = tmp_path_factory.mktemp("xprof")
    batches = stepscope.data.instrument(records(), name="Source")
    stepscope.start(logdir)
    for step in range(STEPS):
        with stepscope.step(step):
            next(batches)
            with stepscope.trace("compute"):
                time.sleep(COMPUTE_S)
    run_dir = stepscope.stop()
    assert run_dir is not None
    return run_dir


def test_overview_page_finds_our_steps_and_breakdown(captured: Path) -> None:
    overview = _xprof(captured, "overview_page")
    step_table = overview[1]
    labels = [row["c"][0]["v"] for row in step_table["rows"]]
    assert labels == [f"train {n}" for n in range(1, STEPS - 1)]  # first and last dropped

    ours = named(load_run(captured), "train")[1:-1]
    db = build_step_db(load_run(captured))
    # stepscope keeps the two ends: its own markers are whole, the capture says (decisions
    # 622, 644); XProf's rule drops them, so the steps compared are XProf's
    assert db.step_num.tolist() == list(range(STEPS))
    assert db.step_num.tolist()[1:-1] == [s["stats"]["step_num"] for s in ours]
    p = step_table["p"]
    inner = db.dur_ns[1:-1]
    assert float(p["steptime_ms_average"]) == pytest.approx(inner.mean() / 1e6, abs=0.05)
    # Breakdown: the instrumented fetch is "Input", the traced block "Host compute", in both.
    categories = db.category_ns()
    for key, ours_key in (
        ("infeed_time_ms_avg", "input"),
        ("host_compute_time_ms_avg", "host_compute"),
    ):
        assert float(p[key]) == pytest.approx(categories[ours_key][1:-1].mean() / 1e6, abs=0.05)
    assert categories["input"].sum() > categories["host_compute"].sum()
    assert "HIGHLY input-bound" in p["input_conclusion"]
    per_step = {row["c"][0]["v"]: row["c"][-1]["v"] for row in step_table["rows"]}
    for step in ours:
        label = f"train {step['stats']['step_num']}"
        assert per_step[label] == pytest.approx(step["dur_ns"] / 1e6, abs=0.01)


def test_steps_with_nothing_traced_inside_are_steps_in_xprof_and_stepscope(
    tmp_path: Path,
) -> None:
    def untraced_work() -> float:
        return sum(i * i for i in range(20_000))

    stepscope.start(tmp_path)
    for step in range(STEPS):
        with stepscope.step(step):
            untraced_work()
    run_dir = stepscope.stop()
    assert run_dir is not None
    rows = _xprof(run_dir, "overview_page")[1]["rows"]
    assert [row["c"][0]["v"] for row in rows] == [f"train {n}" for n in range(1, STEPS - 1)]
    db = build_step_db(load_run(run_dir))
    assert db.step_num.tolist() == list(range(STEPS))  # both ends whole (decision 644)
    per_step = {row["c"][0]["v"]: row["c"][-1]["v"] for row in rows}
    for num, dur in zip(db.step_num.tolist()[1:-1], db.dur_ns.tolist()[1:-1], strict=True):
        assert per_step[f"train {num}"] == pytest.approx(dur / 1e6, abs=0.01)


def test_input_pipeline_analyzer_sees_the_instrumented_source(captured: Path) -> None:
    analysis = _xprof(captured, "input_pipeline_analyzer")
    rows = [row["c"] for table in analysis for row in table.get("rows", [])]
    source = next(cells for cells in rows if cells[0]["v"] == "Iterator::Source")
    assert source[1]["v"] == STEPS  # one call per step
    assert source[-1]["v"] == "Preprocessing"
    assert "HIGHLY input-bound" in json.dumps(analysis)
