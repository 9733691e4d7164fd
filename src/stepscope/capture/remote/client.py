"""Capture from profiler servers (stepscope's or TensorFlow's), one or many workers at once.

    result = stepscope.client.trace("grpc://h1:6009,grpc://h2:6009", "logs", 2000)
    # logs/plugins/profile/<session>/h1_6009.xplane.pb, h2_6009.xplane.pb

As TensorFlow's client: one Profile RPC per worker, all in parallel with one session id
(the local time ``YYYY_MM_DD_HH_MM_SS``, suffixed ``_2``... if that run already holds one of
these hosts), a deadline of max(60 s, 2 x duration) + delay per attempt, and up to
``num_tracing_attempts`` attempts per worker on UNAVAILABLE or ALREADY_EXISTS (with a backoff
of 0.5, 1, 2, 4 s). With a delay, every worker is asked to start at the same wall-clock time
(``start_timestamp_ns``). Unlike TensorFlow's client, ours asks for the XSpace in the answer
(``emit_xspace``) and writes the files itself, so the workers need no access to ``logdir``.

Each worker ends ok (file written), empty (it answered but recorded no event) or failed (with
the reason); `trace` raises `NoTraceCollectedError` only when no worker produced data.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from stepscope import log, tmpfiles
from stepscope.capture.options import ProfilerOptions, resolve_options
from stepscope.capture.recorder.peers import RECENT_TOOL
from stepscope.capture.remote import require_grpc
from stepscope.capture.remote.naming import names_to_use, worker_name
from stepscope.capture.remote.paths import (
    MAX_DELAY_MS,
    MAX_DURATION_MS,
    host_file,
    is_safe_session_id,
    new_session_id,
    parse_service_addresses,
    repository_root,
)
from stepscope.capture.remote.progress import (
    CAPTURING,
    EMPTY,
    FAILED,
    OK,
    RETRYING,
    ProgressPrinter,
    WorkerState,
)
from stepscope.errors import StepscopeError
from stepscope.records import record
from stepscope.store import location

MIN_DEADLINE_S = 60.0
MAX_MESSAGE_BYTES = 2**31 - 1  # profiles can be large; gRPC's default limit is 4 MB
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_http_proxy", 0),  # workers are reached directly, never through a web proxy
]


class NoTraceCollectedError(StepscopeError):
    """No worker produced data; ``result`` says what happened to each."""

    def __init__(self, message: str, result: TraceResult) -> None:
        super().__init__(message)
        self.result = result


@record(frozen=False)
class TraceResult:
    """The run a capture wrote and the outcome of each worker."""

    session_id: str
    run_dir: Path
    workers: list[WorkerState]

    @property
    def has_data(self) -> bool:
        return any(w.state == OK for w in self.workers)

    @property
    def paths(self) -> list[Path]:
        return [w.path for w in self.workers if w.path is not None]

    def lines(self) -> list[str]:
        return [w.line() for w in self.workers]


def deadline_s(duration_ms: int, delay_ms: int) -> float:
    """TensorFlow's client deadline: max(60 s, 2 x duration) + delay."""
    return max(MIN_DEADLINE_S, 2 * duration_ms / 1e3) + delay_ms / 1e3


def _metadata(token: str | None) -> list[tuple[str, str]] | None:
    return [("authorization", f"Bearer {token}")] if token else None


def _unique_session(root: Path, base: str, addresses: list[str]) -> str:
    session, n = base, 2
    while any((root / session / host_file(a)).exists() for a in addresses):
        session, n = f"{base}_{n}", n + 1
    return session


def fallback_dir() -> Path:
    """Where recordings go when the log directory cannot be written: the user's cache
    directory (the store's root: ``$STEPSCOPE_CACHE_DIR`` first), as a log directory of its
    own."""
    return repository_root(location.root() / "unsaved_captures")


def _reason(grpc: Any, err: Any) -> str:
    code, details = err.code(), (err.details() or "").strip()
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"unavailable (no profiler server there, or it went away): {details}"
    if code == grpc.StatusCode.ALREADY_EXISTS:
        return f"busy, another capture is running there: {details}"
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return f"refused, wrong or missing token (--token): {details}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "no answer before the deadline"
    return f"{code.name}: {details}"


