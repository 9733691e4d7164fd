"""Kineto (PyTorch profiler) JSON -> XSpace: real GPU/CPU traces, schema variants, repairs.

Expected counts come from the raw JSON text (not from the importer's own parse), so the two
checks are independent. Each fixture is imported once per session, as every module opens it:
`stepscope`'s own route (`open_file`), shared through `tests.support.gpu_fixtures`; the XSpace
message (`kineto_to_xspace`) is made only for the tests that read it. That both routes give
the same profile is `tests/xspace/test_kineto_columns.py`'s (the large fixtures with the
integration tier).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.model import Profile
from stepscope.xspace import write_xspace
from stepscope.xspace.kineto import kineto_to_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.support.fixtures import FIXTURES
from tests.support.gpu_fixtures import fixture_profile

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

KINETO = sorted((FIXTURES / "kineto").glob("*.json.gz"))
GPU_TRACES = [p.name for p in KINETO if not p.name.startswith("cpu_only")]
KERNEL_DETAILS = re.compile(
    r"^regs:\d+ static_shared:\d+ dynamic_shared:\d+ grid:\d+,\d+,\d+ block:\d+,\d+,\d+ "
    r"occ_pct:[\d.]+$"
)
MEMCPY_NAMES = ("MEMCPYHToD", "MEMCPYDToH", "MEMCPYDToD", "MEMCPYHToH")


@dataclass
class Imported:
    path: Path
    text: str  # the decompressed JSON, for independent counts
    profile: Profile  # as `stepscope` opens the file

    @cached_property
    def space(self) -> XSpace:
        return kineto_to_xspace(self.path)

    def count_category(self, *categories: str) -> int:
        return sum(self.text.count(f'"cat": "{c}"') for c in categories)

    def rows(self, category: str) -> np.ndarray:
        """Event rows of a (normalised) Kineto category."""
        column = self.profile.stat("category")
        wanted = self.profile.strings.id_of(category)
        return np.flatnonzero(column.present & (column.value == wanted))

    def names(self, category: str) -> list[str]:
        return [self.profile.event_name(int(row)) for row in self.rows(category)]


class _Imports(dict[str, Imported]):
    """Fixture file name -> Imported, imported on first use."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def __missing__(self, name: str) -> Imported:
        path = self.folder / name
        text = gzip.decompress(path.read_bytes()).decode()
        item = self[name] = Imported(path, text, fixture_profile(f"kineto/{name}"))
        return item


@pytest.fixture(scope="session")
def kineto(fixtures_dir: Path) -> dict[str, Imported]:
    return _Imports(fixtures_dir / "kineto")


def test_fixture_list_is_complete() -> None:
    assert len(KINETO) == 9


@pytest.mark.parametrize("name", [p.name for p in KINETO])
def test_every_fixture_imports(kineto: dict[str, Imported], name: str) -> None:
    item = kineto[name]
    planes = [p.name for p in item.profile.planes]
    assert planes[0] == "/host:CPU" and planes[-1] == "Task Environment"
    assert [p.id for p in item.profile.planes] == list(range(len(planes)))
    assert item.profile.warnings == []  # real traces need no repair
    env = item.profile.plane_by_name("Task Environment")
    assert env is not None and env.stats["framework"] == "pytorch"
    start, stop = env.stats["profile_start_time"], env.stats["profile_stop_time"]
    first, last = item.profile.time_span_ns()
    assert isinstance(start, int) and isinstance(stop, int)
    assert start <= first < last <= stop
    # Every X event of the JSON is somewhere, except the profiler's own "Trace" span.
    x_events = item.text.count('"ph": "X"') - item.text.count('"cat": "Trace"')
    instants = item.text.count('"name": "[memory]"')
    assert item.profile.n_events == x_events + instants


@pytest.mark.parametrize("name", GPU_TRACES)
def test_gpu_planes_streams_and_kernels(kineto: dict[str, Imported], name: str) -> None:
    item = kineto[name]
    profile = item.profile
    devices = [p for p in profile.planes if p.name.startswith("/device:GPU:")]
    assert len(devices) == 1  # one rank, one GPU, though deviceProperties lists the node's
    stream_lines = [line for line in profile.lines if line.name.startswith("Stream #")]
    assert stream_lines and all(line.name == f"Stream #{line.id}" for line in stream_lines)
    kernel_lines = {profile.lines[int(profile.line[row])].name for row in item.rows("kernel")}
    assert kernel_lines <= {line.name for line in stream_lines}
    assert len(item.rows("kernel")) == item.count_category("kernel", "Kernel")
    assert devices[0].stats["core_count"] in (80, 108, 132, 148, 304)
    assert isinstance(devices[0].stats["memory_size"], int)
    assert isinstance(devices[0].stats["compute_cap_major"], int)


