"""Pieces of remote capture that need no server: addresses, paths, options, progress."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stepscope.capture.remote.client import deadline_s
from stepscope.capture.remote.paths import (
    host_file,
    is_safe_session_id,
    parse_service_addresses,
    resolve_roots,
    writable_target,
)
from stepscope.capture.remote.progress import ProgressPrinter, WorkerState, progress_text
from stepscope.capture.remote.server import options_from_request
from stepscope.errors import StepscopeError
from stepscope.netaddr import is_loopback
from stepscope.xspace.proto import profiler_service_pb2 as pb


def test_service_addresses() -> None:
    assert parse_service_addresses("grpc://h1:1, h2:2,,grpc://h1:1") == ["h1:1", "h2:2"]
    assert parse_service_addresses(["grpc://[::1]:6009"]) == ["[::1]:6009"]
    for bad in ("", " , ", "h1", "h:0", "h:70000", "https://h:1", "h:1/x"):
        with pytest.raises(StepscopeError):
            parse_service_addresses(bad)
    assert host_file("localhost:6009") == "localhost_6009.xplane.pb"


def test_deadline_is_tensorflows() -> None:
    assert deadline_s(2000, 0) == 60
    assert deadline_s(50_000, 0) == 100
    assert deadline_s(2000, 3000) == 63


def test_session_ids() -> None:
    assert is_safe_session_id("2026_01_02_03_04_05")
    for bad in ("", ".", "..", "a/b", "../x", "a\\b", "x" * 300):
        assert not is_safe_session_id(bad)


def test_writable_target(tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    roots = resolve_roots([tmp_path / "ok"])
    target, why = writable_target(str(tmp_path / "ok" / "r"), "s", "h:1", roots)
    assert target == (tmp_path / "ok" / "r" / "s" / "h_1.xplane.pb").resolve() and not why
    assert writable_target(str(tmp_path / "ok"), "s", "h:1", ())[1].startswith("the server was")
    for root in (str(tmp_path / "no"), f"{tmp_path}/ok/../no", "rel", "gs://b/x", ""):
        target, why = writable_target(root, "s", "h:1", roots)
        assert target is None and why


def test_options_from_a_request() -> None:
    unset = pb.ProfileRequest(duration_ms=100)
    options, duration, start = options_from_request(unset)
    assert (options.host_tracer_level, options.device_tracer_level) == (2, 1)
    assert (duration, start) == (100, 0)
    request = pb.ProfileRequest(
        duration_ms=5,
        max_events=10,
        opts=pb.ProfileOptions(
            version=1,
            host_tracer_level=9,
            python_tracer_level=3,
            device_tracer_level=2,
            duration_ms=700,
            start_timestamp_ns=42,
        ),
    )
    options, duration, start = options_from_request(request)
    assert (options.host_tracer_level, options.python_tracer_level) == (3, 1)
    assert (options.device_tracer_level, options.max_events) == (1, 10)
    assert (duration, start) == (700, 42)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_display() -> None:
    workers = [WorkerState("h1:1", 3, 2.0), WorkerState("h2:2", 3, 2.0)]
    workers[0].state, workers[0].started = "capturing", 100.0
    workers[1].state, workers[1].attempt = "retrying", 1
    assert progress_text(workers, now=101.0) == "h1:1 1.0/2.0 s · h2:2 retrying (2/3)"
    assert progress_text(workers, now=102.5).startswith("h1:1 receiving (2.5 s)")
    out = FakeTerminal()
    clock = iter([100.5, 101.5])
    printer = ProgressPrinter(workers, out, now=lambda: next(clock))
    printer.show()
    printer.show()
    printer.close()
    text = out.getvalue()
    assert text.startswith("\rcapturing: h1:1 0.5/2.0 s · ")  # rewritten in place ...
    assert "\rcapturing: h1:1 1.5/2.0 s · h2:2 retrying (2/3)" in text
    assert text.endswith("\r")  # ... and the line is cleared at the end


def test_result_lines() -> None:
    ok = WorkerState("h:1", 3, 1.0, state="ok", path=Path("/l/h_1.xplane.pb"), size_bytes=2500)
    assert ok.line() == "h:1: ok -> /l/h_1.xplane.pb, 2.5 KB"
    failed = WorkerState("h:2", 3, 1.0, state="failed", attempt=3, reason="unavailable (x)")
    assert failed.line() == "h:2: failed after 3 attempt(s): unavailable (x)"
    assert "empty" in WorkerState("h:3", 3, 1.0, state="empty").line()


def test_loopback_detection() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"):
        assert is_loopback(host)
    for host in ("0.0.0.0", "::", "10.0.0.2", "example.com"):
        assert not is_loopback(host)
