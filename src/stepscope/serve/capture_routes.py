"""The Capture Profile dialog's API: start a remote capture into the served log directory.

    GET  /api/capture          {"enabled", "reason", "defaults", "limits"}
    POST /api/capture          JSON {service_addr, duration_ms, num_tracing_attempts, delay_ms,
                               host_tracer_level, device_tracer_level, python_tracer_level}
                               -> 202 {"id", "session", ...the job as GET /api/capture/{id}}
    GET  /api/capture/{id}     {"id", "state": running|done|failed, "session", "run",
                               "message", "workers": [{address, state, attempt, elapsed_s,
                               expected_s, reason, line, ...}]}

The capture runs on a background thread (`CaptureJob`); the dialog polls its state. It writes
``<logdir>/plugins/profile/<session>/``, which run discovery then lists as run ``<session>``.

This is the only route that changes anything, so it needs the server's token (see
`access`) and is guarded against other web pages driving it from a user's browser: the body
must be JSON (a cross-site form cannot send that
without a CORS preflight, which this server never grants), and a request whose ``Origin`` or
``Sec-Fetch-Site`` says it comes from another site is refused. Only the standalone server
(`stepscope serve`) has it; inside TensorBoard the dialog is not offered.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections import OrderedDict
from dataclasses import field
from typing import Any
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.remote.client import CaptureJob
from stepscope.errors import StepscopeError
from stepscope.model import fs
from stepscope.records import record
from stepscope.serve.access import BodyTooLarge, read_body
from stepscope.serve.http import error_response, json_response
from stepscope.serve.state import ServerState

MAX_BODY_BYTES = 64 * 1024
MAX_RUNNING = 4
KEEP_JOBS = 32
DEFAULTS = {
    "duration_ms": 2000,
    "num_tracing_attempts": 3,
    "delay_ms": 0,
    "host_tracer_level": 2,
    "device_tracer_level": 1,
    "python_tracer_level": 0,
}
LIMITS = {
    "duration_ms": (1, 600_000),
    "num_tracing_attempts": (1, 10),
    "delay_ms": (0, 600_000),
    "host_tracer_level": (0, 3),
    "device_tracer_level": (0, 1),
    "python_tracer_level": (0, 1),
}


class CaptureRequestError(StepscopeError):
    """A capture request with a missing or out-of-range field (HTTP 400)."""


def parse_request(body: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """(service addresses, numeric fields) of a POST body, every value checked."""
    addresses = body.get("service_addr")
    if not isinstance(addresses, str) or not addresses.strip():
        raise CaptureRequestError(
            "service_addr: give one or more grpc://host:port, comma-separated"
        )
    values: dict[str, int] = {}
    for name, default in DEFAULTS.items():
        value = body.get(name, default)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        low, high = LIMITS[name]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise CaptureRequestError(f"{name} must be an integer from {low} to {high}")
        values[name] = value
    return addresses, values


@record(frozen=False)
class _UiCapture:
    job: CaptureJob
    listed: threading.Event = field(default_factory=threading.Event)  # done, run discovered


class CaptureManager:
    """The captures started from the UI of one server (the last `KEEP_JOBS` are remembered)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.jobs: OrderedDict[str, _UiCapture] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def unavailable_reason(self) -> str:
        """Why captures cannot be written here, or "" when they can."""
        logdir = self.state.logdir
        if "://" in logdir:
            return f"the log directory {logdir} is not local; capture with `stepscope capture`"
        if not fs.isdir(logdir):
            return "the server shows a single file, not a log directory"
        if not os.access(logdir, os.W_OK):
            return f"the log directory {logdir} is not writable by the server"
        try:
            import grpc  # noqa: F401
        except ImportError:
            return "remote capture needs gRPC: pip install 'stepscope[remote]'"
        return ""

    def start(self, addresses: str, values: dict[str, int]) -> dict[str, Any]:
        reason = self.unavailable_reason()
        if reason:
            raise CaptureRequestError(reason)
        options = ProfilerOptions(
            host_tracer_level=values["host_tracer_level"],
            device_tracer_level=values["device_tracer_level"],
            python_tracer_level=values["python_tracer_level"],
            delay_ms=values["delay_ms"],
        )
        with self._lock:
            running = sum(1 for c in self.jobs.values() if not c.listed.is_set())
            if running >= MAX_RUNNING:
                raise CaptureRequestError(f"{running} captures are running; wait for one to end")
            job = CaptureJob(
                addresses,
                self.state.logdir,
                values["duration_ms"],
                options,
                values["num_tracing_attempts"],
            )
            job_id = str(next(self._ids))
            capture = _UiCapture(job)
            self.jobs[job_id] = capture
            while len(self.jobs) > KEEP_JOBS:
                self.jobs.popitem(last=False)
        threading.Thread(
            target=self._run, args=(capture,), name="stepscope-ui-capture", daemon=True
        ).start()
        return self.describe(job_id)

    def _run(self, capture: _UiCapture) -> None:
        try:
            capture.job.run()
        finally:
            # List the new run before the dialog hears "done" and asks for the run list.
            self.state.runs(max_age_s=0.0)
            capture.listed.set()

    def describe(self, job_id: str) -> dict[str, Any]:
        capture = self.jobs.get(job_id)
        if capture is None:
            raise KeyError(job_id)
        job, done = capture.job, capture.listed.is_set()
        workers = [w.as_dict() for w in job.workers]
        saved = sum(1 for w in job.workers if w.path is not None)
        if not done:
            state, message = "running", f"capturing from {len(workers)} worker(s)…"
        elif saved:
            state, message = "done", f"run {job.session_id}: {saved} of {len(workers)} saved"
        else:
            state, message = "failed", "No trace event was collected from any worker"
        return {
            "id": job_id,
            "state": state,
            "session": job.session_id,
            "run": job.session_id if done and saved else None,
            "run_dir": str(job.run_dir),
            "message": message,
            "workers": workers,
        }


