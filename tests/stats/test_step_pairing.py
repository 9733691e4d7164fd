"""Pairing the steps of several hosts (ALL_HOSTS overview, input analyzer, pod viewer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.model import ALL_HOSTS, open_run
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

MS = 1_000_000


def _host(name: str, first: int, count: int, offset: int = 0, step_ms: int = 10) -> HostSteps:
    start = (np.arange(count, dtype=np.int64) + offset) * step_ms * MS
    return HostSteps(
        name, np.arange(first, first + count, dtype=np.int64), start, np.full(count, 9 * MS)
    )


def test_hosts_sharing_most_numbers_pair_by_number_and_say_what_is_left_out() -> None:
    pairing = pair_host_steps([_host("a", 0, 10), _host("b", 1, 10, offset=1)])
    assert pairing.mode == "step_number"
    assert pairing.step_num.tolist() == list(range(1, 10))
    assert pairing.rows[0].tolist() == list(range(1, 10))
    assert pairing.rows[1].tolist() == list(range(0, 9))
    assert pairing.left_out == (1, 1)
    assert "paired by step number" in pairing.description
    assert "a: 1 (steps 0)" in pairing.description and "b: 1 (steps 10)" in pairing.description


def test_hosts_with_different_counters_pair_by_position_as_xprof() -> None:
    # The workers: 156-166 and 148-157 captured over the same window.
    pairing = pair_host_steps([_host("w0", 156, 11), _host("w1", 148, 10)])
    assert pairing.mode == "position"
    assert pairing.n_steps == 10  # as XProf's pod viewer
    assert pairing.rows[0].tolist() == list(range(10))
    assert pairing.rows[1].tolist() == list(range(10))
    assert pairing.left_out == (1, 0)
    assert (
        "paired by position" in pairing.description and "w0: 1 (steps 166)" in pairing.description
    )


def test_position_pairing_follows_time_overlap() -> None:
    # w1 started three steps later: its first step runs alongside w0's fourth.
    pairing = pair_host_steps([_host("w0", 0, 10), _host("w1", 500, 7, offset=3)])
    assert pairing.mode == "position" and pairing.n_steps == 7
    assert pairing.rows[0].tolist() == list(range(3, 10))
    assert pairing.rows[1].tolist() == list(range(7))
    assert pairing.left_out == (3, 0)


def test_a_host_without_steps_is_named() -> None:
    empty = HostSteps("idle", *(np.zeros(0, np.int64),) * 3)
    pairing = pair_host_steps([_host("a", 0, 4), empty])
    assert pairing.n_steps == 4 and pairing.rows[1].tolist() == [-1] * 4
    assert "no steps on idle" in pairing.description


def _worker(path: Path, host: str, first_marker: int, markers: int) -> None:
    builder = XSpaceBuilder(host)
    line = builder.plane("/host:CPU").line(1, "python")
    for k in range(markers):
        start = 1_000 + k * 10 * MS
        line.event("train", start, 9 * MS, {"step_num": first_marker + k, "_r": 1})
        line.event("IteratorGetNext", start, 2 * MS)
        line.event("compute", start + 2 * MS, 6 * MS)
    write_xspace(builder.build(), path / f"{host}.xplane.pb")


@pytest.fixture(scope="module")
def partly_overlapping_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("logdir") / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    _worker(run, "w0", 155, 13)  # steps 156-166 once the first and last are dropped
    _worker(run, "w1", 147, 12)  # steps 148-157
    return run


def test_all_hosts_tools_pair_partly_overlapping_workers(partly_overlapping_run: Path) -> None:
    run = open_run(str(partly_overlapping_run))
    ctx = ToolContext(run, ALL_HOSTS, ProfileStore(use_cache=False), {})
    overview = output.to_json(get_tool("overview_page").build(ctx))
    pod = output.to_json(get_tool("pod_viewer").build(ctx))
    pipeline = output.to_json(get_tool("input_pipeline_analyzer").build(ctx))
    assert len(overview["steps"]) == len(pod["steps"]) == len(pipeline["steps"]) == 10
    for text in (overview["step_source_detail"], pod["pairing"], pipeline["step_pairing"]):
        assert "paired by position" in text and "w0: 1 (steps 166)" in text
    assert pod["left_out_steps"] == 1
    for step in pod["steps"]:
        assert all(w is not None for w in step["workers"])


@pytest.mark.integration
def test_all_hosts_step_count_matches_xprof(partly_overlapping_run: Path) -> None:
    convert = pytest.importorskip("xprof.convert.raw_to_tool_data")
    files = sorted(str(p) for p in partly_overlapping_run.glob("*.xplane.pb"))
    data, _ = convert.xspace_to_tool_data(files, "overview_page", {"use_saved_result": False})
    xprof_steps = json.loads(data)[1]["rows"]
    run = open_run(str(partly_overlapping_run))
    ctx = ToolContext(run, ALL_HOSTS, ProfileStore(use_cache=False), {})
    ours = output.to_json(get_tool("overview_page").build(ctx))
    assert len(ours["steps"]) == len(xprof_steps) == 10
