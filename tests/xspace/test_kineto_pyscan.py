"""The Python scanner (`pyscan`) gives the C scanner's columns, so one route reads every trace:
with C, without it, and where the C scanner flags events it does not read."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.xspace.kineto import fast_memory, fast_route, importer, pyscan, scan
from stepscope.xspace.kineto.devices import us_to_ns
from tests.support.fixtures import FIXTURES
from tests.support.kineto import assert_same_profile, resolved_columns, scanned
from tests.support.native import c_off, c_on

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

_EVENTS: list[Any] = [
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "main"}},
    {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::mm",
        "pid": 1,
        "tid": 7,
        "ts": 10.5,
        "dur": 3,
        "args": {
            "Input Dims": [[1, 512], []],
            "External id": 4,
            "flag": True,
            "x": None,
            "ratio": 0.25,
            "meta": {"a": [1, 2]},
            "text": 'q"uote\u00e9',
        },
    },
    {
        "name": "k",
        "ph": "X",
        "cat": "kernel",
        "pid": 0,
        "tid": "stream 7",
        "ts": 11,
        "dur": 1.25,
        "args": {"device": 0, "stream": 7, "correlation": 9},
    },
    {"ph": "s", "id": 9, "pid": 1, "tid": 7, "ts": 10.5, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 9, "pid": 0, "tid": "stream 7", "ts": 11, "cat": "ac2g", "bp": "e"},
    {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Spans", "tid": "", "ts": 9},
    {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 7,
        "ts": 12,
        "args": {"Bytes": -64, "Addr": 1 << 40, "Device Type": 1, "Device Id": 0},
    },
    {
        "ph": "X",
        "cat": "Trace",
        "name": "PyTorch Profiler (0)",
        "pid": "Spans",
        "tid": "PyTorch Profiler",
        "ts": 1,
        "dur": 100,
    },
    [1, 2],
    {"ph": "X", "pid": None, "tid": 7, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "big", "pid": 1, "tid": 7, "ts": "3", "dur": 1},
    {
        "ph": "X",
        "cat": "cpu_op",
        "name": "wide",
        "pid": 1,
        "tid": 7,
        "ts": 3,
        "args": {"n": 1 << 70},
    },
    {"ph": "XY", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 7, "ts": 3, "id": "7"},
    {"cat": "cpu_op", "name": "no phase", "pid": 1.5, "tid": 7, "ts": 3, "args": 4},
]


def _document(events: list[Any]) -> bytes:
    head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}]}
    return json.dumps({**head, "traceEvents": events}).encode()


@pytest.mark.parametrize("at", range(len(_EVENTS)))
def test_python_scanner_gives_the_c_scanners_columns(
    monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """The same columns, except for the events the C scanner flags (F_BAD: it leaves them to
    the Python scanner, which reads them as `test_python_scanner_reads_odd_fields` says)."""
    c_on(monkeypatch, "_kscan")
    data = _document(_EVENTS[: at + 1])
    c_side = scanned(data)
    assert c_side is not None
    unread = np.flatnonzero(c_side.flags & scan.F_BAD)
    found = pyscan.scan_bytes(data, "t.json", [])
    assert _without(resolved_columns(found), unread) == _without(resolved_columns(c_side), unread)


def _without(columns: dict[str, Any], events: np.ndarray) -> dict[str, Any]:
    """`resolved_columns` less ``events`` (and their argument rows)."""
    out = dict(columns)
    drop = set(events.tolist())
    rows: list[Any] = []
    at = 0
    for event, count in enumerate(columns["nargs"]):
        if event not in drop:
            rows += columns["args"][at : at + count]
        at += count
    out["args"] = rows
    for name in ("ph", "flags", "cat", "name", "pid", "tid", "ts_ns", "dur_ns", "nargs"):
        out[name] = [v for e, v in enumerate(columns[name]) if e not in drop]
    out.pop("flow_ids")  # (the C scanner keeps the ids of flagged events)
    out.pop("keys")
    return out


def test_python_scanner_reads_odd_fields() -> None:
    """What the C scanner flags, the Python scanner reads as the Kineto rules say
    (decision 210), or flags F_BAD where no route reads the event."""
    found = pyscan.scan_bytes(_document(_EVENTS), "t.json", [])
    assert found is not None
    flags = found.flags.tolist()
    texts = found.texts
    null_pid = 9
    assert flags[null_pid] & scan.F_PID_STR and found.pid[null_pid] == scan.NO_ID
    assert flags[10] & scan.F_TS and found.ts_ns[10] == 3000  # "3": a numeric string
    assert flags[8] & scan.F_BAD and found.odd[8] == scan.NOT_AN_OBJECT  # [1, 2]
    assert flags[11] & scan.F_BAD  # an argument past 64 bits
    assert found.odd[12] == "events of unsupported phase 'XY'"
    assert not flags[12] & scan.F_ID  # "id": "7" is no flow id
    assert flags[13] & scan.F_BAD and not flags[13] & scan.F_ARGS  # pid 1.5, args 4
    assert 13 not in found.odd and texts[found.name[13]] == "no phase"


def test_python_scanner_reads_what_the_c_scanner_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 decimals, an exponent, a repeated key: C leaves them (F_BAD); Python reads them as the
    per-event rules do (`us_to_ns`, the last key wins)."""
    c_on(monkeypatch, "_kscan")
    data = (
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, '
        b'"ts": 1.2345, "dur": 2e1, "args": {"k": 1, "k": 2}}]}'
    )
    c_side = scanned(data)
    assert c_side is not None and c_side.flags[0] & scan.F_BAD
    found = pyscan.scan_bytes(data, "t.json", [])
    assert found is not None and not found.flags[0] & scan.F_BAD
    assert found.ts_ns.tolist() == [us_to_ns(1.2345)]
    assert found.dur_ns.tolist() == [20_000]
    assert found.args_of(0) == {"k": 2}


