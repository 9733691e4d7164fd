"""Rare Kineto forms the column route skips with a counted warning (decision 184).

Each trace is otherwise ordinary; the odd event must not stop the import, must not reach
the profile, and must be named in the warnings -- with the C scanner and without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import kineto_to_columns, kineto_to_xspace
from tests.support.kineto import describe
from tests.support.native import c_and_python

_GOOD = {"Bytes": 8, "Device Type": 1, "Device Id": 0, "Total Allocated": 8, "Total Reserved": 16}


def _memory(ts: Any = 1005, pid: Any = 1, tid: Any = 2, **args: Any) -> dict[str, Any]:
    return {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "args": {**_GOOD, **args},
    }


def _trace(tmp_path: Path, odd: dict[str, Any], **header: Any) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1000, "dur": 10},
        _memory(),
        odd,
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **header}))
    return path


@pytest.mark.parametrize(
    ("odd", "header", "what"),
    [
        (_memory(tid="worker"), {}, "[memory] events on a thread named by a string"),
        (_memory(pid="host"), {}, "[memory] events on a thread named by a string"),
        (
            _memory(ts=3000),
            {"baseTimeNanoseconds": (1 << 62) - 2_000_000},
            "[memory] events with times beyond",
        ),
        (_memory(Bytes=1e19), {}, "[memory] events with a value past int64"),
        (_memory(**{"Total Allocated": -1e300}), {}, "[memory] events with a value past int64"),
        (_memory(**{"Device Type": [1]}), {}, "[memory] events with a value past int64"),
    ],
    ids=["str tid", "str pid", "time", "float bytes", "float total", "list device type"],
)
def test_odd_memory_events_are_skipped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: Any, header: Any, what: str
) -> None:
    path = _trace(tmp_path, odd, **header)

    def profile() -> Any:
        return describe(profile_from_columns(kineto_to_columns(path), str(path), None))

    fast, slow = c_and_python(monkeypatch, profile, "_kscan")
    assert fast == slow
    assert any(w.startswith(f"skipped 1 {what}") for w in fast["warnings"]), fast["warnings"]
    memory = [line for line in fast["lines"] if line.name == "Memory"]
    assert len(memory) == 1
    allocations = [e for e in fast["events"] if e[1] == "MemoryAllocation"]
    assert len(allocations) == 1  # the good one, in the op it happens in
    space = kineto_to_xspace(path)
    assert any(w.startswith(f"skipped 1 {what}") for w in space.warnings)


@pytest.mark.parametrize("tid", ["4294967296", "99999999999999999999999"])
def test_host_events_on_a_thread_id_past_int32_are_skipped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tid: str
) -> None:
    odd = {"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": tid, "ts": 1000, "dur": 1}
    path = _trace(tmp_path, odd)

    def profile() -> Any:
        return describe(profile_from_columns(kineto_to_columns(path), str(path), None))

    fast, slow = c_and_python(monkeypatch, profile, "_kscan")
    assert fast == slow
    assert "skipped 1 host events with a thread id beyond int32" in fast["warnings"]
    assert "far" not in [e[1] for e in fast["events"]]
    assert "aten::mm" in [e[1] for e in fast["events"]]
