"""No roofline point above its roof: an op's FLOP rate is at most min(peak FLOP/s, intensity x
peak bandwidth), on the XLA fixture (XLA's cost model) and the PyTorch ones (estimates). A
point above it (more bytes per second than the memory moves: cache hits) is flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.model.runs import open_run
from stepscope.tools.context import ToolContext
from stepscope.tools.output import to_json
from stepscope.tools.registry import get_tool
from tests.support.fixtures import by_size
from tests.support.gpu_fixtures import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

UNDER_THE_ROOF = [
    FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb",
    FIXTURES / "kineto" / "h100_bert_small_inference.json.gz",
    FIXTURES / "kineto" / "h100_timesformer_inference.json.gz",
    FIXTURES / "kineto" / "b200_vllm_fp8_rank0.json.gz",
    FIXTURES / "kineto" / "mi300x_resnet_training_rank0.json.gz",
]


def _roofline(path: Path) -> dict[str, Any]:
    run = open_run(str(path))
    spec = get_tool("roofline_model")
    ctx = ToolContext(run, spec.resolve_host(run, None), options=spec.parse_options({}))
    assert spec.available(ctx), path
    data: dict[str, Any] = to_json(spec.build(ctx))
    return data


def _above(point: dict[str, Any], device: dict[str, Any]) -> bool:
    peak = device["peak_gflops_per_s"]
    roof = min(peak, point["operational_intensity"] * device["peak_memory_gb_per_s"])
    # the JSON rounds intensity to 4 decimals and rates to 3
    slack = 1e-3 * roof + 1e-3 + 1e-4 * device["peak_memory_gb_per_s"]
    return point["flop_rate_gflops"] > roof + slack


@pytest.mark.parametrize("path", by_size(UNDER_THE_ROOF))
def test_every_point_is_at_or_under_its_roof(path: Path) -> None:
    data = _roofline(path)
    device = data["device"]
    assert device["peak_gflops_per_s"] > 0 and device["peak_memory_gb_per_s"] > 0
    points = [p for p in data["points"] if p["gflops"]]
    assert points
    assert not [p["operation"] for p in points if _above(p, device)]
    assert data["points_above_roof"] == 0


@pytest.mark.integration
def test_a_point_served_from_cache_is_flagged_above_the_roof() -> None:
    # V100 ResNet-50: the avg-pool gradient divided by 49, 12.8 MB in and out in 24 us, moves
    # 1070 GB/s where HBM2 gives 900: part of it is still in L2 from the op before.
    data = _roofline(FIXTURES / "kineto" / "v100_resnet50_training_2021schema.json.gz")
    above = [p for p in data["points"] if p["above_roof"]]
    assert [p["operation"] for p in above] == ["aten::div"]
    assert data["points_above_roof"] == 1
    assert _above(above[0], data["device"])
