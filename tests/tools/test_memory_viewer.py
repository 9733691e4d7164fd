"""memory_viewer on the JAX CPU fixture (jax/cnn_cpu, HLO with buffer assignment) against
XProf 2.24.2's memory_viewer for module jit_train_step."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.model.runs import open_run
from stepscope.tools.context import ToolContext
from stepscope.tools.output import to_json
from stepscope.tools.registry import ToolUsageError, get_tool
from stepscope.xspace.proto import xplane_pb2
from tests.support.gpu_fixtures import FIXTURES

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

CNN = FIXTURES / "jax" / "cnn_cpu"
# XProf 2.24.2 on this file (module_name=jit_train_step): peakHeapMib, and the logical buffers
# of maxHeap (the buffers live at the peak; its 12th entry groups the small ones).
XPROF_PEAK_MIB = 5.0699920654296875
XPROF_LIVE_AT_PEAK = {182, 183, 191, 193, 196, 206, 207, 208, 211, 212, 215}


def _viewer(**options: str) -> dict[str, Any]:
    run = open_run(str(CNN))
    spec = get_tool("memory_viewer")
    ctx = ToolContext(run, spec.resolve_host(run, None), options=spec.parse_options(options))
    return to_json(spec.build(ctx))  # type: ignore[no-any-return]


def test_peak_and_live_buffers_match_xprof() -> None:
    data = _viewer()
    assert data["module"] == "jit_train_step" and data["program_id"] == 20  # largest peak
    assert data["peak_mib"] == pytest.approx(XPROF_PEAK_MIB, abs=1e-6)
    big = {b["buffer_id"] for b in data["live_at_peak"] if b["size_mib"] >= 0.01}
    assert big == XPROF_LIVE_AT_PEAK
    top = data["live_at_peak"][0]
    assert top["size_mib"] == 1.0 and top["shape"].startswith("f32[") and top["kind"] == "Temporary"
    kinds = {b["kind"] for b in data["live_at_peak"]}
    assert {"Parameter", "Output", "Temporary"} <= kinds
    heap = [h["mib"] for h in data["heap"]]
    assert max(heap) == data["peak_mib"] == heap[data["peak_position"]]
    assert heap[0] == data["indefinite_mib"]  # parameters, outputs, constants: the floor


def test_module_option_picks_a_program_and_rejects_unknown_names() -> None:
    small = _viewer(module="jit_multiply(14)")
    assert small["module"] == "jit_multiply" and small["peak_mib"] < 1
    assert small["program_id"] == 14
    assert _viewer(module="20")["module"] == "jit_train_step"
    assert _viewer(module="jit_train_step")["program_id"] == 20
    with pytest.raises(ToolUsageError, match="no such program"):
        _viewer(module="jit_nothing")
    # one name compiled three times: the error lists the three to choose from
    with pytest.raises(ToolUsageError, match=r"names 3 programs; pick one of .*jit_multiply\(14\)"):
        _viewer(module="jit_multiply")


@pytest.mark.integration
def test_heap_curve_equals_xprofs(tmp_path: Path) -> None:
    raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")
    source = next(CNN.rglob("*.xplane.pb"))
    session = tmp_path / "session"
    session.mkdir()
    shutil.copy(source, session / source.name)
    space = xplane_pb2.XSpace()
    space.ParseFromString(source.read_bytes())
    plane = next(p for p in space.planes if p.name == "/host:metadata")
    meta = next(m for m in plane.event_metadata.values() if m.name.startswith("jit_train_step"))
    # XProf reads a module from <session>/<module>.hlo_proto.pb (written when a run is opened)
    (session / "jit_train_step.hlo_proto.pb").write_bytes(meta.stats[0].bytes_value)
    out, _ = raw_to_tool_data.xspace_to_tool_data(
        [str(session / source.name)], "memory_viewer", {"module_name": "jit_train_step"}
    )
    xprof = json.loads(out)
    data = _viewer()
    assert data["peak_mib"] == pytest.approx(xprof["peakHeapMib"], abs=1e-6)
    assert [h["mib"] for h in data["heap"]] == pytest.approx(xprof["unpaddedHeapSizes"], abs=1e-6)
    assert {b["logicalBufferId"] for b in xprof["maxHeap"] if b["logicalBufferId"] >= 0} == {
        b["buffer_id"] for b in data["live_at_peak"] if b["size_mib"] >= 0.01
    }


def _graph(relative: str, **options: str) -> dict[str, Any]:
    run = open_run(str(FIXTURES / relative))
    spec = get_tool("graph_viewer")
    ctx = ToolContext(run, spec.resolve_host(run, None), options=spec.parse_options(options))
    return to_json(spec.build(ctx))  # type: ignore[no-any-return]


def test_graph_viewer_centers_on_the_slowest_op_and_walks_both_ways() -> None:
    data = _graph("xspace/gpu_jax_fused_attention.xplane.pb", depth="1")
    assert data["module"] == "jit_loss_fn" and data["node"] == "te_fused_attn_backward_ffi.18"
    by_name = {n["name"]: n for n in data["nodes"]}
    assert by_name["te_fused_attn_backward_ffi.18"]["distance"] == 0
    assert by_name["te_fused_attn_backward_ffi.18"]["time_us"] == pytest.approx(2330.62)
    assert by_name["qkv.1"]["distance"] == -1  # an operand
    assert any(n["distance"] == 1 for n in data["nodes"])  # a user
    names = set(by_name)
    assert all(e["from"] in names and e["to"] in names for e in data["edges"])
    assert {"from": "qkv.1", "to": "te_fused_attn_backward_ffi.18"} in data["edges"]
    deeper = _graph("xspace/gpu_jax_fused_attention.xplane.pb", depth="3")
    assert len(deeper["nodes"]) > len(data["nodes"])
    assert max(abs(n["distance"]) for n in deeper["nodes"]) <= 3


def test_graph_viewer_on_a_cpu_profile_and_bad_names() -> None:
    data = _graph("jax/cnn_cpu", node="conv_general_dilated.5")
    assert data["module"] == "jit_train_step" and data["nodes"]
    center = next(n for n in data["nodes"] if n["distance"] == 0)
    assert center["opcode"] == "convolution" and center["time_us"] is None
    with pytest.raises(ToolUsageError, match="no instruction"):
        _graph("jax/cnn_cpu", node="nope")
    with pytest.raises(ToolUsageError, match=r"no such program; programs: .*jit_train_step"):
        _graph("jax/cnn_cpu", module="jit_nope")
    # a name compiled more than once is ambiguous: the error lists each program to pick
    with pytest.raises(ToolUsageError, match=r"names 3 programs; pick one of jit_multiply\("):
        _graph("jax/cnn_cpu", module="jit_multiply")
    assert _graph("jax/cnn_cpu", module="jit_multiply(14)")["program_id"] == 14


def test_graph_viewer_lists_its_programs_top_ops_and_searches_names() -> None:
    """What the page steers with (issue #33): a select of the programs, a button per top op,
    and a search of the shown program's instruction names."""
    data = _graph("xspace/gpu_jax_fused_attention.xplane.pb")
    modules = data["modules"]
    assert modules[0]["name"] == "jit_loss_fn" and modules[0]["time_us"] > 0
    assert [m["time_us"] for m in modules] == sorted((m["time_us"] for m in modules), reverse=True)
    top = data["top_ops"]
    assert top[0]["name"] == data["node"] == "te_fused_attn_backward_ffi.18"
    assert len(top) == 8 and [t["time_us"] for t in top] == sorted(
        (t["time_us"] for t in top), reverse=True
    )
    run = open_run(str(FIXTURES / "xspace/gpu_jax_fused_attention.xplane.pb"))
    spec = get_tool("graph_viewer")
    (endpoint,) = spec.endpoints
    ctx = ToolContext(run, spec.resolve_host(run, None))
    body, _type = endpoint.handle(ctx, {"q": "FUSION"})
    found = json.loads(body)
    assert found["module"] == "jit_loss_fn" and found["total"] >= len(found["matches"]) > 0
    assert all("fusion" in m["name"] for m in found["matches"])
    timed = [m["time_us"] for m in found["matches"] if m["time_us"] > 0]
    assert timed == sorted(timed, reverse=True)
    assert found["matches"][0]["time_us"] > 0  # timed instructions first
    with pytest.raises(ValueError, match="empty"):
        endpoint.handle(ctx, {"q": " "})
    # a CPU profile: its programs (no device time) and no top ops, search still answers
    cpu = _graph("jax/cnn_cpu")
    assert cpu["top_ops"] == [] and "jit_train_step" in {m["name"] for m in cpu["modules"]}