@pytest.mark.parametrize("name", GPU_TRACES)
def test_memcpy_names_and_kernel_details(kineto: dict[str, Imported], name: str) -> None:
    item = kineto[name]
    profile = item.profile
    memcpys = item.rows("gpu_memcpy")
    assert len(memcpys) == item.count_category("gpu_memcpy", "Memcpy")
    display = profile.display_name_ids()
    for row in memcpys:
        assert profile.event_name(int(row)).startswith(MEMCPY_NAMES)
        assert profile.strings[int(display[row])].startswith("Memcpy ")
    details = profile.stat("kernel_details")
    kernels = item.rows("kernel")
    for row in kernels[details.present[kernels]]:
        assert KERNEL_DETAILS.match(profile.strings[int(details.value[row])])
    correlation = profile.stat("correlation_id")
    assert correlation.present[kernels].all()


def test_kernel_details_and_time_match_the_json(kineto: dict[str, Imported]) -> None:
    item = kineto["a100_triton_tiny.json.gz"]
    (row,) = item.rows("kernel")
    stats = item.profile.event_stats(int(row))
    assert stats["kernel_details"] == (
        "regs:16 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:0"
    )
    assert stats["device_id"] == 0 and stats["stream"] == 7 and stats["correlation_id"] == 35
    # baseTimeNanoseconds + ts (2413669097444.592 us), exact to the nanosecond
    assert int(item.profile.start_ns[row]) == 1727743122000000000 + 2413669097444592
    assert int(item.profile.dur_ns[row]) == 1760
    (launch,) = item.rows("cuda_driver")
    assert item.profile.event_stats(int(launch))["correlation_id"] == 35


def test_memory_events_match_the_json(kineto: dict[str, Imported]) -> None:
    item = kineto["v100_training_with_memory.json.gz"]
    signs = Counter(m for m in re.findall(r'"Bytes": (-?)\d', item.text))
    names = Counter(item.names("cpu_instant_event"))
    assert names == {"MemoryAllocation": signs[""], "MemoryDeallocation": signs["-"]}
    profile = item.profile
    memory_line = next(line for line in profile.lines if line.name == "Memory")
    assert profile.planes[memory_line.plane].name == "/host:CPU"
    rows = item.rows("cpu_instant_event")
    # the column, not each of the 28,010 events' stats (0.43 s of CPU, the column 0.02 s)
    allocator = profile.stat("allocator_name")
    assert allocator.present[rows].all()
    allocators = {profile.strings[int(v)] for v in np.unique(allocator.value[rows])}
    assert allocators == {"GPU_1_bfc", "cpu"}
    # The first [memory] event of the file (ts 1669783687464300 us, no baseTimeNanoseconds):
    # Total Allocated 5435638784, Total Reserved 12782141440.
    (row,) = rows[profile.start_ns[rows] == 1669783687464300 * 1000]
    first = profile.event_stats(int(row))
    assert first["addr"] == 139926520725504
    assert first["bytes_allocated"] == 5435638784
    assert first["bytes_reserved"] == 12782141440 - 5435638784
    assert first["bytes_available"] == 34089730048 - 12782141440
    assert first["requested_bytes"] == first["allocation_bytes"] == 5242880
    assert first["device_id"] == 1
    assert profile.stat("tf_op").present[rows].mean() > 0.9


def test_2021_schema(kineto: dict[str, Imported]) -> None:
    item = kineto["v100_resnet50_training_2021schema.json.gz"]
    profile = item.profile
    assert [p.name for p in profile.planes] == ["/host:CPU", "/device:GPU:0", "Task Environment"]
    assert len(item.rows("kernel")) == item.text.count('"cat": "Kernel"') > 8000
    assert len(item.rows("cpu_op")) == item.text.count('"cat": "Operator"')
    assert len(item.rows("cuda_runtime")) == item.text.count('"cat": "Runtime"')
    stream7 = next(line for line in profile.lines if line.name == "Stream #7")
    assert stream7.id == 7 and stream7.event_count == 8772 + 312 + 12
    threads = {line.id: line.name for line in profile.lines if line.plane == 0}
    assert threads[25738] == "python"  # tid "25738" (a string) -> line id 25738
    steps = profile.stat("step_num")
    assert sorted(steps.value[steps.present].tolist()) == [5, 6, 7, 8, 9, 10]
    memory = Counter(item.names("cpu_instant_event"))
    assert memory == {"MemoryAllocation": 6420, "MemoryDeallocation": 6418}


def test_cpu_only_trace(kineto: dict[str, Imported]) -> None:
    item = kineto["cpu_only_gloo_rank34.json.gz"]
    assert [p.name for p in item.profile.planes] == ["/host:CPU", "Task Environment"]
    assert list(item.space.hostnames) == ["rank34"]
    host = item.profile.planes[0]
    assert (host.stats["rank"], host.stats["world_size"], host.stats["backend"]) == (
        34,
        300,
        "gloo",
    )
    assert "gloo:all_reduce" in item.names("user_annotation")


