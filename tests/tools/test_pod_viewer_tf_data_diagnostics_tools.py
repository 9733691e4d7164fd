"""pod_viewer, tf_data_bottleneck_analysis and diagnostics tools: JSON/CSV on real runs,
multi-host runs built in a temporary log directory from the fixtures."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from stepscope.model import ALL_HOSTS, open_run
from stepscope.stats import CATEGORY_NAMES
from stepscope.stats.job_steps import BOUND_LIMITS
from stepscope.tools import output, pod_viewer
from stepscope.tools._analysis import findings
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.gpu_fixtures import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

STORE = ProfileStore(use_cache=False)


def _ctx(path: Path | str, host: str | None = None, **options: str) -> ToolContext:
    run = open_run(str(path))
    return ToolContext(run, host or run.host_names[0], STORE, dict(options))


def _tf_file(name: str) -> Path:
    return next((FIXTURES / "tf" / name).rglob("*.xplane.pb"))


@pytest.fixture(scope="module")
def two_host_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One TensorFlow run with two hosts: the slow pipeline (vm) and the optimized one (w1)."""
    run = tmp_path_factory.mktemp("logdir") / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    shutil.copy(_tf_file("ctl"), run / "vm.xplane.pb")
    shutil.copy(_tf_file("ctl_opt"), run / "w1.xplane.pb")
    return run


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two PyTorch rank files of one job."""
    run = tmp_path_factory.mktemp("ranks")
    for rank in (0, 1):
        shutil.copy(
            FIXTURES / "kineto/v100_training_with_memory.json.gz",
            run / f"rank{rank}.17.pt.trace.json.gz",
        )
    return run


def test_pod_viewer_single_host_matches_xprof() -> None:
    data = output.to_json(get_tool("pod_viewer").build(_ctx(_tf_file("ctl").parent)))
    ref = json.loads((FIXTURES / "tf/ctl/xprof_reference/pod_viewer.json").read_text())
    ref_steps = [s["podStatsPerCore"]["1"] for s in ref["podStatsSequence"]["podStatsMap"]]
    by_duration = {round(s["totalDurationUs"], 3): s for s in ref_steps}
    names = {e["name"]: str(e["id"]) for e in ref["stepBreakdownEvents"]}
    labels = {c["key"]: c["label"] for c in data["categories"]}
    assert (
        len(data["steps"]) == 4
    )  # XProf lists 6; stepscope drops the first and last as its overview does
    for step in data["steps"]:
        [w] = step["workers"]
        xprof = by_duration[round(w["duration_ms"] * 1000, 3)]
        for key, ms in w["breakdown_ms"].items():
            if key == "collective_wait":  # not an XProf category; none in this profile
                assert ms == 0
                continue
            label = {"Device collectives": "Device collective communication"}.get(
                labels[key], labels[key]
            )
            assert ms * 1000 == pytest.approx(xprof["stepBreakdownUs"][names[label]], abs=0.01)
        assert w["bottleneck"] == "input" and not w["is_slowest"]  # one worker: none slowest
    assert {s["slowest_worker"] for s in data["steps"]} == {""}


def test_pod_viewer_two_hosts(two_host_run: Path) -> None:
    ctx = _ctx(two_host_run, ALL_HOSTS)
    assert ctx.hosts == ["vm", "w1"]
    spec = get_tool("pod_viewer")
    assert spec.available(ctx)
    data = output.to_json(spec.build(ctx))
    assert [w["host"] for w in data["workers"]] == ["vm", "w1"]
    assert data["steps"]
    for step in data["steps"]:
        present = [w for w in step["workers"] if w]
        assert len(present) == 2
        slowest = max(present, key=lambda w: w["duration_ms"])
        assert step["slowest_worker"] == slowest["host"] == "vm"  # the unoptimized pipeline
        assert sum(w["is_slowest"] for w in present) == 1
        assert step["spread_ms"] == pytest.approx(
            abs(present[0]["duration_ms"] - present[1]["duration_ms"]), abs=1e-6
        )
        for w in present:
            assert sum(w["breakdown_ms"].values()) == pytest.approx(w["duration_ms"], abs=1e-3)
    assert data["workers"][0]["slowest_in_steps"] == len(data["steps"])
    rows = list(csv.DictReader(io.StringIO(output.to_csv(spec.build(ctx)))))
    assert len(rows) == 2 * len(data["steps"]) and {r["host"] for r in rows} == {"vm", "w1"}


def test_pod_viewer_even_workers_have_no_slowest(tmp_path: Path) -> None:
    # the same profile as two hosts: every step's spread is 0, so no worker is the slowest
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    for host in ("a", "b"):
        shutil.copy(_tf_file("ctl"), run / f"{host}.xplane.pb")
    data = output.to_json(get_tool("pod_viewer").build(_ctx(run, ALL_HOSTS)))
    assert len(data["steps"]) == 4
    for step in data["steps"]:
        assert step["spread_ms"] == 0 and step["slowest_worker"] == ""
        assert not any(w["is_slowest"] for w in step["workers"])
    assert [w["slowest_in_steps"] for w in data["workers"]] == [0, 0]


def test_the_slowest_worker_is_the_one_waited_for_not_the_longest_step() -> None:
    """Synchronous workers' steps last alike; one that waited 33 ms for the other in its
    collectives can still end its step later. The slowest is the one it waited for."""
    zero, bound = dict.fromkeys(CATEGORY_NAMES, 0), dict.fromkeys(BOUND_LIMITS, 0)
    cells = [[("s", 47_000_000, zero, bound), ("s", 46_000_000, zero, bound)]]
    wait = np.array([[33_000_000.0], [0.0]])
    steps, workers = pod_viewer._pod_steps(["r0", "r1"], [0], cells, wait)
    assert steps[0].slowest_worker == "r1" and [w.slowest_in_steps for w in workers] == [0, 1]
    assert steps[0].spread_ms == 1.0  # the steps' own spread, as before
    steps, _ = pod_viewer._pod_steps(["r0", "r1"], [0], cells)  # no collectives: step time
    assert steps[0].slowest_worker == "r0"


@pytest.mark.integration  # parses a 3 MB Kineto trace per rank
def test_pod_viewer_two_ranks(two_rank_run: Path) -> None:
    data = output.to_json(get_tool("pod_viewer").build(_ctx(two_rank_run, ALL_HOSTS)))
    assert [w["host"] for w in data["workers"]] == ["rank0", "rank1"]
    assert len(data["steps"]) == 5 and data["step_source"] == "profiler_step"
    first = data["steps"][0]["workers"]
    assert first[0]["duration_ms"] == first[1]["duration_ms"]  # the same file twice
    assert first[0]["breakdown_ms"]["device_collectives"] > 0


def test_tf_data_tool_names_the_slow_map(two_host_run: Path) -> None:
    spec = get_tool("tf_data_bottleneck_analysis")
    ctx = _ctx(two_host_run, ALL_HOSTS)
    assert spec.available(ctx)
    data = json.loads(json.dumps(output.to_json(spec.build(ctx))))
    top = data["analyses"][0]
    assert top["host"] == "vm" and top["bottleneck_iterator"] == "Map"
    assert "'Map'" in data["conclusion"] and "num_parallel_calls" in top["suggestion"]
    graph = {n["name"]: n for n in top["graph"]}
    assert graph["Map"]["is_bottleneck"] and graph["Map"]["on_critical_path"]
    assert graph["Map"]["calls"] == 32 and graph["Map"]["dataset"] == "MapDataset:1"
    assert graph["Map"]["long_name_explained"].startswith("Map, read by BatchV2")
    assert graph["BatchV2"]["id"] == graph["Map"]["parent_id"]
    assert [s["host"] for s in data["summary"]] == ["vm", "w1"]  # most input-bound host first
    assert data["summary"][0]["host_input_percent"] == pytest.approx(83.2, abs=0.05)  # as XProf
    assert data["conclusion"].startswith("The most input-bound host is vm")
    assert data["summary"][0]["slow_calls"] == 6
    rows = list(csv.DictReader(io.StringIO(output.to_csv(spec.build(ctx)))))
    assert rows[0]["bottleneck_iterator"] == "Map" and rows[1]["host"] == "w1"


def test_tf_data_tool_not_available_without_pipelines() -> None:
    assert not get_tool("tf_data_bottleneck_analysis").available(
        _ctx(FIXTURES / "kineto/a100_triton_tiny.json.gz")
    )


@pytest.mark.integration  # the same two ranks
def test_diagnostics_tool_on_two_ranks(two_rank_run: Path) -> None:
    spec = get_tool("diagnostics")
    ctx = _ctx(two_rank_run, ALL_HOSTS, link_bandwidth_gbps="150")
    data = json.loads(json.dumps(output.to_json(spec.build(ctx))))
    ids = {(f["id"], f["host"]) for f in data["findings"]}
    # each finding once for both ranks (it was repeated per rank), naming them
    for check in ("kernel_launch_bound", "collectives", "excessive_copies"):
        [merged] = [f for f in data["findings"] if f["id"] == check]
        assert (check, "") in ids and merged["metrics"]["hosts"] == "rank0, rank1"
        assert merged["summary"].startswith("On 2 of 2 hosts (worst: rank")
    assert {c["id"] for c in data["checks"]} >= {f["id"] for f in data["findings"]}
    severities = [f["severity"] for f in data["findings"]]
    assert severities == sorted(severities, key=["high", "medium", "low"].index)
    launch = next(f for f in data["findings"] if f["id"] == "kernel_launch_bound")
    assert launch["steps"] and launch["events"][0]["count"] > 0 and launch["time_ms"] > 0
    collective = next(f for f in data["findings"] if f["id"] == "collectives")
    assert collective["metrics"]["link_gbps"] == 150
    rows = list(csv.DictReader(io.StringIO(output.to_csv(spec.build(ctx)))))
    assert len(rows) == len(data["findings"]) and rows[0]["fix"]


def test_findings_for_the_overview_are_cached() -> None:
    ctx = _ctx(FIXTURES / "kineto/b200_vllm_fp8_rank0.json.gz")
    first = findings(ctx)
    assert findings(ctx) is first  # one computation shared by the overview and the tool
    assert any(f.id == "kernel_launch_bound" for f in first)


def test_cpu_only_run_gets_the_host_findings_the_overview_states() -> None:
    # XProf and the overview call this CPU run 83% input-bound: diagnostics must say so too.
    ctx = _ctx(_tf_file("ctl").parent)
    findings = output.to_json(get_tool("diagnostics").build(ctx))["findings"]
    overview = output.to_json(get_tool("overview_page").build(ctx))
    assert overview["input_bound"]["classification"] == "high"
    [finding] = findings
    assert finding["id"] == "input_bound" and finding["severity"] == "high"
    assert f"{overview['input_bound']['percent']:.1f}% of the step time" in finding["summary"]
    assert finding["events"][0]["name"] == "IteratorGetNextOp::DoCompute"


def test_pod_viewer_csv_has_one_column_per_category() -> None:
    from dataclasses import fields

    from stepscope.stats import CATEGORY_NAMES
    from stepscope.tools.pod_viewer import CsvRow

    names = [f.name for f in fields(CsvRow)][6:]
    assert names[: len(CATEGORY_NAMES)] == [f"{c}_ms" for c in CATEGORY_NAMES]
    # then what bounds the step, as the Ranks table (decision 416)
    assert names[len(CATEGORY_NAMES) :] == [f"bound_{k}_ms" for k in BOUND_LIMITS]