def _same_origin(request: Request) -> bool:
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _send(result: Any) -> Response:
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", **result.headers}
    return Response(result.body, result.status, headers, result.content_type)


def capture_routes(manager: CaptureManager) -> list[Route]:
    async def config(request: Request) -> Response:
        reason = await run_in_threadpool(manager.unavailable_reason)
        return _send(
            json_response(
                {"enabled": not reason, "reason": reason, "defaults": DEFAULTS, "limits": LIMITS}
            )
        )

    async def start(request: Request) -> Response:
        if not _same_origin(request):
            return _send(error_response(403, "capture requests must come from this server's UI"))
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _send(error_response(415, "send the capture request as application/json"))
        try:
            raw = await read_body(
                request.stream, request.headers.get("content-length"), MAX_BODY_BYTES
            )
        except BodyTooLarge:
            return _send(error_response(413, f"capture request over {MAX_BODY_BYTES} bytes"))
        except TimeoutError:
            return _send(error_response(408, "the capture request body took too long to send"))
        try:
            body = json.loads(raw.decode("utf-8"))
            if not isinstance(body, dict):
                raise CaptureRequestError("the body must be a JSON object")
            addresses, values = parse_request(body)
            described = await run_in_threadpool(manager.start, addresses, values)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return _send(error_response(400, "the body is not valid UTF-8 JSON"))
        except (RecursionError, ValueError):  # nesting too deep, a 5,000-digit integer
            return _send(error_response(400, "the body is not a JSON object of plain values"))
        except StepscopeError as exc:
            return _send(error_response(400, str(exc)))
        return _send(json_response(described, 202))

    async def status(request: Request) -> Response:
        try:
            described = await run_in_threadpool(manager.describe, request.path_params["job"])
        except KeyError:
            return _send(error_response(404, "no such capture (the server keeps the last 32)"))
        return _send(json_response(described))

    return [
        Route("/api/capture", config, methods=["GET", "HEAD"], name="capture_config"),
        Route("/api/capture", start, methods=["POST"], name="capture_start"),
        Route("/api/capture/{job}", status, methods=["GET", "HEAD"], name="capture_status"),
    ]
