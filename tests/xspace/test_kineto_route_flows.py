"""The Kineto route's launch flows at their edges (xspace/kineto/fast_route.py), with the C
scanner and without it: which flow end gives a kernel its correlation id, and which binds
nothing (issue #34's mutation runs of fast_route.py; split from test_kineto_route_edges)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.kineto_route import kineto_op, read_both


def test_a_flow_without_a_category_binds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch flow names its category (ac2g); a flow end without one is not read as a
    launch, so the kernel it touches gets no correlation id from it."""
    kernel = kineto_op(
        "k", cat="kernel", pid=0, tid=7, ts=1003, dur=1, args={"device": 0, "stream": 7}
    )
    flow_end = {"ph": "f", "id": 41, "pid": 0, "tid": 7, "ts": 1003, "bp": "e"}
    launch = {"ph": "s", "cat": "ac2g", "id": 99, "pid": 1, "tid": 2, "ts": 1000}
    # the texts the route adds when a trace lacks them, here first: "ac2g" is the last text
    texts = {"empty": "", "unknown": "unknown", "instant": "cpu_instant_event"}
    events = [kineto_op("aten::mm", args=texts), kernel, flow_end, launch]
    read = read_both(tmp_path, monkeypatch, events)
    (stats,) = [e[5] for e in read["events"] if e[1] == "k"]
    assert "correlation_id" not in [name for name, *_ in stats], stats


def _correlation(read: dict[str, Any], name: str) -> list[Any]:
    (stats,) = [e[5] for e in read["events"] if e[1] == name]
    return [value for key, _kind, value in stats if key == "correlation_id"]


def test_a_launch_flow_gives_a_kernel_its_correlation_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow comes first, with "cat" first: its category is the trace's string 0."""
    flow_end = {"cat": "ac2g", "ph": "f", "id": 41, "pid": 0, "tid": 7, "ts": 1003, "bp": "e"}
    kernel = kineto_op(
        "k", cat="kernel", pid=0, tid=7, ts=1003, dur=1, args={"device": 0, "stream": 7}
    )
    read = read_both(tmp_path, monkeypatch, [flow_end, kineto_op("aten::mm"), kernel])
    assert _correlation(read, "k") == [41]


def test_a_launch_flow_at_a_host_op_that_is_no_launch_binds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only kernels and launches (cuda_runtime...) without a correlation id take one from a
    flow; a cpu_op at the flow's start does not."""
    kernel = kineto_op(
        "k", cat="kernel", pid=0, tid=7, ts=1003, dur=1, args={"device": 0, "stream": 7}
    )
    flow = {"ph": "s", "cat": "ac2g", "id": 41, "pid": 1, "tid": 2, "ts": 1000}
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm"), kernel, flow])
    assert _correlation(read, "aten::mm") == []


def test_a_launch_flow_whose_category_is_string_2_still_binds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a trace without fwdbwd flows no flow is one: here the launch flow's category is the
    trace's string 2 (after its name and its phase), and it gives the kernel its id."""
    from stepscope.xspace.kineto import pyscan

    flow_end = {"name": "launch", "ph": "f", "cat": "ac2g", "id": 41, "pid": 0, "tid": 7}
    flow_end |= {"ts": 1003, "bp": "e"}
    kernel = kineto_op(
        "k", cat="kernel", pid=0, tid=7, ts=1003, dur=1, args={"device": 0, "stream": 7}
    )
    events = [flow_end, kineto_op("aten::mm"), kernel]
    probe = pyscan.scan_bytes(json.dumps({"traceEvents": events}).encode(), "probe", [])
    assert probe is not None and probe.texts.index("ac2g") == 2
    read = read_both(tmp_path, monkeypatch, events)
    assert _correlation(read, "k") == [41]


def test_many_kernels_without_ids_each_take_their_own_flows_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernels of two streams, interleaved in the file, none with a correlation id: each
    takes the id of the launch flow that ends at it (the route keeps each event's place on
    its line in file order)."""
    events: list[Any] = [kineto_op("aten::mm")]
    for k in range(48):
        stream = 7 + k % 2
        args = {"device": 0, "stream": stream}
        events.append(
            kineto_op(f"k{k}", cat="kernel", pid=0, tid=stream, ts=1003 + k, dur=1, args=args)
        )
        flow = {"ph": "f", "cat": "ac2g", "id": 100 + k, "pid": 0, "tid": stream}
        events.append(flow | {"ts": 1003 + k, "bp": "e"})
    read = read_both(tmp_path, monkeypatch, events)
    assert [_correlation(read, f"k{k}") for k in range(48)] == [[100 + k] for k in range(48)]


def test_a_launch_flow_without_a_time_binds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flow end without a valid ts ends nowhere: the kernel at the trace's time 0 on its
    thread takes no correlation id from it."""
    args = {"device": 0, "stream": 7}
    kernel = kineto_op("k", cat="kernel", pid=0, tid=7, ts=0, dur=1, args=args)
    flow_end = {"ph": "f", "cat": "ac2g", "id": 41, "pid": 0, "tid": 7, "bp": "e"}
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm", ts=0), kernel, flow_end])
    assert _correlation(read, "k") == []
