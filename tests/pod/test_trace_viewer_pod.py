"""The trace viewer at ALL_HOSTS: one timeline with a section per host. A pod window is the
hosts' own windows merged (global numbers, shared clock), within a row budget; hosts can be
chosen; clocks aligned on the wall clock or on profile starts; a corrupt host is reported."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.executor import InlineExecutor
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools import output
from stepscope.tools._fanout import build_tool
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import ToolUsageError, get_tool
from stepscope.tools.trace_viewer import pod_api
from stepscope.tools.trace_viewer import wire as trace_wire
from tests.pod.builders import MS, cpu_pod, data_parallel_job

SPEC = get_tool("trace_viewer")
ENDPOINTS = {e.name: e.handle for e in SPEC.endpoints}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cpu_pod(tmp_path_factory.mktemp("tv"), 4, events=12_000, corrupt=(2,))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ProfileStore:
    return ProfileStore(cache_dir=tmp_path_factory.mktemp("cache"), executor=InlineExecutor())


def _ctx(run_dir: Path, store: ProfileStore, host: str = ALL_HOSTS, **options: str) -> ToolContext:
    return ToolContext(
        open_run(str(run_dir)), host, store, {"hosts": "", "align": "clock", **options}
    )


def _decode(body: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    size = struct.unpack("<I", body[4:8])[0]
    header = json.loads(body[8 : 8 + size])
    kinds = {"i1": "<i1", "u1": "<u1", "i4": "<i4", "u4": "<u4", "f4": "<f4", "f8": "<f8"}
    arrays = {
        a["name"]: np.frombuffer(body, kinds[a["dtype"]], a["length"], a["offset"])
        for a in header["arrays"]
    }
    return header, arrays


def _window(ctx: ToolContext, **params: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return _decode(ENDPOINTS["window"](ctx, params)[0])


def test_structure_lists_each_host_with_global_numbers(run_dir: Path, store: ProfileStore) -> None:
    data = output.to_json(build_tool(_ctx(run_dir, store), SPEC))
    assert [h["name"] for h in data["hosts"]] == ["host000", "host001", "host003"]
    assert data["host_errors"][0]["host"] == "host002"
    assert "not a valid XSpace" in data["host_errors"][0]["error"]
    bases = [(h["line_base"], h["event_base"]) for h in data["hosts"]]
    n = data["hosts"][0]["events"]  # the synthetic hosts have equal counts
    assert bases == [(0, 0), (8, n), (16, 2 * n)]
    tracks = [t["line"] for h in data["hosts"] for s in h["sections"] for t in s["tracks"]]
    assert tracks == sorted(set(tracks)) and tracks[0] == 0 and tracks[-1] == 23
    assert data["events"] == sum(h["events"] for h in data["hosts"])
    # the steps endpoint answers the first host's steps, as the structure's step picker has them
    steps = json.loads(ENDPOINTS["steps"](_ctx(run_dir, store), {})[0])
    assert steps == data["steps"] == data["hosts"][0]["steps"]
    assert len(steps["number"]) > 0


@pytest.mark.parametrize("fraction", [1.0, 0.01])
def test_pod_window_is_the_hosts_own_windows_merged(
    run_dir: Path, store: ProfileStore, fraction: float
) -> None:
    pod_ctx = _ctx(run_dir, store)
    structure = output.to_json(build_tool(pod_ctx, SPEC))
    span = structure["duration_ns"]
    t1 = str(int(span * fraction))
    header, merged = _window(pod_ctx, t0="0", t1=t1, res="800")
    assert header["hosts"] == ["host000", "host001", "host003"] and header["rows_left_out"] == 0
    names = np.array(header["names"], dtype=object)
    offset = 0
    for h in structure["hosts"]:
        line_base, event_base = h["line_base"], h["event_base"]
        one, arrays = _window(_ctx(run_dir, store, h["name"]), t0="0", t1=t1, res="800")
        n = one["events"]
        part = {
            k: merged[k][offset : offset + n]
            for k in ("event", "line", "depth", "start", "dur", "name")
        }
        assert (part["event"] == arrays["event"] + event_base).all()
        assert (part["line"] == arrays["line"] + line_base).all()
        assert (part["depth"] == arrays["depth"]).all() and (part["dur"] == arrays["dur"]).all()
        # every synthetic host starts at the same wall-clock time: same times on both axes
        assert (part["start"] == arrays["start"]).all()
        assert list(names[part["name"]]) == [one["names"][i] for i in arrays["name"]]
        offset += n
    assert offset == header["events"]


def test_pod_window_in_the_compact_form_decodes_to_the_plain_one(
    run_dir: Path, store: ProfileStore
) -> None:
    # What the page asks at ALL_HOSTS too (decision 327): the same header and arrays.
    params = {"t0": "0", "res": "800", "lines": "0-23"}
    plain = ENDPOINTS["window"](_ctx(run_dir, store), params)[0]
    packed = ENDPOINTS["window"](_ctx(run_dir, store), {**params, "form": "compact"})[0]
    assert len(packed) < len(plain) / 2
    header, arrays = trace_wire.decode(plain)
    header2, arrays2 = trace_wire.decode(packed)
    assert {**header2, "arrays": []} == {**header, "arrays": []} and header["events"] > 1000
    assert list(arrays2) == list(arrays)
    for name, values in arrays.items():
        assert arrays2[name].dtype == values.dtype, name
        assert np.array_equal(arrays2[name], values, equal_nan=True), name


def test_window_stays_within_the_row_budget(
    run_dir: Path, store: ProfileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pod_api, "MAX_WINDOW_ROWS", 10)
    monkeypatch.setattr(pod_api, "MAX_ROWS_WITHOUT_LINES", 6)
    header, arrays = _window(_ctx(run_dir, store), res="500", lines="0-23")
    assert header["rows_left_out"] == 24 - 10  # one row per line here
    assert set(np.unique(arrays["line"]).tolist()) <= set(range(10))
    assert header["resolution"] == 500
    # without a track list (a script): the first screen of rows only
    header, arrays = _window(_ctx(run_dir, store), res="500")
    assert header["rows_left_out"] == 24 - 6
    assert set(np.unique(arrays["line"]).tolist()) <= set(range(6))
    monkeypatch.setattr(pod_api, "MAX_ROWS_WITHOUT_LINES", 10)
    monkeypatch.setattr(pod_api, "MAX_ROW_PIXELS", 10 * 120)  # rows x pixels: 120 px for 10
    header, arrays = _window(_ctx(run_dir, store), res="500")
    assert header["resolution"] == 120 and header["bucket_ns"] * 120 == pytest.approx(
        header["t1"] - header["t0"]
    )
    # asking for tracks in view only: those hosts alone are queried
    header, arrays = _window(_ctx(run_dir, store), res="500", lines="9-10,20", counter_ids="none")
    assert header["hosts"] == ["host001", "host003"] and header["rows_left_out"] == 0
    assert set(np.unique(arrays["line"]).tolist()) == {9, 10, 20}
    header, arrays = _window(_ctx(run_dir, store), res="500", lines="none")
    assert header["events"] == 0 and header["hosts"] == []


def test_chosen_hosts_and_unknown_host(run_dir: Path, store: ProfileStore) -> None:
    ctx = _ctx(run_dir, store, hosts="host003,host000")
    data = output.to_json(build_tool(ctx, SPEC))
    assert [h["name"] for h in data["hosts"]] == ["host000", "host003"]
    with pytest.raises(ToolUsageError, match="no host 'host9'"):
        SPEC.build(_ctx(run_dir, store, hosts="host000,host9"))
    with pytest.raises(ToolUsageError, match="align='sideways' of tool trace_viewer must be one"):
        SPEC.build(_ctx(run_dir, store, align="sideways"))
    with pytest.raises(ValueError, match="no host 'host9'"):
        ENDPOINTS["window"](_ctx(run_dir, store, hosts="host9"), {"hosts": "host9"})


def test_event_search_and_select_in_global_numbers(run_dir: Path, store: ProfileStore) -> None:
    ctx = _ctx(run_dir, store)
    one = _ctx(run_dir, store, "host001")
    base = output.to_json(build_tool(ctx, SPEC))["hosts"][1]["event_base"]
    detail = json.loads(ENDPOINTS["event"](ctx, {"id": str(base + 5)})[0])
    own = json.loads(ENDPOINTS["event"](one, {"id": "5"})[0])
    assert detail["host"] == "host001" and detail["event"] == base + 5
    assert detail["line"] == own["line"] + 8 and detail["stats"] == own["stats"]
    found = json.loads(ENDPOINTS["search"](ctx, {"q": "MatMul", "limit": "50"})[0])
    per_host = [
        json.loads(ENDPOINTS["search"](_ctx(run_dir, store, h), {"q": "MatMul"})[0])["total"]
        for h in ("host000", "host001", "host003")
    ]
    assert found["total"] == sum(per_host) and len(found["results"]["event"]) == 50
    starts = found["results"]["start_ns"]
    assert starts == sorted(starts) and set(found["results"]["host"]) <= {
        "host000",
        "host001",
        "host003",
    }
    box = json.loads(ENDPOINTS["select"](ctx, {"t0": "0", "t1": "100000", "rows": "1:0,9:0"})[0])
    assert [h["host"] for h in box["by_host"]] == ["host000", "host001"]
    assert box["count"] == sum(h["count"] for h in box["by_host"]) > 0


def test_clock_or_start_alignment(tmp_path: Path) -> None:
    job = data_parallel_job(tmp_path / "job", ranks=4, steps=3)  # rank r's clock 7.78 ms * r later
    store = ProfileStore(cache_dir=tmp_path / "cache", executor=InlineExecutor())
    clock = output.to_json(build_tool(_ctx(job, store), SPEC))
    assert [h["start_ns"] for h in clock["hosts"]] == [r * 7_777_777 for r in range(4)]
    assert [h["shift_ns"] for h in clock["hosts"]] == [0, 0, 0, 0]
    start = output.to_json(build_tool(_ctx(job, store, align="start"), SPEC))
    assert [h["start_ns"] for h in start["hosts"]] == [0, 0, 0, 0]
    assert [h["shift_ns"] for h in start["hosts"]] == [r * 7_777_777 for r in range(4)]
    # the same step starts at the same place on the axis once aligned on starts
    assert len({h["steps"]["start_ns"][1] for h in start["hosts"]}) == 1
    assert (
        clock["hosts"][3]["steps"]["start_ns"][1] - clock["hosts"][0]["steps"]["start_ns"][1]
        == 3 * 7_777_777
    )
    header, arrays = _window(_ctx(job, store, align="start"), t0="0", t1=str(2 * MS), res="100")
    assert header["hosts"] == ["rank0", "rank1", "rank2", "rank3"] and arrays["start"].min() >= 0


def test_cli_all_hosts_and_host_list(
    run_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    code = main(["tool", str(run_dir), "trace_viewer", "--host", ALL_HOSTS, "--workers", "0"])
    captured = capsys.readouterr()
    assert code == 3  # partial: one host left out
    data = json.loads(captured.out)
    assert [h["name"] for h in data["hosts"]] == ["host000", "host001", "host003"]
    assert "host002" in captured.err and "not a valid XSpace" in captured.err
    assert main(["tool", str(run_dir), "trace_viewer", "--host", "host001,host003"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [h["name"] for h in data["hosts"]] == ["host001", "host003"]


def test_docs_list_the_pod_structure_fields() -> None:
    from stepscope.tools.field_docs import field_table
    from stepscope.tools.trace_viewer.pod_structure import PodTraceView
    from tests.support.fixtures import REPO

    text = (REPO / "docs" / "tools" / "trace_viewer.md").read_text()
    assert f"<!-- pod fields -->\n{field_table(PodTraceView)}\n<!-- /pod fields -->" in text
