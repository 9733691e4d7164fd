"""kernel_stats and memory_profile tools: JSON/CSV shapes, availability, multi-host merge."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.gpu_fixtures import FIXTURES

STORE = ProfileStore(use_cache=False)


def _ctx(path: Path | str, host: str | None = None) -> ToolContext:
    run = open_run(str(path))
    return ToolContext(run, host or run.host_names[0], STORE)


def test_kernel_stats_json_and_csv() -> None:
    spec = get_tool("kernel_stats")
    ctx = _ctx(FIXTURES / "kineto/h100_bert_small_inference.json.gz")
    assert spec.available(ctx) and "csv" in spec.formats
    result = spec.build(ctx)
    data = json.loads(json.dumps(output.to_json(result)))
    assert data["summary"]["kernel_count"] == 60
    rows = data["rows"]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["total_duration_us"] >= rows[-1]["total_duration_us"]
    first = rows[0]
    assert set(first) == set(data["columns"])
    assert first["avg_duration_us"] == pytest.approx(
        first["total_duration_us"] / first["occurrences"], abs=1e-3
    )
    assert first["min_duration_us"] <= first["avg_duration_us"] <= first["max_duration_us"]
    assert len(first["block_dim"].split(",")) == 3
    pie = data["top_kernels"]
    assert sum(s["fraction_pct"] for s in pie) == pytest.approx(100, abs=0.1)
    table = list(csv.DictReader(io.StringIO(output.to_csv(result))))
    assert len(table) == len(rows) and table[0]["kernel_name"] == first["kernel_name"]


def test_kernel_stats_not_available_without_gpu() -> None:
    spec = get_tool("kernel_stats")
    assert not spec.available(_ctx(FIXTURES / "kineto/cpu_only_gloo_rank34.json.gz"))
    assert not spec.available(_ctx(next((FIXTURES / "tf/ctl").rglob("*.xplane.pb"))))


def test_kernel_stats_all_hosts_merge(tmp_path: Path) -> None:
    for rank in (0, 1):
        shutil.copy(
            FIXTURES / "kineto/h100_bert_small_inference.json.gz",
            tmp_path / f"rank{rank}.1.pt.trace.json.gz",
        )
    ctx = _ctx(tmp_path, ALL_HOSTS)
    assert len(ctx.hosts) == 2
    data = output.to_json(get_tool("kernel_stats").build(ctx))
    single = output.to_json(get_tool("kernel_stats").build(_ctx(tmp_path, "rank0")))
    assert data["summary"]["kernel_count"] == 2 * single["summary"]["kernel_count"]
    assert len(data["rows"]) == len(single["rows"])
    assert data["rows"][0]["occurrences"] == 2 * single["rows"][0]["occurrences"]


def test_memory_profile_tool_on_ctl() -> None:
    spec = get_tool("memory_profile")
    ctx = _ctx(next((FIXTURES / "tf/ctl").rglob("*.xplane.pb")).parent)
    assert spec.available(ctx)
    data = json.loads(json.dumps(output.to_json(spec.build(ctx))))
    [memory] = data["memories"]
    assert memory["memory_id"] == "mklcpu" and memory["host"] == "vm"
    summary = memory["summary"]
    assert summary["peak_usage_bytes"] == 8_699_904
    assert summary["memory_capacity_bytes"] == 25_276_502_016
    assert summary["peak_time_ms"] == pytest.approx(546.748565)
    assert summary["fragmentation_pct"] == pytest.approx(20.137)
    assert (summary["allocation_count"], summary["deallocation_count"]) == (60, 60)
    timeline = memory["timeline"]
    assert len(timeline["time_ms"]) == memory["timeline_points"] == 120
    assert {len(column) for column in timeline.values()} == {120}
    assert max(timeline["in_use_bytes"]) == summary["peak_usage_bytes"]
    assert timeline["data_type"][0] == "float" and timeline["op_name"][0]
    live = memory["live_at_peak"]
    assert live[0]["op_name"] == "unused preallocated device memory" and live[0]["special"]
    assert (
        sum(r["allocation_bytes"] * r["occurrences"] for r in live)
        == summary["heap_allocated_bytes"]
    )
    rows = list(csv.DictReader(io.StringIO(output.to_csv(spec.build(ctx)))))
    assert len(rows) == len(live) and rows[1]["op_name"] == live[1]["op_name"]


def test_memory_profile_tool_on_pytorch() -> None:
    ctx = _ctx(FIXTURES / "kineto/v100_training_with_memory.json.gz")
    data = output.to_json(get_tool("memory_profile").build(ctx))
    ids = [m["memory_id"] for m in data["memories"]]
    assert ids == ["GPU_1_bfc", "cpu"]
    gpu = data["memories"][0]
    assert gpu["terms"] == "pytorch"
    assert gpu["snapshot_count"] > 1000 and gpu["timeline_points"] == 1000
    summary, timeline = gpu["summary"], gpu["timeline"]
    # PyTorch's terms: allocated (live tensors) and reserved (held by the caching allocator);
    # nothing the trace does not record (no stack, fragmentation, data types, shapes).
    assert set(timeline) == {
        "time_ms",
        "allocated_bytes",
        "reserved_bytes",
        "activity",
        "bytes",
        "op_name",
        "step",
    }
    assert not {"stack_reserved_bytes", "fragmentation_pct", "heap_allocated_bytes"} & set(summary)
    assert max(timeline["reserved_bytes"]) == summary["peak_reserved_bytes"]
    assert summary["peak_allocated_bytes"] <= summary["peak_reserved_bytes"]
    assert all(
        a <= r for a, r in zip(timeline["allocated_bytes"], timeline["reserved_bytes"], strict=True)
    )
    assert summary["device_memory_bytes"] == 34089730048  # V100-SXM2-32GB
    assert set(timeline["activity"]) == {"allocation", "free"}
    names = [r["op_name"] for r in gpu["live_at_peak"]]
    assert "cached by the allocator (reserved, not allocated)" in names
    assert not any(n in ("stack", "unused preallocated device memory") for n in names)
    assert "data_type" not in gpu["live_at_peak"][0]
    assert data["memories"][1]["summary"]["device_memory_bytes"] is None  # the CPU: unknown


def test_memory_profile_not_available_without_memory_events() -> None:
    assert not get_tool("memory_profile").available(
        _ctx(FIXTURES / "kineto/a100_triton_tiny.json.gz")
    )