def test_python_scanner_reads_repaired_json() -> None:
    warnings: list[str] = []
    good = b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 2, "args": {"l": [1]}}]}'
    found = pyscan.scan_bytes(good.replace(b"}]}", b"},]}"), "t.json", warnings)
    assert warnings and "trailing comma" in warnings[0]
    assert resolved_columns(found) == resolved_columns(pyscan.scan_bytes(good, "t.json", []))
    assert pyscan.scan_bytes(b'{"other": 1}', "t.json", []) is None


def _trace_file(tmp_path: Path, ts: str) -> Path:
    path = tmp_path / "w.pt.trace.json"
    path.write_text(
        '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, '
        f'"ts": {ts}, "dur": 5}}]}}'
    )
    return path


def _route_taken(monkeypatch: pytest.MonkeyPatch, path: Path) -> str:
    taken: list[str] = []
    route = fast_route.route

    def spy(router: Any, classified: Any) -> None:
        taken.append("columns")
        route(router, classified)

    monkeypatch.setattr(fast_route, "route", spy)
    importer.kineto_to_columns(path)
    return taken[0] if taken else "per event"


def test_without_c_the_column_route_reads_the_trace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    c_off(monkeypatch)
    assert _route_taken(monkeypatch, _trace_file(tmp_path, "1.5")) == "columns"


def test_events_the_c_scanner_flags_take_the_column_route(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    c_on(monkeypatch, "_kscan")
    assert _route_taken(monkeypatch, _trace_file(tmp_path, "1.23456")) == "columns"


def test_innermost_op_in_python_equals_c(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    for _ in range(100):
        n = rng.randrange(30)
        begin = np.sort(np.array([rng.randrange(100) for _ in range(n)], np.int64))
        end = begin + np.array([rng.randrange(40) for _ in range(n)], np.int64)
        order = np.lexsort((-end, begin))
        begin, end = begin[order], end[order]
        times = np.sort(np.array([rng.randrange(150) for _ in range(rng.randrange(20))], np.int64))
        c_on(monkeypatch, "_kscan")
        in_c = fast_memory.innermost(begin, end, times)
        c_off(monkeypatch)
        assert fast_memory.innermost(begin, end, times).tolist() == in_c.tolist()


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "kineto").glob("*.json.gz")))
def test_python_scanner_equals_c_on_every_fixture(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    c_on(monkeypatch, "_kscan")
    data = gzip.decompress((FIXTURES / "kineto" / name).read_bytes())
    c_side = scanned(data)
    python = pyscan.scan_bytes(data, name, [])
    assert python is not None and c_side is not None
    assert python.texts == c_side.texts  # the same numbering, too
    assert resolved_columns(python) == resolved_columns(c_side)


@pytest.mark.parametrize("c", [True, False])
def test_damaged_traces_take_the_column_route(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, c: bool
) -> None:
    """Repaired JSON and a truncated gzip stream: the same columns, and the same warnings,
    as the per-event oracle gives."""
    (c_on if c else c_off)(monkeypatch, *(["_kscan"] if c else []))
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(400)
    ]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events})
    damaged = tmp_path / "damaged.json"
    damaged.write_text(text.replace("}]}", "},]}"))  # a trailing comma
    truncated = tmp_path / "truncated.json.gz"
    whole = gzip.compress(text.encode())
    truncated.write_bytes(whole[: len(whole) * 2 // 3])
    for path in (damaged, truncated):
        assert _route_taken(monkeypatch, path) == "columns"
        assert_same_profile(path)


def test_xspace_and_bytes_come_from_the_same_columns() -> None:
    from stepscope.xspace.columns_pb import encode_space
    from stepscope.xspace.kineto import (
        kineto_bytes_to_columns,
        kineto_bytes_to_xspace,
        kineto_to_columns,
        kineto_to_xspace,
    )
    from stepscope.xspace.proto.xplane_pb2 import XSpace

    path = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
    written = encode_space(kineto_to_columns(path))
    expected = XSpace.FromString(written)
    assert kineto_to_xspace(path) == expected
    assert kineto_bytes_to_xspace(path.read_bytes(), str(path)) == expected
    assert encode_space(kineto_bytes_to_columns(path.read_bytes(), str(path))) == written
