"""op_profile, hlo_stats and roofline_model at ALL_HOSTS aggregate every host's programs (and
say which hosts); memory_viewer and graph_viewer ask for one host. Two hosts: the JAX GPU
fixture copied under two names, fanned out per host as the CLI does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.executor import InlineExecutor
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools.registry import ToolUsageError, get_tool
from tests.support.gpu_fixtures import FIXTURES
from tests.support.pod import tool_json

FILE = FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb"


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("logs") / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    for host in ("worker-a", "worker-b"):
        shutil.copy(FILE, run / f"{host}.xplane.pb")
    return run


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _one_host(run: Path, tool: str, cache: Path) -> dict[str, Any]:
    from stepscope.tools import output
    from stepscope.tools.context import ProfileStore, ToolContext

    store = ProfileStore(use_cache=True, cache_dir=cache)
    ctx = ToolContext(open_run(str(run)), "worker-a", store)
    data: dict[str, Any] = json.loads(json.dumps(output.to_json(get_tool(tool).build(ctx))))
    return data


def test_hlo_stats_at_all_hosts_has_every_hosts_rows(two_hosts: Path, cache: Path) -> None:
    one = _one_host(two_hosts, "hlo_stats", cache)
    both = tool_json(two_hosts, "hlo_stats", cache, InlineExecutor())
    assert one["summary"]["hosts"] == ["worker-a"]
    assert both["summary"]["hosts"] == ["worker-a", "worker-b"]
    assert len(both["rows"]) == 2 * len(one["rows"]) == 40
    assert {r["host"] for r in both["rows"]} == {"worker-a", "worker-b"}
    for key in ("total_time_us", "total_gflops", "total_bytes_accessed", "device_idle_us"):
        assert both["summary"][key] == pytest.approx(2 * one["summary"][key])
    assert both["rows"][-1]["cumulative_self_time_percent"] == pytest.approx(100.0)


def test_op_profile_at_all_hosts_has_a_program_per_host(two_hosts: Path, cache: Path) -> None:
    one = _one_host(two_hosts, "op_profile", cache)
    both = tool_json(two_hosts, "op_profile", cache, InlineExecutor())
    assert both["hosts"] == ["worker-a", "worker-b"]
    programs = [c["name"] for c in both["by_program"]["children"] if c["kind"] == "program"]
    assert sorted(programs) == ["worker-a: jit_loss_fn(17)", "worker-b: jit_loss_fn(17)"]
    for key in ("time_us", "gflops", "bytes_accessed"):
        assert both["by_program"][key] == pytest.approx(2 * one["by_program"][key])
    # categories hold both hosts' ops, each op naming its host
    custom = next(c for c in both["by_category"]["children"] if c["name"] == "custom fusion")
    assert {op["host"] for op in custom["children"]} == {"worker-a", "worker-b"}


def test_roofline_at_all_hosts_has_each_hosts_points(two_hosts: Path, cache: Path) -> None:
    one = _one_host(two_hosts, "roofline_model", cache)
    both = tool_json(two_hosts, "roofline_model", cache, InlineExecutor())
    assert both["hosts"] == ["worker-a", "worker-b"]
    assert len(both["points"]) == 2 * len(one["points"])
    per_host = {h: [p for p in both["points"] if p["host"] == h] for h in both["hosts"]}
    assert [p["operation"] for p in per_host["worker-b"]] == [p["operation"] for p in one["points"]]


@pytest.mark.parametrize("tool", ["memory_viewer", "graph_viewer"])
def test_one_program_tools_ask_for_a_host(two_hosts: Path, tool: str) -> None:
    run = open_run(str(two_hosts))
    with pytest.raises(ToolUsageError, match="one host at a time; pick one of worker-a, worker-b"):
        get_tool(tool).resolve_host(run, ALL_HOSTS)
