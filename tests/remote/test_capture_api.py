"""The web UI's capture API (`serve/capture_routes.py`) against a real server and workers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepscope.capture.remote.server import ProfilerServer
from stepscope.serve.app import start_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60), pytest.mark.usefixtures("training")]
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[httpx.Client]:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    running = start_server(logdir, use_cache=False)
    try:
        auth = {"Authorization": f"Token {running.token}"}  # captures need the server's token
        with httpx.Client(base_url=running.url, timeout=30, headers=auth) as client:
            yield client
    finally:
        running.stop()


def wait_done(ui: httpx.Client, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        job = ui.get(f"/api/capture/{job_id}").json()
        if job["state"] != "running":
            return job
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_capture_from_the_ui_adds_a_run(
    ui: httpx.Client, server: ProfilerServer, dead: str
) -> None:
    config = ui.get("/api/capture").json()
    assert config["enabled"] and config["defaults"]["duration_ms"] == 2000
    body = {
        "service_addr": f"grpc://{server.address}, grpc://{dead}",
        "duration_ms": 300,
        "num_tracing_attempts": 1,
        "host_tracer_level": 2,
        "device_tracer_level": 1,
        "python_tracer_level": 0,
    }
    started = ui.post("/api/capture", json=body)
    assert started.status_code == 202, started.text
    job = started.json()
    assert job["state"] == "running" and len(job["workers"]) == 2
    job = wait_done(ui, job["id"])
    assert job["state"] == "done" and job["run"] == job["session"]
    states = {w["address"]: w["state"] for w in job["workers"]}
    assert states == {server.address: "ok", dead: "failed"}
    runs = ui.get("/api/runs").json()["runs"]
    (run,) = [r for r in runs if r["run"] == job["run"]]
    assert run["hosts"] == [server.address.replace(":", "_")]


def test_all_workers_failing_is_reported(ui: httpx.Client, dead: str) -> None:
    body = {"service_addr": dead, "num_tracing_attempts": 1}
    job = wait_done(ui, ui.post("/api/capture", json=body).json()["id"])
    assert job["state"] == "failed" and job["run"] is None
    assert "No trace event was collected" in job["message"]
    assert "unavailable" in job["workers"][0]["reason"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "service_addr"),
        ({"service_addr": "http://x:1"}, "grpc://"),
        ({"service_addr": "x:1", "duration_ms": 0}, "duration_ms"),
        ({"service_addr": "x:1", "host_tracer_level": 7}, "host_tracer_level"),
        ({"service_addr": "x:1", "num_tracing_attempts": True}, "num_tracing_attempts"),
    ],
)
def test_bad_requests_are_refused(ui: httpx.Client, body: dict[str, Any], fragment: str) -> None:
    answer = ui.post("/api/capture", json=body)
    assert answer.status_code == 400 and fragment in answer.json()["error"]


def test_cross_site_requests_are_refused(ui: httpx.Client) -> None:
    body = '{"service_addr": "127.0.0.1:1"}'
    form = ui.post("/api/capture", content=body, headers={"Content-Type": "text/plain"})
    assert form.status_code == 415
    other = ui.post("/api/capture", content=body, headers={**JSON, "Origin": "http://evil.test"})
    assert other.status_code == 403
    site = ui.post("/api/capture", content=body, headers={**JSON, "Sec-Fetch-Site": "cross-site"})
    assert site.status_code == 403
    assert ui.get("/api/capture/999").status_code == 404


def test_capture_is_disabled_when_serving_a_single_file(fixtures_dir: Path) -> None:
    source = next((fixtures_dir / "tf" / "ctl_opt").rglob("*.xplane.pb"))
    running = start_server(source, use_cache=False)
    try:
        auth = {"Authorization": f"Token {running.token}"}
        with httpx.Client(base_url=running.url, timeout=30, headers=auth) as client:
            config = client.get("/api/capture").json()
            assert not config["enabled"] and "single file" in config["reason"]
            answer = client.post("/api/capture", json={"service_addr": "127.0.0.1:1"})
            assert answer.status_code == 400 and "single file" in answer.json()["error"]
    finally:
        running.stop()


def test_not_offered_through_wsgi_or_tensorboard(tmp_path: Path) -> None:
    from stepscope.serve.routes import build_routes
    from stepscope.serve.state import ServerState
    from stepscope.serve.wsgi import WsgiApp

    app = WsgiApp(build_routes(ServerState(tmp_path, use_cache=False)))
    answer = app.handle("GET", "/api/capture", "", {})
    assert answer.status == 200
    assert b'"offered":false' in answer.body and b'"enabled":false' in answer.body
    assert app.handle("POST", "/api/capture", "", {}).status == 405
