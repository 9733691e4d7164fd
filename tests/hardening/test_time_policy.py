"""Issue #28 item 6: one int64 time policy (decision 101). Every event's start and end lie
within +-2**62 ns: a Kineto event beyond it is skipped and counted, an XSpace file with one
is refused naming the line, and the trace viewer's windows stay within it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from stepscope import limits
from stepscope.cli.main import main
from stepscope.errors import ProfileFormatError
from tests.support.kineto import assert_same_profile

US_EDGE = 4.6e15  # microseconds: just inside 2**62 ns


def _op(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def _kineto(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    path.write_text(json.dumps({**header, "traceEvents": events}))
    return path


@pytest.mark.parametrize(
    ("events", "header"),
    [
        ([_op("b", 5, 10**17)], {}),  # an end beyond int64: the whole trace was refused
        ([_op("b", 5, 4.5e15)], {"baseTimeNanoseconds": 4_600_000_000_000_000_000}),
        ([_op("b", 10**14, 10)], {"baseTimeNanoseconds": 4_600_000_000_000_000_000}),
        ([_op("b", 5, 1e13)], {}),  # 116 days: fits int64 ns but not XSpace's picoseconds
    ],
    ids=["end-beyond-int64", "end-beyond-policy", "base-beyond", "xspace-duration"],
)
def test_kineto_events_beyond_the_policy_are_skipped_one_by_one(
    tmp_path: Path,
    events: list[dict[str, Any]],
    header: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = [_op("ProfilerStep#1", 0, 100), _op("a", 10, 5)]
    trace = _kineto(tmp_path / "t.json", good + events, **header)
    assert main(["info", str(trace), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "ProfilerStep#1" in out and "skipped 1 events" in out
    assert_same_profile(trace)  # the column and XSpace paths agree


def _edge_xspace(tmp_path: Path, start_ns: int) -> Path:
    from stepscope.xspace.builder import XSpaceBuilder
    from stepscope.xspace.io import write_xspace

    builder = XSpaceBuilder(hostname="h")
    plane = builder.plane("/host:CPU")
    plane.line(1, "main").event("op", start_ns, 1000, None)
    plane.line(2, "other").event("op", 0, 1000, None)
    target = tmp_path / "logs" / "plugins" / "profile" / "r" / "h.xplane.pb"
    write_xspace(builder.build(), target)
    return target


@pytest.mark.parametrize("start_ns", [(1 << 63) - 10_000_000, -(1 << 63) + 5, -(1 << 62)])
def test_xspace_beyond_the_policy_is_one_line_naming_the_line(
    tmp_path: Path, start_ns: int
) -> None:
    from stepscope.model import profile_from_bytes

    path = _edge_xspace(tmp_path, start_ns)
    with pytest.raises(ProfileFormatError, match=r"line 'main' has events at .* beyond the"):
        profile_from_bytes(path.read_bytes(), source=str(path))


def test_xspace_within_the_policy_opens(tmp_path: Path) -> None:
    from stepscope.model import profile_from_bytes

    path = _edge_xspace(tmp_path, (1 << 62) - 10_000)
    assert profile_from_bytes(path.read_bytes()).n_events == 2


@pytest.mark.parametrize(
    "query", ["t0=-1e18&t1=1e18", "t0=-1e300&t1=1e300", "t0=0&t1=1e19", "t0=1e19&t1=2e19"]
)
def test_trace_viewer_windows_stay_within_the_policy(tmp_path: Path, query: str) -> None:
    """A trace spanning most of the allowed range: zoomed-out windows reached past int64
    (OverflowError, HTTP 500)."""
    from stepscope.serve.app import create_app, server_names
    from stepscope.serve.state import ServerState

    run = tmp_path / "logs" / "r"
    run.mkdir(parents=True)
    kernel = {
        "ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": US_EDGE,
        "dur": US_EDGE, "args": {"stream": 7, "device": 0},
    }  # fmt: skip
    far = [_op("ProfilerStep#1", -US_EDGE, 100), _op("a", 10, 5), kernel]
    _kineto(run / "h.pt.trace.json", far)
    logdir = tmp_path / "logs"
    app = create_app(
        logdir,
        state=ServerState(logdir, use_cache=False),
        allowed_hosts=server_names("127.0.0.1", ()),
        token="t",
        port=6006,
    )
    with TestClient(app, base_url="http://127.0.0.1:6006") as client:
        for endpoint in ("window", "select", "search"):
            url = f"/api/tool/trace_viewer/{endpoint}?run=r&res=100&q=a&{query}"
            response = client.get(url)
            assert response.status_code in (200, 400), (endpoint, response.text[:300])


def test_clamp_keeps_differences_within_int64() -> None:
    lo, hi = limits.clamp_time_ns(-(10**30)), limits.clamp_time_ns(10**30)
    assert hi - lo < 1 << 63 and lo < 0 < hi
