"""The profiler server: ``tensorflow.ProfilerService`` over gRPC, in the training process.

    server = stepscope.server.start(6009)              # loopback only, no token
    ...training...
    server.stop()

Profile records for ``opts.duration_ms`` (TensorFlow's client sets both durations; the
request's own ``duration_ms`` is the fallback) with the request's tracer levels (``opts.version``
0 means TensorFlow's defaults, as in TensorFlow), starting at ``opts.start_timestamp_ns`` if it
is in the future. Then:
- ``emit_xspace``: the XSpace goes back in ``ProfileResponse.xspace`` (stepscope's client asks
  for this, so it works across machines and with TensorFlow's server too);
- otherwise (TensorFlow's client, XProf's Capture Profile button) the server writes
  ``<repository_root>/<session_id>/<host_name>.xplane.pb`` itself when that path resolves
  inside one of ``allowed_roots``; when it does not (by default no root is allowed) it logs
  why and returns the XSpace as tool data ``xplane.pb``, which TensorFlow's client saves at
  that same path on its side.
``empty_trace`` is set when no event was recorded. A capture already running (a local
`stepscope.start` or another request) fails the RPC with ALREADY_EXISTS; TensorFlow's client
and ours retry on it. While the flight recorder runs in the process, a capture is served from
its recording (the capture's duration waited for, then saved from its ring: decision 576).

Terminate(session_id) ends the running capture with that id early; its Profile answers with
what was recorded so far. A client that cancels or times out ends the capture too.
Monitor answers a few lines of text (`monitor.monitor_text`).

Security: the server listens on 127.0.0.1 unless ``host`` says otherwise (then it warns).
With ``token``, every RPC must carry the metadata ``authorization: Bearer <token>`` or fails
with UNAUTHENTICATED (TensorFlow's client cannot send metadata: use no token with it, on a
loopback or otherwise trusted network).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from stepscope import log as user_log
from stepscope.capture import job
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.recorder.peers import PEER_TOOL, RECENT_TOOL, TRIGGER_PREFIX
from stepscope.capture.remote import require_grpc
from stepscope.capture.remote.monitor import StepSummary, monitor_text
from stepscope.capture.remote.paths import (
    MAX_DELAY_MS,
    MAX_DURATION_MS,
    is_safe_session_id,
    resolve_roots,
    writable_target,
)
from stepscope.capture.remote.recording import RemoteCapture, capture_xspace, is_empty
from stepscope.capture.session import ProfilerAlreadyRunningError
from stepscope.errors import StepscopeError
from stepscope.logdir import default_hostname
from stepscope.netaddr import is_loopback

grpc = require_grpc()

from stepscope.xspace.proto import profiler_service_pb2 as pb  # noqa: E402
from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc  # noqa: E402

log = logging.getLogger("stepscope.remote")

MAX_MONITOR_MS = 10 * 1000  # a Monitor call holds a server thread this long at most
MAX_SAVE_WAIT_S = 120.0  # a recorder save requested remotely is written within this
CONTROL_THREADS = 2  # server threads Monitor calls never take: Profile and Terminate get them
TF_DEFAULT_LEVELS = {"host": 2, "device": 1, "python": 0}


def _abort(context: Any, code: Any, message: str) -> NoReturn:
    context.abort(code, message)  # raises; the line below only tells type checkers so
    raise AssertionError("unreachable")


def options_from_request(request: Any) -> tuple[ProfilerOptions, int, int]:
    """(tracer options, duration_ms, start_timestamp_ns) of a ProfileRequest, levels clamped."""
    opts = request.opts
    duration_ms = int(opts.duration_ms or request.duration_ms)
    if opts.version == 0:  # an unset ProfileOptions: TensorFlow uses its defaults then
        host, device, python = TF_DEFAULT_LEVELS.values()
    else:
        host, device, python = (
            opts.host_tracer_level,
            opts.device_tracer_level,
            opts.python_tracer_level,
        )
    max_events = int(request.max_events) or None
    options = ProfilerOptions(
        host_tracer_level=min(int(host), 3),
        device_tracer_level=min(int(device), 1),
        python_tracer_level=min(int(python), 1),
        **({"max_events": max_events} if max_events else {}),
    )
    return options, duration_ms, int(opts.start_timestamp_ns)


class ProfilerServicer(pb_grpc.ProfilerServiceServicer):
    """The three RPCs; one capture at a time (the process has one session slot)."""

    def __init__(
        self, token: str | None, allowed_roots: Sequence[Path], max_workers: int = 8
    ) -> None:
        self._token = token.encode() if token else None
        # Monitor calls share what the control calls leave: 8 long Monitors used to fill the
        # 8 threads and a Terminate then waited for one of them to end.
        self._monitor_slots = threading.BoundedSemaphore(max(1, max_workers - CONTROL_THREADS))
        self._monitors: set[threading.Event] = set()
        self.allowed_roots = tuple(allowed_roots)
        self.hostname = default_hostname()
        self._lock = threading.Lock()
        self._running: dict[str, threading.Event] = {}  # session_id -> its stop signal
        self.last_steps: StepSummary | None = None

    # ---- helpers -----------------------------------------------------------------------------
    def _authorize(self, context: Any) -> None:
        if self._token is None:
            return
        given = dict(context.invocation_metadata()).get("authorization", "")
        scheme, _, value = str(given).partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            value.strip().encode(), self._token
        ):
            _abort(
                context,
                grpc.StatusCode.UNAUTHENTICATED,
                "missing or wrong token: send the metadata 'authorization: Bearer <token>'",
            )

    def stop_all(self) -> None:
        with self._lock:
            for event in [*self._running.values(), *self._monitors]:
                event.set()

    # ---- RPCs --------------------------------------------------------------------------------
    def Profile(self, request: Any, context: Any) -> Any:
        self._authorize(context)
        options, duration_ms, start_ns = options_from_request(request)
        if not 0 < duration_ms <= MAX_DURATION_MS:
            _abort(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"duration_ms must be from 1 to {MAX_DURATION_MS}, got {duration_ms}",
            )
        if start_ns and start_ns - time.time_ns() > MAX_DELAY_MS * 1_000_000:
            _abort(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"start_timestamp_ns is more than {MAX_DELAY_MS} ms ahead of this host's clock",
            )
        if PEER_TOOL in request.tools or RECENT_TOOL in request.tools:
            return self._recorder_save(request, context, duration_ms)
        from stepscope.capture import recorder as flight

        if flight.current() is not None:
            # the recorder holds the process's one recording (`stepscope server --recorder`):
            # a capture is served from it rather than refused (decision 576)
            return self._recorder_save(request, context, duration_ms, start_ns=start_ns)
        with self._session(request.session_id, context) as stop:
            try:
                capture = capture_xspace(
                    options,
                    duration_ms,
                    start_at_ns=start_ns,
                    stop=stop,
                    # its rank in its job names it, as a local capture's does (`vm.worker1`):
                    # the client names its file so (decision 1079)
                    hostname=job.detect().host_name(self.hostname),
                    repository_path=request.repository_root,
                )
            except ProfilerAlreadyRunningError as exc:
                _abort(context, grpc.StatusCode.ALREADY_EXISTS, str(exc))
            except StepscopeError as exc:  # e.g. the Python tracer cannot be installed
                _abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        self.last_steps = StepSummary.of(capture.steps_ns, time.time_ns()) or self.last_steps
        return self._response(request, capture)

    def _recorder_save(
        self, request: Any, context: Any, duration_ms: int, start_ns: int | None = None
    ) -> Any:
        """The flight recorder's last ``duration_ms``: saved here as a run (marked with who
        asked) and, for `stepscope capture --recent`, sent back too. With ``start_ns`` (a
        plain capture while the recorder runs: 0 is now) the ``duration_ms`` from then are
        waited for first, then saved and sent back as the capture: the recorder holds the
        process's one recording, and refusing with ALREADY_EXISTS had TensorFlow's client,
        XProf's button and ``stepscope capture`` retry in vain ("No trace event was
        collected", decision 576). The run has what the recorder records (no bridges, 10 Hz
        samples) and what its ring keeps (``keep_steps``)."""
        from stepscope.capture import recorder as flight
        from stepscope.capture.recorder.config import PEER, REMOTE
        from stepscope.logdir import host_file_name
        from stepscope.xspace.formats import load_xspace

        recorder = flight.current()
        if recorder is None:
            _abort(
                context,
                grpc.StatusCode.FAILED_PRECONDITION,
                "no flight recorder runs in this process: start one with "
                "stepscope.recorder.start(logdir) (or capture without --recent)",
            )
        run_name = request.session_id or None
        if run_name is not None and not is_safe_session_id(run_name):
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, "session_id must be a plain name")
        peer = PEER_TOOL in request.tools
        # a rank names itself; a capture client's host_name is this worker's address
        who = str((request.host_name if peer else context.peer()) or "?")[:200]
        if peer:
            fired = next(
                (t[len(TRIGGER_PREFIX) :] for t in request.tools if t.startswith(TRIGGER_PREFIX)),
                "?",
            )
            trigger, reason = PEER, f"{who} saved its last steps ({fired[:40]}); these are ours"
        elif start_ns is not None:
            trigger, reason = (
                REMOTE,
                f"a {duration_ms} ms capture from {who}, taken from the flight recorder",
            )
        else:
            trigger, reason = (
                REMOTE,
                f"stepscope capture --recent {duration_ms / 1e3:g}s from {who}",
            )
        window_ns = duration_ms * 1_000_000
        if start_ns is not None:
            window_ns = self._wait_window(request.session_id, context, duration_ms, start_ns)
            if not window_ns:
                # ended before its start: nothing was asked of the recording, and a save
                # would leave an empty run in the worker's log directory (decision 614)
                return pb.ProfileResponse(empty_trace=True)
        pending = recorder.save(
            trigger,
            reason,
            {"requested_by": who},
            at_once=True,
            run_name=run_name,
            window_ns=window_ns,
        )
        try:
            run_dir = pending.result(MAX_SAVE_WAIT_S)
        except Exception as exc:  # a failed save: the client is told why
            _abort(context, grpc.StatusCode.INTERNAL, f"the recorder could not save: {exc}")
        if run_dir is None:
            _abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, f"not saved: {pending.skipped}")
        if trigger == PEER:
            return pb.ProfileResponse(empty_trace=False)
        space = load_xspace(run_dir / host_file_name(recorder.hostname))
        capture = RemoteCapture(space, empty=is_empty(space), recorded_ns=duration_ms * 1_000_000)
        return self._response(request, capture)

    def _wait_window(self, session_id: str, context: Any, duration_ms: int, start_ns: int) -> int:
        """Waits for a capture's start (``start_ns``, 0: now) and its ``duration_ms``, ended
        early by Terminate(session_id) or the client going away; the time recorded since its
        start, ns."""
        with self._session(session_id, context) as stop:
            ahead_s = max(start_ns - time.time_ns(), 0) / 1e9 if start_ns else 0.0
            if ahead_s and stop.wait(ahead_s):
                return 0
            began = time.perf_counter_ns()
            stop.wait(duration_ms / 1e3)
            return max(time.perf_counter_ns() - began, 1)

    @contextmanager
    def _session(self, session_id: str, context: Any) -> Iterator[threading.Event]:
        """A capture's session while it runs: one at a time per id (ALREADY_EXISTS for a
        second), and its event set by Terminate(session_id) or by the client going away."""
        stop = threading.Event()
        with self._lock:
            if session_id in self._running:
                _abort(
                    context,
                    grpc.StatusCode.ALREADY_EXISTS,
                    f"session {session_id!r} is already being captured on this host",
                )
            self._running[session_id] = stop
        if not context.add_callback(stop.set):  # the client went away: stop recording
            stop.set()
        try:
            yield stop
        finally:
            with self._lock:
                self._running.pop(session_id, None)

    def _response(self, request: Any, capture: RemoteCapture) -> Any:
        response = pb.ProfileResponse(empty_trace=capture.empty)
        if request.emit_xspace:
            response.xspace.CopyFrom(capture.space)
            return response
        # this process's rank in its job names it, as a local capture's host file does
        host_name = (
            request.opts.override_hostname
            or request.host_name
            or job.detect().host_name(self.hostname)
        )
        target, why = writable_target(
            request.repository_root, request.session_id, host_name, self.allowed_roots
        )
        if target is not None:
            from stepscope.xspace.io import write_xspace

            try:
                write_xspace(capture.space, target)
                log.info("stepscope: wrote the profile to %s", target)
                return response
            except OSError as exc:
                why = f"writing {target} failed: {exc.strerror or exc}"
        log.warning("stepscope: profile returned to the client, not written here: %s", why)
        if not capture.empty:
            response.tool_data.add(name="xplane.pb", data=capture.space.SerializeToString())
        return response

    def Terminate(self, request: Any, context: Any) -> Any:
        self._authorize(context)
        with self._lock:
            event = self._running.get(request.session_id)
        if event is not None:
            event.set()
        return pb.TerminateResponse()

    def Monitor(self, request: Any, context: Any) -> Any:
        self._authorize(context)
        duration_ms = min(max(int(request.duration_ms), 0) or 1000, MAX_MONITOR_MS)
        if not self._monitor_slots.acquire(blocking=False):
            _abort(
                context,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "too many Monitor calls are running on this server; try again when one ends",
            )
        stop = threading.Event()
        context.add_callback(stop.set)
        with self._lock:
            self._monitors.add(stop)
        try:
            text = monitor_text(
                duration_ms, int(request.monitoring_level), request.timestamp, self.last_steps, stop
            )
        finally:
            with self._lock:
                self._monitors.discard(stop)
            self._monitor_slots.release()
        return pb.MonitorResponse(data=text)


_live: set[ProfilerServer] = set()
_exit_hook_installed = False


def _end_captures_at_exit() -> None:
    # gRPC's handler threads are not daemons: a capture still waiting out its duration would
    # hold the interpreter's exit for that long. End them (their clients get what was there).
    for server in list(_live):
        server.servicer.stop_all()


def _install_exit_hook() -> None:
    global _exit_hook_installed
    if _exit_hook_installed:
        return
    # threading's exit hooks run before the worker threads are joined (atexit's run after);
    # registered after concurrent.futures' own, ours runs first.
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(_end_captures_at_exit)
    else:  # pragma: no cover - every CPython since 3.9 has it
        import atexit

        atexit.register(_end_captures_at_exit)
    _exit_hook_installed = True


class ProfilerServer:
    """A running profiler server: ``port``, ``address`` (host:port to capture from), ``stop()``."""

    def __init__(self, grpc_server: Any, servicer: ProfilerServicer, host: str, port: int) -> None:
        self._server = grpc_server
        self.servicer = servicer
        self.host = host
        self.port = port
        self.address = f"{'[' + host + ']' if ':' in host else host}:{port}"
        _live.add(self)
        _install_exit_hook()

    def stop(self, grace_s: float = 2.0) -> None:
        """End running captures (their clients get what was recorded), then stop serving."""
        _live.discard(self)
        self.servicer.stop_all()
        self._server.stop(grace_s).wait(grace_s + 1.0)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the server stops (for a script that only serves); False on timeout."""
        return bool(self._server.wait_for_termination(timeout_s))

    def __enter__(self) -> ProfilerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<stepscope ProfilerServer grpc://{self.address}>"


