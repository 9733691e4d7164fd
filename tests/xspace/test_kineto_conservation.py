"""Where every Kineto event goes (issue #34): nothing lost, nothing moved to the wrong device.

The expected destinations come from this file's own reading of the raw JSON (the Kineto
format's rules: a device event's GPU is its ``device`` arg, its stream the ``stream`` arg or
else the tid), not from the importer's tables, so a category routed to the wrong place (a
memset counted as host work, a sync wait as a kernel) fails here even where no analysis
figure on a fixture moves. Real traces through the path users take (`open_file`), and a
trace built here with every kind of memcpy, memsets and CUDA syncs through both import paths.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_xspace
from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import kineto_to_columns, kineto_to_xspace
from tests.support.fixtures import FIXTURES, by_size
from tests.support.gpu_fixtures import fixture_profile

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

KINETO = sorted((FIXTURES / "kineto").glob("*.json.gz"))

# raw category -> (category after import, where it goes); the format's own names, old and new
DEVICE_WORK = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "gpu_memcpy"}
DEVICE_WORK |= {"Memcpy": "gpu_memcpy", "gpu_memset": "gpu_memset", "Memset": "gpu_memset"}
HOST = {"cpu_op": "cpu_op", "Operator": "cpu_op", "operator": "cpu_op"}
HOST |= {"user_annotation": "user_annotation", "User Annotation": "user_annotation"}
HOST |= {"python_function": "python_function", "Python": "python_function"}
HOST |= {"cuda_runtime": "cuda_runtime", "Runtime": "cuda_runtime", "runtime": "cuda_runtime"}
HOST |= {"cuda_driver": "cuda_driver", "Driver": "cuda_driver"}
HOST |= {"cpu_instant_event": "cpu_instant_event"}

Place = tuple[str, str, str]  # (category, plane, line) of one event


def _stream(args: dict[str, Any], tid: Any) -> int:
    if isinstance(args.get("stream"), int):
        return int(args["stream"])
    if isinstance(tid, int):
        return tid
    digits = re.findall(r"\d+", str(tid))
    return int(digits[-1]) if digits else 0


def expected_places(events: list[dict[str, Any]]) -> tuple[Counter[Place], Counter[int]]:
    """Where each event of a Kineto ``traceEvents`` list belongs, and the host threads' event
    counts (one entry per (pid, tid) with host events)."""
    places: Counter[Place] = Counter()
    threads: Counter[tuple[Any, Any]] = Counter()
    for e in events:
        cat, ph, args = e.get("cat"), e.get("ph"), e.get("args") or {}
        if ph in ("i", "I") and e.get("name") == "[memory]":
            places["cpu_instant_event", "/host:CPU", "Memory"] += 1
            continue
        if ph != "X" or cat == "Trace":
            continue
        device = args["device"] if isinstance(args.get("device"), int) else e.get("pid", 0)
        gpu = f"/device:GPU:{device}"
        stream = _stream(args, e.get("tid"))
        if cat in DEVICE_WORK:
            places[DEVICE_WORK[cat], gpu, f"Stream #{stream}"] += 1
        elif cat == "gpu_user_annotation":
            places[cat, gpu, f"GPU annotations (Stream #{stream})"] += 1
        elif cat == "cuda_sync":
            places[cat, gpu, f"CUDA sync (Stream #{stream})"] += 1
        elif cat == "overhead":
            places[cat, "/host:CUPTI", "Activity overhead"] += 1
        elif cat in HOST:
            places[HOST[cat], "/host:CPU", "thread"] += 1
            threads[e.get("pid"), e.get("tid")] += 1
        else:
            raise AssertionError(f"a category this test does not know: {cat!r}")
    return places, Counter(threads.values())


def actual_places(profile: Profile) -> tuple[Counter[Place], Counter[int]]:
    """Where the imported profile put its events (same keys), and its host lines' counts."""
    category = profile.stat("category")
    assert category.present.all()  # every Kineto event keeps its category
    pairs, counts = np.unique(
        np.stack([profile.line.astype(np.int64), category.value.astype(np.int64)]),
        axis=1,
        return_counts=True,
    )
    places: Counter[Place] = Counter()
    per_line: Counter[int] = Counter()
    for (line_index, cat_id), n in zip(pairs.T.tolist(), counts.tolist(), strict=True):
        line = profile.lines[line_index]
        plane = profile.planes[line.plane].name
        on_host_thread = plane == "/host:CPU" and line.name != "Memory"
        name = "thread" if on_host_thread else line.name
        places[profile.strings[cat_id], plane, name] += n
        if on_host_thread:
            per_line[line_index] += n
    return places, Counter(per_line.values())


