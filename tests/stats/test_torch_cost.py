"""FLOP and byte estimates of PyTorch ops from their input shapes, and op_profile /
roofline_model on a PyTorch trace recorded with record_shapes."""

from __future__ import annotations

import pytest

from stepscope.model.runs import open_run
from stepscope.stats.gpu.torch_cost import SOURCE, op_cost, torch_metrics
from stepscope.tools.context import ToolContext
from stepscope.tools.output import to_json
from stepscope.tools.registry import get_tool
from tests.support.gpu_fixtures import FIXTURES, fixture_profile

BF16 = "c10::BFloat16"


def test_matmul_conv_attention_elementwise_formulas() -> None:
    mm = op_cost("aten::mm", [[64, 128], [128, 32]], ["float", "float"], [])
    assert mm.family == "matmul" and mm.flops == 2 * 64 * 128 * 32
    assert mm.bytes_accessed == 4 * (64 * 128 + 128 * 32 + 64 * 32)
    addmm = op_cost("aten::addmm", [[512], [141, 512], [512, 512], [], []], [BF16] * 3, [])
    assert addmm.flops == 2 * 141 * 512 * 512
    linear = op_cost("aten::linear", [[1, 141, 512], [2048, 512], [2048]], [BF16] * 3, [])
    assert linear.flops == 2 * 141 * 512 * 2048
    bmm = op_cost("aten::bmm", [[8, 16, 32], [8, 32, 4]], ["float", "float"], [])
    assert bmm.flops == 2 * 8 * 16 * 32 * 4
    # conv2d: stride 2, padding 1 from Concrete Inputs -> 56x56 outputs of a 112x112 input
    conv = op_cost(
        "aten::conv2d",
        [[8, 64, 112, 112], [128, 64, 3, 3], []],
        ["float", "float", ""],
        ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"],
    )
    assert conv.family == "convolution" and conv.flops == 2 * 8 * 128 * 56 * 56 * 64 * 9
    sdpa = op_cost(
        "aten::_scaled_dot_product_flash_attention", [[2, 8, 128, 64]] * 3, [BF16] * 3, []
    )
    assert sdpa.flops == 4 * 2 * 8 * 128 * 128 * 64
    flash = op_cost("aten::_flash_attention_forward", [[2, 128, 8, 64]] * 3, [BF16] * 3, [])
    assert flash.flops == sdpa.flops  # [batch, length, heads, dim] layout
    gelu = op_cost("aten::gelu", [[4, 1024], []], [BF16, ""], [])
    assert gelu.family == "elementwise" and gelu.flops == 4096 and gelu.bytes_accessed == 2 * 8192
    assert op_cost("aten::index_select", [[10, 4], [3]], ["float", "long int"], []).flops == 0
    assert op_cost("aten::mm", [], [], []).family == "other"  # no shapes recorded


def test_h100_bert_ops_get_flops_from_their_shapes() -> None:
    metrics = torch_metrics(fixture_profile("kineto/h100_bert_small_inference.json.gz"))
    assert metrics.source == SOURCE
    rows = {r.op.name: r for r in metrics.rows}
    addmm = rows["aten::addmm"]
    assert addmm.op.category == "matmul" and addmm.flops > 1e9 and addmm.total_ns > 0
    assert rows["aten::_flash_attention_forward"].op.category == "attention"
    assert sum(r.total_ns for r in metrics.rows) <= metrics.device_events_ns
    # The 2021 ResNet trace: convolutions costed from their shapes; their backward ops are
    # not modelled (no FLOPs).
    resnet = torch_metrics(fixture_profile("kineto/v100_resnet50_training_2021schema.json.gz"))
    by_name = {r.op.name: r for r in resnet.rows}
    assert by_name["aten::cudnn_convolution"].flops > 1e12
    assert by_name["aten::cudnn_convolution_backward_input"].flops == 0


def test_op_profile_and_roofline_on_pytorch_say_where_costs_come_from() -> None:
    run = open_run(str(FIXTURES / "kineto/h100_bert_small_inference.json.gz"))
    for name in ("op_profile", "roofline_model"):
        spec = get_tool(name)
        ctx = ToolContext(run, spec.resolve_host(run, None), options=spec.parse_options({}))
        assert spec.available(ctx)
        data = to_json(spec.build(ctx))
        assert data["cost_source"] == SOURCE
        assert data["device"]["source"] == "table: H100"
    assert not get_tool("hlo_stats").available(ToolContext(run, run.host_names[0], options={}))
    points = data["points"]
    addmm = next(p for p in points if p["operation"] == "aten::addmm")
    assert addmm["bound_by"] in ("Memory", "Compute") and addmm["operational_intensity"] > 10
    assert data["steps"] == ["Total"]
    assert pytest.approx(
        sum(p["time_us"] for p in points if p["step"] == "Total" and p["operation"] != "Program"),
        rel=1e-6,
    ) == sum(p["time_us"] for p in points if p["operation"] != "Program")
