"""Small Kineto traces read both ways, for the route's edge tests (test_kineto_route_*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import kineto_to_columns
from tests.support.kineto import describe
from tests.support.native import c_and_python


def kineto_op(name: str, **fields: Any) -> dict[str, Any]:
    """A host op of 10 us at ts 1000 on pid 1, tid 2; ``fields`` override."""
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 1,
        "tid": 2,
        "ts": 1000,
        "dur": 10,
    } | fields


def read_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: list[Any], **header: Any
) -> dict[str, Any]:
    """The trace of ``events`` as read with the C scanner, asserted equal to the Python
    scanner's reading (`describe`)."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **header}))

    def profile() -> Any:
        return describe(profile_from_columns(kineto_to_columns(path), str(path), None))

    fast, slow = c_and_python(monkeypatch, profile, "_kscan")
    assert fast == slow
    return fast
