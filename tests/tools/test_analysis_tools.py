"""overview_page, input_pipeline_analyzer and op_stats through the registry, the context
(one host and ALL_HOSTS) and the CLI (`stepscope tool`, `stepscope report`)."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.model import ALL_HOSTS, Run, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.analysis import FIXTURES, xprof_summary

OVERVIEW_KEYS = {
    "steps",
    "step_time_ms",
    "breakdown_ms",
    "input_bound",
    "step_source",
    "top_ops",
    "run_environment",
    "recommendation",
}
CATEGORIES = {
    "input",
    "output",
    "kernel_launch",
    "host_compute",
    "collective_wait",
    "device_to_device",
    "device_collectives",
    "device_compute",
    "compilation",
    "other",
}


@cache
def _store() -> ProfileStore:
    return ProfileStore(use_cache=False)  # one store for the session: profiles parsed once


def context(path: Path, host: str | None = None, **options: str) -> ToolContext:
    run = open_run(str(path))
    return ToolContext(run, host or run.host_names[0], _store(), dict(options))


def tool_json(name: str, ctx: ToolContext) -> dict:  # type: ignore[type-arg]
    return output.to_json(get_tool(name).build(ctx))


def test_overview_page_json_on_ctl() -> None:
    data = tool_json("overview_page", context(FIXTURES / "tf" / "ctl"))
    assert set(data) >= OVERVIEW_KEYS
    assert set(data["breakdown_ms"]) == CATEGORIES
    assert data["step_source"] == "marker"
    expected = xprof_summary("ctl")
    assert len(data["steps"]) == expected.steps
    step = data["steps"][0]
    assert set(step) >= {"step", "start_ns", "duration_ns", "breakdown_ns"}
    assert sum(step["breakdown_ns"].values()) == step["duration_ns"]
    assert set(data["step_time_ms"]) == {"avg", "stddev", "min", "max"}
    assert data["step_time_ms"]["avg"] == pytest.approx(expected.avg_ms, rel=0.02)
    assert data["input_bound"]["classification"] == "high"
    assert data["recommendation"]["bottleneck"] == "input"
    assert len(data["top_ops"]) == 10 and data["top_ops"][0]["side"] == "host"
    assert data["run_environment"]["device_type"] == "CPU"
    assert data["run_environment"]["framework"] == "tensorflow"


def test_input_pipeline_analyzer_matches_xprof_host_breakdown() -> None:
    reference = json.loads(
        (FIXTURES / "tf" / "ctl" / "xprof_reference" / "input_pipeline_analyzer.json").read_text()
    )
    xprof_ms = float(reference[2]["p"]["preprocessing_us"]) / 1e3
    data = tool_json("input_pipeline_analyzer", context(FIXTURES / "tf" / "ctl"))
    assert data["host_breakdown_ms"]["preprocessing"] == pytest.approx(xprof_ms, abs=1e-3)
    assert data["input_ops"][0]["op"] == "Iterator::Root::ForeverRepeat[0]::BatchV2::Map"
    assert data["input_bound"]["classification"] == "high"
    assert len(data["steps"]) == 4 and data["steps"][0]["input_ns"] > 0
    assert data["pipelines"] and data["pipelines"][0]["bottleneck"].endswith("::Map")
    assert data["recommendations"]


def test_op_stats_rows_idle_and_csv() -> None:
    ctx = context(FIXTURES / "tf" / "ctl")
    plain = get_tool("op_stats").build(ctx)
    data = output.to_json(plain)
    assert {r["side"] for r in data["rows"]} == {"host"}
    assert data["rows"][0]["name"] == "Iterator::Root::ForeverRepeat[0]::BatchV2::Map"
    assert data["rows"][-1]["cumulative_self_time_percent"] == pytest.approx(100.0, abs=0.01)
    assert set(data["pie_charts"]) == {"host_op", "host_op_type", "device_op", "device_op_type"}
    idle = get_tool("op_stats").build(context(FIXTURES / "tf" / "ctl", include_idle="true"))
    assert output.to_json(idle)["rows"][0]["name"] == "IDLE"  # as XProf: idle is the biggest row
    csv = output.to_csv(plain).splitlines()
    assert csv[0].startswith("rank,side,type,name,occurrences,total_time_us")
    assert len(csv) == len(data["rows"]) + 1


def test_gpu_profile_through_the_tools() -> None:
    ctx = context(FIXTURES / "kineto" / "a100_nccl_rank0.json.gz")
    overview = tool_json("overview_page", ctx)
    assert overview["step_source"] == "profiler_step"
    assert overview["run_environment"]["device_type"] == "GPU"
    assert 0 < overview["gpu_utilization"]["mean"] <= 100
    assert overview["precision"] is not None
    assert overview["top_ops"][0]["side"] == "device"
    assert overview["breakdown_ms"]["device_collectives"] > 0
    sides = {r["side"] for r in tool_json("op_stats", ctx)["rows"]}
    assert sides == {"host", "device"}


def _two_host_run(tmp_path: Path) -> Run:
    session = tmp_path / "plugins" / "profile" / "run1"
    session.mkdir(parents=True)
    source = next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb"))
    for host in ("worker0", "worker1"):
        shutil.copy(source, session / f"{host}.xplane.pb")
    return open_run(str(session))


def test_all_hosts(tmp_path: Path) -> None:
    run = _two_host_run(tmp_path)
    store = ProfileStore(use_cache=False)
    one = output.to_json(get_tool("overview_page").build(ToolContext(run, "worker0", store)))
    both = output.to_json(get_tool("overview_page").build(ToolContext(run, ALL_HOSTS, store)))
    assert both["run_environment"]["hosts"] == ["worker0", "worker1"]
    assert [s["duration_ns"] for s in both["steps"]] == [s["duration_ns"] for s in one["steps"]]
    assert both["input_bound"] == one["input_bound"]
    ops_one = output.to_json(get_tool("op_stats").build(ToolContext(run, "worker0", store)))["rows"]
    ops_all = output.to_json(get_tool("op_stats").build(ToolContext(run, ALL_HOSTS, store)))["rows"]
    assert ops_all[0]["occurrences"] == 2 * ops_one[0]["occurrences"]
    ipa = output.to_json(
        get_tool("input_pipeline_analyzer").build(ToolContext(run, ALL_HOSTS, store))
    )
    assert len(ipa["pipelines"]) == 2


def test_cli_tool_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = str(next((FIXTURES / "tf" / "ctl_opt").rglob("*.xplane.pb")).parent)
    assert main(["tool", run_dir, "overview_page", "--json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= OVERVIEW_KEYS and data["input_bound"]["classification"] == "potential"
    assert main(["tool", run_dir, "op_stats", "--csv", "--no-cache"]) == 0
    assert capsys.readouterr().out.startswith("rank,side,type,name")
    assert main(["tool", run_dir, "overview_page", "--csv", "--no-cache"]) == 2
    assert "no CSV output" in capsys.readouterr().err
    assert main(["tool", run_dir, "overview_page", "-o", "step_source=nope", "--no-cache"]) == 2
    assert "must be one of auto, marker" in capsys.readouterr().err
    assert main(["tool", run_dir, "overview_page", "-o", "step_source=inferred", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["step_source"] == "inferred"
    assert main(["report", run_dir, "--no-cache"]) == 0
    report = capsys.readouterr().out
    for section in (
        "Steps: 4",
        "Step-time breakdown",
        "POTENTIALLY input-bound",
        "Top 10 host ops",
        "Recommendation",
        "█",
    ):
        assert section in report
    two = _two_host_run(tmp_path)
    assert main(["tool", two.path, "overview_page", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["host"] == ALL_HOSTS


def test_a_pipeline_that_prefetches_is_not_told_to_add_prefetch() -> None:
    # ctl_opt ends in prefetch(AUTOTUNE); its bottleneck is that Prefetch's empty buffer.
    ctx = context(FIXTURES / "tf" / "ctl_opt")
    pipeline = tool_json("input_pipeline_analyzer", ctx)
    overview = tool_json("overview_page", ctx)
    texts = [*pipeline["recommendations"], *(p["advice"] for p in pipeline["pipelines"])]
    texts += [overview["recommendation"]["statement"], *overview["recommendation"]["details"]]
    assert not [t for t in texts if "Add prefetch" in t or "and prefetch(" in t]
    assert "already prefetches" in pipeline["recommendations"][0]