def start(
    port: int,
    host: str = "127.0.0.1",
    token: str | None = None,
    allowed_roots: Iterable[str | os.PathLike[str]] = (),
    *,
    max_workers: int = 8,
) -> ProfilerServer:
    """Serve ``tensorflow.ProfilerService`` on ``host:port`` (port 0: any free port)."""
    if not isinstance(port, int) or not 0 <= port < 65536:
        raise StepscopeError(f"stepscope.server.start: port must be 0-65535, got {port!r}")
    if not is_loopback(host):
        user_log.warn(
            f"stepscope: warning: the profiler server listens on {host}: anyone who can reach "
            "this machine on that port can capture profiles of this process"
            + ("" if token else " (pass token=... to require one)")
        )
    if max_workers < CONTROL_THREADS + 1:
        raise StepscopeError("stepscope.server.start: max_workers must be at least 3")
    servicer = ProfilerServicer(token, resolve_roots(allowed_roots), max_workers)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="stepscope-grpc"),
        # Without this gRPC lets a second server bind the same port (SO_REUSEPORT) and the
        # two share the requests at random.
        options=[("grpc.so_reuseport", 0)],
    )
    pb_grpc.add_ProfilerServiceServicer_to_server(servicer, server)
    bind = f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(bind)
    except RuntimeError:
        bound = 0
    if not bound:
        server.stop(0)
        hint = "; pass port=0 for any free port" if port else ""
        raise StepscopeError(f"cannot listen on {bind} (in use or not an address here){hint}")
    server.start()
    return ProfilerServer(server, servicer, host.strip("[]"), bound)