def _events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return events


@pytest.mark.parametrize("path", by_size(KINETO))
def test_every_event_lands_where_its_category_says(path: Path) -> None:
    expected, expected_threads = expected_places(_events(path))
    actual, actual_threads = actual_places(fixture_profile(f"kineto/{path.name}"))
    assert actual == expected
    assert actual_threads == expected_threads  # one host line per thread, none merged or split


MEMCPY_KINDS = {
    "Memcpy HtoD (Pageable -> Device)": ("MEMCPYHToD", "kind_src:pageable kind_dst:device"),
    "Memcpy DtoH (Device -> Pinned)": ("MEMCPYDToH", "kind_src:device kind_dst:pinned"),
    "Memcpy DtoD (Device -> Device)": ("MEMCPYDToD", "kind_src:device kind_dst:device"),
    "Memcpy HtoH (Pinned -> Pinned)": ("MEMCPYHToH", "kind_src:pinned kind_dst:pinned"),
    "Memcpy PtoP (Device -> Device)": ("MEMCPYP2P", "kind_src:device kind_dst:device"),
}


def _hand_built_trace(tmp_path: Path) -> Path:
    """One training step on GPU 1, stream 7 (and a sync on stream 9): a kernel, a memcpy of
    every direction, two memsets, two CUDA syncs, and the host ops that launched them."""
    host: list[dict[str, Any]] = []
    device: list[dict[str, Any]] = []
    ts = 1000.0

    def launch(name: str, cat: str, args: dict[str, Any], dur: float = 5.0) -> None:
        nonlocal ts
        correlation = len(device) + 1
        host.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunch", "pid": 10, "tid": 11,
             "ts": ts, "dur": 2.0, "args": {"correlation": correlation}}
        )  # fmt: skip
        device.append(
            {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": "stream 7", "ts": ts + 3,
             "dur": dur, "args": {"device": 1, "stream": 7, "correlation": correlation, **args}}
        )  # fmt: skip
        ts += 10

    launch("volta_sgemm_128x64_nn", "kernel", {"grid": [1, 1, 1], "block": [128, 1, 1]})
    for name in MEMCPY_KINDS:
        launch(name, "gpu_memcpy", {"bytes": 4096})
    launch("Memset (Device)", "gpu_memset", {"bytes": 512})
    launch("Memset (Device)", "Memset", {"bytes": 256})  # the 2021 schema's spelling
    syncs = [
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 1, "tid": "stream 7",
         "ts": ts, "dur": 4.0, "args": {"device": 1, "stream": 7}},
        {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 1, "tid": "stream 9",
         "ts": ts + 5, "dur": 3.0, "args": {"device": 1, "stream": 9}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 10,
         "tid": 11, "ts": ts, "dur": 9.0, "args": {}},
    ]  # fmt: skip
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 11,
            "ts": 999.0, "dur": ts + 10 - 999.0, "args": {}}  # fmt: skip
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 1, "name": "Tesla V100-SXM2-16GB", "numSms": 80}],
        "traceEvents": [step, *host, *device, *syncs],
    }
    path = tmp_path / "hand_built.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(trace).encode()))
    return path


def _both_paths(path: Path) -> dict[str, Profile]:
    return {
        "columns": profile_from_columns(kineto_to_columns(path), str(path), None),
        "xspace": profile_from_xspace(kineto_to_xspace(path), source=str(path)),
    }


@pytest.mark.parametrize("route", ["columns", "xspace"])
def test_hand_built_trace_with_every_memcpy_memsets_and_syncs(tmp_path: Path, route: str) -> None:
    path = _hand_built_trace(tmp_path)
    profile = _both_paths(path)[route]
    expected, expected_threads = expected_places(_events(path))
    actual, actual_threads = actual_places(profile)
    assert actual == expected
    assert actual_threads == expected_threads
    # What the device events say about themselves: XSpace names and details.
    gpu = profile.plane_by_name("/device:GPU:1")
    assert gpu is not None
    rows = profile.events_of_plane(gpu)
    shown = {}
    for row in range(rows.start, rows.stop):
        stats = profile.event_stats(row)
        assert stats["device_id"] == 1
        shown[profile.event_name(row)] = stats.get("memcpy_details") or stats.get("memset_details")
    for name, (xspace_name, kinds) in MEMCPY_KINDS.items():
        assert shown[xspace_name] == f"num_bytes:4096 {kinds}", name
    assert shown["Memset (Device)"] in ("num_bytes:512 kind:device", "num_bytes:256 kind:device")
    assert {"Stream Sync", "Event Sync", "volta_sgemm_128x64_nn"} <= set(shown)
