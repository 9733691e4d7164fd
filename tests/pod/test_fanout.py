"""ALL_HOSTS tools fanned out per host: same results as the in-process reduction, partial
failure per host, summaries cached by content, the driver never opening a profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.executor import InlineExecutor
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools._fanout import build_tool, prepare
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.pod.builders import cpu_pod, gpu_pod
from tests.support.pod import CPU_TOOLS, GPU_TOOLS, tool_json
from tests.support.runs import whole_folder

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def reference_json(run_dir: Path, tool: str, cache: Path) -> dict:
    """The tool computed the old way: every profile opened in this process, no fan-out."""
    store = ProfileStore(use_cache=True, cache_dir=cache)
    ctx = ToolContext(whole_folder(run_dir), ALL_HOSTS, store)
    return json.loads(json.dumps(output.to_json(get_tool(tool).build(ctx)), default=str))


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cpu_pod(tmp_path_factory.mktemp("cpu"), 6)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the module: each profile is converted once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gpu_pod(tmp_path_factory.mktemp("gpu"))


@pytest.mark.parametrize("tool", CPU_TOOLS)
def test_fanned_out_reduction_equals_the_in_process_result(
    cpu_run: Path, tool: str, tmp_path: Path
) -> None:
    fanned = tool_json(cpu_run, tool, tmp_path, InlineExecutor())
    assert fanned == reference_json(cpu_run, tool, tmp_path / "ref")
    assert "host_errors" not in fanned


@pytest.mark.integration  # converts two real GPU traces (about 15 s)
@pytest.mark.parametrize("tool", GPU_TOOLS)
def test_gpu_ranks_fanned_out_equal_the_in_process_result(
    gpu_run: Path, tool: str, cache: Path
) -> None:
    fanned = tool_json(gpu_run, tool, cache, InlineExecutor())
    assert fanned == reference_json(gpu_run, tool, cache)


def test_the_driver_never_opens_a_profile(cpu_run: Path, tmp_path: Path) -> None:
    store = ProfileStore(cache_dir=tmp_path, executor=InlineExecutor())
    ctx = ToolContext(open_run(str(cpu_run)), ALL_HOSTS, store)
    for tool in CPU_TOOLS:
        build_tool(ctx, get_tool(tool))
    opened: list[str] = []
    store.profile = lambda run, host: opened.append(host)  # type: ignore[method-assign,assignment,return-value]
    for tool in CPU_TOOLS:  # a second round reduces the seeded summaries only
        get_tool(tool).build(ctx)
    assert opened == []


def test_second_run_reads_every_summary_from_the_content_cache(
    cpu_run: Path, tmp_path: Path
) -> None:
    seen: list[tuple[str, str]] = []

    def progress(host: str, status: str, done: int, total: int) -> None:
        seen.append((host, status))

    for _ in range(2):
        store = ProfileStore(cache_dir=tmp_path, executor=InlineExecutor(), host_progress=progress)
        prepare(ToolContext(open_run(str(cpu_run)), ALL_HOSTS, store), get_tool("pod_viewer"))
    first, second = seen[:6], seen[6:]
    assert {s for _, s in first} == {"done"} and {s for _, s in second} == {"cached"}


def test_results_from_stored_summaries_equal_fresh_ones(cpu_run: Path, tmp_path: Path) -> None:
    """Summaries are stored as data files (no pickle) that rebuild every intermediate."""
    fresh = {tool: tool_json(cpu_run, tool, tmp_path, InlineExecutor()) for tool in CPU_TOOLS}
    stored = sorted(p.suffix for p in (tmp_path / "summaries").rglob("*") if p.is_file())
    assert stored and set(stored) == {".npz"}
    statuses: list[str] = []
    for tool in CPU_TOOLS:
        store = ProfileStore(
            cache_dir=tmp_path,
            executor=InlineExecutor(),
            host_progress=lambda host, status, done, total: statuses.append(status),
        )
        ctx = ToolContext(open_run(str(cpu_run)), ALL_HOSTS, store)
        store.profile = lambda run, host: pytest.fail("opened a profile")  # type: ignore[method-assign]
        again = json.loads(json.dumps(output.to_json(build_tool(ctx, get_tool(tool))), default=str))
        assert again == fresh[tool], tool
    assert set(statuses) == {"cached"}


@pytest.mark.integration  # the same two GPU traces
def test_copied_ranks_keep_their_own_names(gpu_run: Path, cache: Path, tmp_path: Path) -> None:
    """Two ranks with identical bytes share nothing in the cache that names a host."""
    twin = tmp_path / "twin"
    twin.mkdir()
    data = (gpu_run / "rank1.pt.trace.json.gz").read_bytes()  # the one with memory events
    for rank in (0, 1):
        (twin / f"rank{rank}.pt.trace.json.gz").write_bytes(data)
    found = tool_json(twin, "memory_profile", cache, InlineExecutor())
    assert sorted({m["host"] for m in found["memories"]}) == ["rank0", "rank1"]


def test_one_corrupt_host_among_16(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = cpu_pod(tmp_path / "logs", 16, corrupt=(7,))
    for tool in ("overview_page", "pod_viewer", "op_stats", "diagnostics"):
        code = main(["tool", str(run), tool, "--workers", "0"])
        out, err = capsys.readouterr()
        assert code == 3, err  # partial
        data = json.loads(out)
        [error] = data["host_errors"]
        assert error["host"] == "host007" and "host007.xplane.pb" in error["error"]
        assert "not a valid XSpace" in error["error"] and "Traceback" not in err
        assert "1 host(s) left out" in err and "host007" in err
    assert main(["tool", str(run), "pod_viewer", "--workers", "0"]) == 3
    pod = json.loads(capsys.readouterr().out)
    assert len(pod["workers"]) == 15 and "host007" not in [w["host"] for w in pod["workers"]]


def test_every_host_failing_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = cpu_pod(tmp_path / "logs", 3, corrupt=(0, 1, 2))
    assert main(["tool", str(run), "overview_page", "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "all 3 hosts failed" in err and "Traceback" not in err


def test_a_failed_host_stays_failed_after_checks_that_do_not_open_it(tmp_path: Path) -> None:
    """The server lists tools (availability checks; op_stats' opens no file) while a page is
    computed: the corrupt host must stay left out of that page."""
    run = open_run(str(cpu_pod(tmp_path / "logs", 3, corrupt=(1,))))
    store = ProfileStore(cache_dir=tmp_path / "cache", executor=InlineExecutor())
    ctx = ToolContext(run, ALL_HOSTS, store)
    prepare(ctx, get_tool("overview_page"))
    prepare(ctx, get_tool("op_stats"), build=False)
    assert list(ctx.failed) == ["host001"] and ctx.hosts == ["host000", "host002"]
    found = output.to_json(build_tool(ctx, get_tool("overview_page")))
    assert [e["host"] for e in found["host_errors"]] == ["host001"]
