"""hlo_stats, op_profile and roofline_model on the JAX GPU fixture, against XProf 2.24.2's
outputs for the same file (gpu_jax_fused_attention_xprof_reference/).

XProf gives cuBLAS/cuDNN and other custom calls 0 FLOPs and 0 bytes; stepscope costs them
(decision in docs/decisions.md), so FLOP and byte totals are compared without custom calls.
XProf's "GB/s" are GiB/s.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepscope.model.runs import open_run
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import get_tool
from tests.support.gpu_fixtures import FIXTURES

REFERENCE = FIXTURES / "xspace" / "gpu_jax_fused_attention_xprof_reference"
FILE = FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb"
GIB = 2**30


def _table(name: str) -> list[dict[str, Any]]:
    data = json.loads((REFERENCE / name).read_text())
    table = data[0] if isinstance(data, list) else data
    ids = [c["id"] for c in table["cols"]]
    return [dict(zip(ids, [c.get("v") for c in r["c"]], strict=True)) for r in table["rows"]]


@pytest.fixture(scope="module")
def tools() -> dict[str, dict[str, Any]]:
    run = open_run(str(FILE))
    out = {}
    for name, options in (
        ("hlo_stats", {}),
        ("op_profile", {}),
        ("op_profile_no_idle", {"exclude_idle": "yes"}),
        ("roofline_model", {}),
    ):
        spec = get_tool(name.replace("_no_idle", ""))
        ctx = ToolContext(run, spec.resolve_host(run, None), options=spec.parse_options(options))
        out[name] = spec.build(ctx).to_json()
    return out


def _close(got: float, want: float, rel: float = 0.01) -> bool:
    return abs(got - want) <= rel * abs(want) + 1e-9


def test_hlo_stats_rows_and_totals_match_xprof(tools: dict[str, dict[str, Any]]) -> None:
    xprof = {str(r["hlo_op_name"]): r for r in _table("hlo_stats.json")}
    ours = {r["hlo_op_name"]: r for r in tools["hlo_stats"]["rows"]}
    assert set(ours) == set(xprof)
    for name, want in xprof.items():
        got = ours[name]
        assert got["category"] == want["category"], name
        assert got["occurrences"] == int(want["occurrences"]), name
        assert _close(got["total_time_us"], float(want["total_time"]), 0.001), name
        assert got["tf_op_name"] == str(want["tf_op_name"]).rstrip(":"), name
        assert got["expression"].startswith(f"%{name} = "), name
    total = sum(float(r["total_time"]) for r in xprof.values())
    assert _close(tools["hlo_stats"]["summary"]["total_time_us"], total)
    not_custom = [n for n, r in xprof.items() if r["category"] != "custom-call"]
    want_flops = sum(
        float(xprof[n]["model_flop_rate"]) * float(xprof[n]["total_time"]) for n in not_custom
    )
    got_flops = sum(ours[n]["gflops"] * 1e6 for n in not_custom)  # GFLOP/s x us = 1e-3 GFLOP
    assert _close(got_flops, want_flops * 1e-3 * 1e3)
    want_bytes = sum(
        float(xprof[n]["measured_memory_bw"]) * GIB * float(xprof[n]["total_time"]) * 1e-6
        for n in not_custom
    )
    assert _close(sum(ours[n]["bytes_accessed"] for n in not_custom), want_bytes)


def test_op_profile_totals_match_xprof(tools: dict[str, dict[str, Any]]) -> None:
    xprof = json.loads((REFERENCE / "op_profile.json").read_text())["byProgram"]
    root = tools["op_profile"]["by_program"]
    assert _close(root["time_us"], xprof["metrics"]["rawTime"] / 1e6)  # ps
    program = xprof["children"][0]
    ours = root["children"][0]
    assert ours["name"] == program["name"] == "jit_loss_fn(17)"
    assert _close(ours["time_us"], program["metrics"]["rawTime"] / 1e6, 0.001)
    no_custom = [c for c in ours["children"] if c["name"] != "custom-call"]
    assert _close(sum(c["gflops"] for c in no_custom) * 1e9, xprof["metrics"]["rawFlops"])
    assert _close(
        sum(c["bytes_accessed"] for c in no_custom), xprof["metrics"]["rawBytesAccessedArray"][0]
    )
    categories = {c["name"] for c in ours["children"]}
    assert categories == {c["name"] for c in program["children"]}
    assert root["children"][-1]["name"] == "IDLE"
    no_idle = tools["op_profile_no_idle"]["by_program"]
    assert _close(no_idle["time_us"], program["metrics"]["rawTime"] / 1e6, 0.001)
    assert all(c["name"] != "IDLE" for c in no_idle["children"])


def test_roofline_model_matches_xprof(tools: dict[str, dict[str, Any]]) -> None:
    data = json.loads((REFERENCE / "roofline_model.json").read_text())
    props = data[0]["p"]
    device = tools["roofline_model"]["device"]
    assert _close(device["peak_gflops_per_s"], float(props["peak_flop_rate"]))
    assert _close(device["peak_memory_gb_per_s"], float(props["peak_hbm_bw"]) * GIB / 1e9)
    assert _close(device["ridge_point_flops_per_byte"], float(props["hbm_ridge_point"]))
    xprof = {str(r["operation"]): r for r in _table("roofline_model.json") if r["step"] == "Total"}
    ours = {p["operation"]: p for p in tools["roofline_model"]["points"] if p["step"] == "Total"}
    assert set(ours) == set(xprof)
    assert _close(ours["Program"]["time_us"], float(xprof["Program"]["total_time"]))
    for name, want in xprof.items():
        if want["category"] in ("custom-call", "Program"):
            continue
        got = ours[name]
        if want["category"] == "custom fusion":  # the GEMMs; XLA's GPU cost model counts more
            # FLOPs per element for elementwise ops than stepscope's one per element
            assert _close(got["operational_intensity"], float(want["operational_intensity"]))
        assert got["bound_by"] == {"HBM": "Memory", "Compute": "Compute"}[want["bound_by"]], name
