"""`stepscope.Analysis`: the public way to a tool's result, the same one the CLI prints."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

import stepscope
from stepscope.cli.main import main
from stepscope.errors import StepscopeError
from stepscope.logdir import ALL_HOSTS
from stepscope.tools import output
from stepscope.tools.registry import ToolUsageError
from tests.support.fixtures import FIXTURES, ctl_run_dir, tf_xplane


@pytest.fixture(scope="module")
def ctl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ctl_run_dir(tmp_path_factory.mktemp("ctl"))


def _cli_json(*argv: str) -> object:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["tool", *argv, "--json", "--no-cache", "-q"])
    assert status in (0, 3)
    return json.loads(out.getvalue())


def test_a_tool_is_its_declared_result_and_the_cli_prints_its_json(ctl: Path) -> None:
    analysis = stepscope.Analysis(ctl, use_cache=False)
    overview = analysis.tool("overview_page")
    assert type(overview).__name__ == "OverviewPage" and len(overview.steps) == 4
    assert analysis.json("overview_page") == _cli_json(str(ctl), "overview_page")
    assert analysis.json("op_stats", include_idle=True) == _cli_json(
        str(ctl), "op_stats", "--option", "include_idle=true"
    )
    assert analysis.csv("op_stats").startswith("rank,side,type,name")


def test_options_and_tools_are_checked(ctl: Path) -> None:
    analysis = stepscope.Analysis(ctl, use_cache=False)
    with pytest.raises(ToolUsageError, match="no option 'nope'"):
        analysis.tool("op_stats", nope=1)
    with pytest.raises(ToolUsageError, match="must be one of"):
        analysis.tool("op_stats", include_idle="maybe")
    with pytest.raises(StepscopeError, match=r"kernel_stats has nothing to show.*on a GPU"):
        analysis.tool("kernel_stats")  # a CPU-only profile
    assert not analysis.available("kernel_stats") and analysis.available("overview_page")
    with pytest.raises(StepscopeError, match="has no CSV output"):
        analysis.csv("overview_page")


def test_a_tools_extra_routes_answer_as_the_server_does(ctl: Path) -> None:
    """`Analysis.endpoint`: the trace viewer's steps and window, as `stepscope serve` sends
    them (the server asks the same method); an unknown route or a bad parameter is refused."""
    analysis = stepscope.Analysis(ctl, use_cache=False)
    body, kind = analysis.endpoint("trace_viewer", "steps")
    assert kind.startswith("application/json") and json.loads(body)["number"] == [6, 7, 8, 9]
    window, kind = analysis.endpoint("trace_viewer", "window", params={"res": "100"})
    assert kind == "application/x-stepscope-trace" and window
    with pytest.raises(StepscopeError, match=r"no endpoint 'nope'.*window"):
        analysis.endpoint("trace_viewer", "nope")
    with pytest.raises(ValueError, match="res"):
        analysis.endpoint("trace_viewer", "window", params={"res": "many"})


def test_several_hosts_fan_out_and_failed_hosts_are_listed(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    for host in ("ctl", "ctl_opt"):
        shutil.copy(tf_xplane(host), run / f"{host}.xplane.pb")
    (run / "broken.xplane.pb").write_bytes(b"\x0a\xff\xff not an xspace")
    analysis = stepscope.Analysis(run, use_cache=False)
    assert analysis.hosts == ["broken", "ctl", "ctl_opt"]
    pod = analysis.tool("pod_viewer")
    assert sorted(analysis.failed()) == ["broken"]
    data = analysis.json("pod_viewer")
    assert [e["host"] for e in data["host_errors"]] == ["broken"]
    assert data == _cli_json(str(run), "pod_viewer")
    assert list(pod.heatmap.hosts) == ["ctl", "ctl_opt"]
    assert analysis.context("overview_page").host == ALL_HOSTS
    fresh = stepscope.Analysis(run, use_cache=False)
    assert [h for h, _ in fresh.profiles()] == ["ctl", "ctl_opt"]
    assert sorted(fresh.failed()) == ["broken"]


def test_every_hosts_columns(ctl: Path) -> None:
    analysis = stepscope.Analysis(ctl, use_cache=False)
    ((host, profile),) = analysis.profiles()
    assert host == "h" and profile.n_events > 0
    assert analysis.profile() is profile  # one store: opened once


def test_a_host_read_in_part_says_so_in_the_json(tmp_path: Path) -> None:
    import gzip

    data = gzip.decompress((FIXTURES / "kineto" / "a100_triton_tiny.json.gz").read_bytes())
    cut = tmp_path / "cut.pt.trace.json"
    cut.write_bytes(data[: len(data) * 2 // 3])
    analysis = stepscope.Analysis(cut, use_cache=False)
    data_json = analysis.json("overview_page")
    assert [p["host"] for p in data_json["partial_reads"]] == ["cut"]
    assert data_json == _cli_json(str(cut), "overview_page")
    assert "partial_reads" not in output.to_json(analysis.tool("overview_page"))


def test_steps_are_the_step_database_every_tool_reads(ctl: Path) -> None:
    from stepscope.stats.steps.breakdown import build_step_db

    analysis = stepscope.Analysis(ctl, use_cache=False)
    steps = analysis.steps()
    assert steps.step_num.tolist() == build_step_db(analysis.profile()).step_num.tolist()
    overview = analysis.tool("overview_page")
    assert [s.duration_ns for s in overview.steps] == steps.dur_ns.tolist()
    assert analysis.steps(step_source="auto") is steps  # computed once, shared


def test_a_missing_input_says_how_to_record_it() -> None:
    """A PyTorch trace recorded without allocations: the memory profile says which setting
    records them, and how to ask stepscope's capture for it (decision 960), not only that
    something is missing."""
    analysis = stepscope.Analysis(FIXTURES / "kineto" / "a100_triton_tiny.json.gz", use_cache=False)
    with pytest.raises(StepscopeError, match=r"memory_profile .*profile_memory=True") as said:
        analysis.tool("memory_profile")
    assert "STEPSCOPE_TORCH_PROFILE_MEMORY=1" in str(said.value)
    assert "configure(torch=stepscope.capture.bridges.TorchSettings(profile_memory=True))" in str(
        said.value
    )


def _host_run(tmp_path: Path, names: tuple[str, ...]) -> Path:
    """A one-host run whose main thread ran ``names`` (what `framework_of` reads)."""
    from stepscope.xspace import XSpaceBuilder

    builder = XSpaceBuilder(hostname="h")
    line = builder.plane("/host:CPU").line(1, "main", timestamp_ns=0)
    for k, name in enumerate(names):
        line.event(name, 1_000 + 10_000 * k, 5_000)
    path = tmp_path / "plugins" / "profile" / "r1" / "h.xplane.pb"
    path.parent.mkdir(parents=True)
    path.write_bytes(builder.build().SerializeToString())
    return path.parent


@pytest.mark.parametrize(
    ("events", "said", "torch"),
    [
        (("EagerExecute", "EagerLocalExecute: MatMul"), "TensorFlow's profiler records", False),
        (("PjitFunction(step)",), "JAX's profiler records", False),
        (("aten::mm",), "STEPSCOPE_TORCH_PROFILE_MEMORY=1, or call", True),
        (("my_step",), "PyTorch records them with profile_memory=True", True),
    ],
)
def test_a_missing_input_is_said_for_the_runs_framework(
    tmp_path: Path, events: tuple[str, ...], said: str, torch: bool
) -> None:
    """A JAX or TensorFlow run without allocator events was told PyTorch's settings (decision
    960 left it): the memory profile says what records them in the run's own framework."""
    run = _host_run(tmp_path, events)
    with pytest.raises(StepscopeError, match="memory_profile has nothing to show") as error:
        stepscope.Analysis(run, use_cache=False).tool("memory_profile")
    assert said in str(error.value)
    assert ("torch" in str(error.value).lower()) == torch


def test_a_cpu_jax_run_is_pointed_at_the_memory_viewer() -> None:
    """The JAX fixture (CPU) has no allocator events; its memory viewer has its programs."""
    analysis = stepscope.Analysis(FIXTURES / "jax" / "cnn_cpu", use_cache=False)
    with pytest.raises(StepscopeError, match="CPU-only JAX run has none") as error:
        analysis.tool("memory_profile")
    assert "memory_viewer" in str(error.value) and analysis.available("memory_viewer")
    assert analysis.lacking("memory_profile") in str(error.value)