class CaptureJob:
    """One capture from several workers; `run` blocks, `workers` shows progress meanwhile."""

    def __init__(
        self,
        service_addr: str | list[str],
        logdir: str | os.PathLike[str],
        duration_ms: int,
        options: ProfilerOptions | None = None,
        num_tracing_attempts: int = 3,
        *,
        session_id: str | None = None,
        token: str | None = None,
        recent: bool = False,
    ) -> None:
        if not isinstance(duration_ms, int) or not 0 < duration_ms <= MAX_DURATION_MS:
            raise StepscopeError(
                f"duration_ms must be an integer from 1 to {MAX_DURATION_MS} (10 minutes), "
                f"got {str(duration_ms)[:30]}"
            )
        if session_id is not None and not is_safe_session_id(session_id):
            raise StepscopeError(
                f"session id {session_id[:80]!r} must be one plain directory name (letters, "
                "digits, '_', '.', '-'): the run is written inside the log directory"
            )
        if "://" in os.fspath(logdir):
            raise StepscopeError(f"logdir {os.fspath(logdir)!r}: capture writes to a local path")
        self.grpc = require_grpc()
        self.addresses = parse_service_addresses(service_addr)
        self.options = resolve_options(options)
        if (self.options.delay_ms or 0) > MAX_DELAY_MS:
            raise StepscopeError(f"delay_ms must be at most {MAX_DELAY_MS} (10 minutes)")
        self.duration_ms = duration_ms
        # the flight recorder's last duration_ms instead of a new recording (see
        # stepscope.capture.recorder.peers)
        self.recent = recent
        self.delay_ms = self.options.delay_ms or 0
        self.attempts_max = max(1, int(num_tracing_attempts))
        self.token = token
        self.root = repository_root(logdir).absolute()
        self.session_id = _unique_session(self.root, session_id or new_session_id(), self.addresses)
        self.run_dir = self.root / self.session_id
        expected_s = (self.delay_ms + duration_ms) / 1e3
        self.workers = [WorkerState(a, self.attempts_max, expected_s) for a in self.addresses]
        self.terminated = threading.Event()
        self.finished = threading.Event()
        self._threads: list[threading.Thread] = []
        # each saved worker's name by its own recording (`naming.worker_name`)
        self._names: dict[str, tuple[str, bool]] = {}

    def _request(self, address: str, start_ns: int) -> Any:
        from stepscope.xspace.proto import profiler_service_pb2 as pb

        o = self.options
        opts = pb.ProfileOptions(
            version=1,
            include_dataset_ops=True,
            host_tracer_level=o.host_tracer_level,
            device_tracer_level=o.device_tracer_level,
            python_tracer_level=o.python_tracer_level,
            duration_ms=self.duration_ms,
            start_timestamp_ns=start_ns,
            repository_path=str(self.root),
            session_id=self.session_id,
        )
        return pb.ProfileRequest(
            duration_ms=self.duration_ms,
            max_events=o.max_events,
            tools=[RECENT_TOOL] if self.recent else ["xplane.pb"],
            opts=opts,
            repository_root=str(self.root),
            session_id=self.session_id,
            host_name=address,
            emit_xspace=True,
        )

    def run(self) -> TraceResult:
        """Capture from every worker in parallel; returns when all are done."""
        start_ns = time.time_ns() + self.delay_ms * 1_000_000 if self.delay_ms else 0
        for worker in self.workers:
            thread = threading.Thread(
                target=self._capture, args=(worker, start_ns), daemon=True, name="stepscope-capture"
            )
            self._threads.append(thread)
            thread.start()
        self.wait()
        return self.result()

    def wait(self, timeout_s: float | None = None) -> bool:
        end = None if timeout_s is None else time.monotonic() + timeout_s
        for thread in self._threads:
            # Short joins keep the main thread responsive to Ctrl-C.
            while thread.is_alive() and (end is None or time.monotonic() < end):
                thread.join(0.1)
        done = not any(t.is_alive() for t in self._threads)
        if done and not self.finished.is_set():
            self._name_files()
            self.finished.set()
        return done

    def _name_files(self) -> None:
        """Renames the saved files after the workers as their recordings name them
        (`stepscope.capture.remote.naming`), when those names tell them apart; else each
        keeps its address."""
        saved = [w for w in self.workers if w.path is not None and w.path.parent == self.run_dir]
        found = {w.address: self._names[w.address] for w in saved if w.address in self._names}
        if len(found) != len(saved):
            return
        names = names_to_use(found)
        targets = {w.address: self.run_dir / host_file(names[w.address]) for w in saved if names}
        if not names or any(t.exists() for t in targets.values()):
            return
        for worker in saved:
            try:
                os.replace(worker.path, targets[worker.address])  # type: ignore[arg-type]
            except OSError as exc:  # kept under its address, and said so
                worker.reason = f"not renamed {names[worker.address]}: {exc.strerror or exc}"
                continue
            worker.path = targets[worker.address]

    def result(self) -> TraceResult:
        return TraceResult(self.session_id, self.run_dir, self.workers)

    def terminate(self) -> None:
        """Ask every worker still capturing to stop now and answer with what it has."""
        from stepscope.xspace.proto import profiler_service_pb2 as pb
        from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc

        self.terminated.set()
        for worker in self.workers:
            if worker.state != CAPTURING:
                continue
            with (
                self.grpc.insecure_channel(worker.address, CHANNEL_OPTIONS) as channel,
                contextlib.suppress(self.grpc.RpcError),
            ):
                pb_grpc.ProfilerServiceStub(channel).Terminate(
                    pb.TerminateRequest(session_id=self.session_id),
                    timeout=5.0,
                    metadata=_metadata(self.token),
                )

    def _capture(self, worker: WorkerState, start_ns: int) -> None:
        try:
            self._capture_with_retries(worker, start_ns)
        except Exception as exc:  # a worker thread never dies with a traceback
            worker.state, worker.ended = FAILED, time.monotonic()
            worker.reason = f"{type(exc).__name__}: {str(exc)[:200]}"

    def _capture_with_retries(self, worker: WorkerState, start_ns: int) -> None:
        from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc

        grpc = self.grpc
        retryable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ALREADY_EXISTS)
        with grpc.insecure_channel(worker.address, CHANNEL_OPTIONS) as channel:
            stub = pb_grpc.ProfilerServiceStub(channel)
            for attempt in range(1, self.attempts_max + 1):
                if attempt > 1 and self.delay_ms:  # a retry starts its own delay
                    start_ns = time.time_ns() + self.delay_ms * 1_000_000
                worker.attempt, worker.state = attempt, CAPTURING
                worker.started, worker.ended = time.monotonic(), 0.0
                try:
                    response = stub.Profile(
                        self._request(worker.address, start_ns),
                        timeout=deadline_s(self.duration_ms, self.delay_ms),
                        metadata=_metadata(self.token),
                    )
                except grpc.RpcError as err:
                    worker.reason = _reason(grpc, err)
                    stream_removed = err.code() == grpc.StatusCode.UNKNOWN and (
                        err.details() == "Stream removed"
                    )
                    last = attempt == self.attempts_max or self.terminated.is_set()
                    if (err.code() in retryable or stream_removed) and not last:
                        worker.state = RETRYING
                        self.terminated.wait(min(0.5 * 2 ** (attempt - 1), 4.0))
                        continue
                    worker.state, worker.ended = FAILED, time.monotonic()
                    return
                self._save(worker, response)
                worker.ended = time.monotonic()
                return

    def _save(self, worker: WorkerState, response: Any) -> None:
        if response.empty_trace:
            worker.state, worker.reason = EMPTY, ""
            return
        data = b""
        if response.HasField("xspace"):
            data = response.xspace.SerializeToString()
            self._names[worker.address] = worker_name(response.xspace, worker.address)
        else:
            data = next((t.data for t in response.tool_data if t.name.endswith("xplane.pb")), b"")
            space = _space(data) if data else None
            if space is not None:
                self._names[worker.address] = worker_name(space, worker.address)
        target = self.run_dir / host_file(worker.address)
        if data:
            try:
                tmpfiles.write_bytes(target, data)
                worker.path, worker.size_bytes, worker.reason = target, len(data), ""
            except OSError as exc:  # the recording is kept, elsewhere, and we say where
                fallback = fallback_dir() / self.session_id / host_file(worker.address)
                why = f"cannot write {target} ({exc.strerror or exc})"
                try:
                    tmpfiles.write_bytes(fallback, data)
                except OSError as again:
                    worker.state = FAILED
                    worker.reason = f"{why}, nor {fallback} ({again.strerror or again})"
                    return
                worker.path, worker.size_bytes = fallback, len(data)
                worker.reason = f"{why}; saved to {fallback}"
        else:  # an older server that wrote the file on its side (emit_xspace ignored)
            worker.path = target if target.exists() else None
            worker.reason = "" if worker.path else "the server wrote the file on its own disk"
        worker.state = OK