def test_nccl_args_flows_and_annotations(kineto: dict[str, Imported]) -> None:
    item = kineto["a100_nccl_rank0.json.gz"]
    profile = item.profile
    nccl = [int(r) for r in item.rows("kernel") if profile.event_name(int(r)).startswith("nccl")]
    assert nccl
    for row in nccl:
        stats = profile.event_stats(row)
        for key in ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype"):
            assert key in stats
    # fwdbwd: every flow binds an op at each end, with matching ids.
    producers, consumers = profile.stat("_p"), profile.stat("_c")
    assert producers.present.sum() == consumers.present.sum() == item.text.count('"fwdbwd", "bp"')
    assert set(producers.value[producers.present]) == set(consumers.value[consumers.present])
    assert set(profile.stat("_pt").value[producers.present]) == {0}
    # ac2g: each kernel's correlation id is a host launch's.
    correlation = profile.stat("correlation_id")
    on_host = profile.plane == 0
    host_ids = set(correlation.value[correlation.present & on_host].tolist())
    assert set(correlation.value[item.rows("kernel")].tolist()) <= host_ids
    annotation_lines = [line for line in profile.lines if line.name.startswith("GPU annotations")]
    assert sum(line.event_count for line in annotation_lines) == 30
    assert list(item.space.hostnames) == ["rank0"]


def test_amd_trace(kineto: dict[str, Imported]) -> None:
    item = kineto["mi300x_resnet_training_rank0.json.gz"]
    gpu = item.profile.plane_by_name("/device:GPU:2")
    assert gpu is not None
    assert gpu.stats["device_vendor"] == "AMD" and gpu.stats["core_count"] == 304
    assert "hipLaunchKernel" in item.names("cuda_runtime")
    assert set(item.names("gpu_memcpy")) == {"MEMCPYDToD"}


def test_profiler_steps_and_python_functions(kineto: dict[str, Imported]) -> None:
    item = kineto["h100_bert_small_inference.json.gz"]
    profile = item.profile
    steps = profile.stat("step_num")
    step_rows = np.flatnonzero(steps.present)
    assert {profile.event_name(int(r)) for r in step_rows} == {"ProfilerStep#6"}
    assert set(steps.value[step_rows].tolist()) == {6}
    # the host's ProfilerStep#N is a step root for XProf (decision 617), its GPU copy is not
    on_host = [
        not profile.planes[profile.lines[int(profile.line[r])].plane].is_device for r in step_rows
    ]
    assert [profile.event_stats(int(r)).get("_r") for r in step_rows] == [
        1 if host else None for host in on_host
    ]
    assert any(on_host) and not all(on_host)
    assert len(item.rows("python_function")) == item.count_category("python_function")
    assert {profile.lines[int(profile.line[r])].plane for r in item.rows("python_function")} == {0}


@pytest.mark.integration
def test_xprof_reads_imported_traces(kineto: dict[str, Imported], tmp_path: Path) -> None:
    """XProf 2.24 (where installed) finds the kernels and the GPU memory of a converted trace."""
    tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")
    item = kineto["h100_bert_small_inference.json.gz"]
    path = write_xspace(item.space, tmp_path / "plugins" / "profile" / "run" / "h.xplane.pb")

    def tool(name: str) -> Any:
        return json.loads(tool_data.xspace_to_tool_data([str(path)], name, {})[0])

    kernels = tool("kernel_stats")["rows"]
    assert kernels and all(row["c"][2]["v"] > 0 for row in kernels)  # registers per thread
    memory = tool("memory_profile")["memoryProfilePerAllocator"]["GPU_0_bfc"]["profileSummary"]
    assert memory["memoryCapacity"] == "85018279936"  # the H100's memory
    peak = memory["peakStats"]
    assert int(peak["stackReservedBytes"]) + int(peak["heapAllocatedBytes"]) == 121634816


@pytest.mark.integration
def test_xprof_finds_the_profiler_steps_of_an_imported_trace(
    kineto: dict[str, Imported], tmp_path: Path
) -> None:
    """XProf 2.24 (where installed) makes steps of the ProfilerStep#N of a converted trace:
    they carry `_r` (decision 617); without it its overview had no step."""
    tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")
    item = kineto["v100_training_with_memory.json.gz"]
    path = write_xspace(item.space, tmp_path / "plugins" / "profile" / "run" / "h.xplane.pb")
    overview = json.loads(tool_data.xspace_to_tool_data([str(path)], "overview_page", {})[0])
    tables = [t for t in overview if isinstance(t, dict) and "cols" in t]
    graph = next(t for t in tables if t["cols"] and t["cols"][0].get("id") == "stepnum")
    assert len(graph["rows"]) == 5  # the trace's ProfilerStep#2..#6
    analysis = next(
        t for t in overview if isinstance(t, dict) and "steptime_ms_average" in t.get("p", {})
    )
    assert float(analysis["p"]["steptime_ms_average"]) > 300  # its steps: 336-365 ms