def _space(data: bytes) -> Any:
    """The XSpace in a worker's answer, or None (it is saved as it came, by its address)."""
    from google.protobuf.message import DecodeError

    from stepscope.xspace.proto.xplane_pb2 import XSpace

    space = XSpace()
    try:
        space.ParseFromString(data)
    except DecodeError:
        return None
    return space


def trace(
    service_addr: str,
    logdir: str | os.PathLike[str],
    duration_ms: int,
    worker_list: str = "",
    num_tracing_attempts: int = 3,
    options: ProfilerOptions | None = None,
    *,
    session_id: str | None = None,
    token: str | None = None,
    recent: bool = False,
    verbose: bool = True,
    progress: bool | None = None,
    stream: IO[str] | None = None,
) -> TraceResult:
    """Capture ``duration_ms`` from the workers in ``service_addr`` (or ``worker_list`` if set),
    both comma-separated ``grpc://host:port`` lists. With ``verbose``, tells one result line
    per worker to the ``stepscope`` logger (or writes it on ``stream`` when given), and shows
    a progress display on ``stream`` (stderr) while waiting (``progress``: default on a
    terminal only, and not while the logger is silenced). Ctrl-C asks the workers to stop
    early and keeps what they had.
    With ``recent``, each worker's flight recorder sends its last ``duration_ms`` instead.
    """
    out = stream or sys.stderr

    def say(line: str) -> None:
        if stream is None:
            log.info(line)
        else:
            stream.write(line + "\n")
            stream.flush()

    job = CaptureJob(
        worker_list or service_addr,
        logdir,
        duration_ms,
        options,
        num_tracing_attempts,
        session_id=session_id,
        token=token,
        recent=recent,
    )
    tty = bool(getattr(out, "isatty", lambda: False)())
    if progress is None:
        progress = tty and (stream is not None or log.logger().isEnabledFor(logging.INFO))
    show = verbose and progress
    if verbose and recent:
        say(
            f"stepscope: asking {len(job.workers)} worker(s)' flight recorders for their last "
            f"{duration_ms} ms, into {job.run_dir}"
        )
    elif verbose:
        say(
            f"stepscope: capturing {duration_ms} ms from {len(job.workers)} worker(s) "
            f"into {job.run_dir}"
        )
    with ProgressPrinter(job.workers, out) if show else contextlib.nullcontext():
        try:
            job.run()
        except KeyboardInterrupt:
            out.write("\n")  # ends the progress line
            say("stepscope: stopping the capture early")
            job.terminate()
            job.wait(10.0)
    result = job.result()
    if any(w.path is not None and w.path.parent == job.run_dir for w in result.workers):
        tmpfiles.sweep_stale_runs(job.run_dir.parent)  # leftovers of killed saves
    if verbose:
        for line in result.lines():
            say(line)
    if not result.has_data:
        raise NoTraceCollectedError(
            "No trace event was collected: no worker answered with trace data "
            f"({', '.join(f'{w.address} {w.state}' for w in result.workers)})",
            result,
        )
    return result


def monitor(
    service_addr: str,
    duration_ms: int,
    level: int = 1,
    *,
    token: str | None = None,
    timestamp: bool = True,
) -> str:
    """The server's text summary over ``duration_ms`` (stepscope's server: CPU use, steps)."""
    from stepscope.xspace.proto import profiler_service_pb2 as pb
    from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc

    grpc = require_grpc()
    (address,) = parse_service_addresses(service_addr)[:1]
    request = pb.MonitorRequest(
        duration_ms=duration_ms, monitoring_level=level, timestamp=timestamp
    )
    with grpc.insecure_channel(address, CHANNEL_OPTIONS) as channel:
        try:
            response = pb_grpc.ProfilerServiceStub(channel).Monitor(
                request, timeout=deadline_s(duration_ms, 0), metadata=_metadata(token)
            )
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                raise StepscopeError(
                    f"{address} does not implement Monitor (TensorFlow's server does not)"
                ) from None
            raise StepscopeError(f"monitor {address}: {_reason(grpc, err)}") from None
    return str(response.data)
