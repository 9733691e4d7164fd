"""The profiler server and client in one process: protocol, options, permissions, errors.

Short captures (300-500 ms) against servers on free loopback ports; a background thread of
steps (the ``training`` fixture) gives them something to record.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

import stepscope
import stepscope.client
import stepscope.server
from stepscope.capture import session as capture_session
from stepscope.capture.remote.client import CaptureJob, NoTraceCollectedError
from stepscope.capture.remote.server import ProfilerServer
from stepscope.errors import StepscopeError
from stepscope.xspace.proto import profiler_service_pb2 as pb
from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc
from tests.remote.helpers import Training, read_saved, read_space
from tests.support.clock import ManualAlarms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60), pytest.mark.usefixtures("training")]


def profile_rpc(address: str, request: Any, token: str | None = None) -> Any:
    metadata = [("authorization", f"Bearer {token}")] if token else None
    with grpc.insecure_channel(address) as channel:
        return pb_grpc.ProfilerServiceStub(channel).Profile(request, timeout=30, metadata=metadata)


def request(duration_ms: int = 300, **fields: Any) -> Any:
    opts = pb.ProfileOptions(version=1, host_tracer_level=2, duration_ms=duration_ms)
    return pb.ProfileRequest(duration_ms=duration_ms, opts=opts, **fields)


def test_capture_from_one_worker(
    server: ProfilerServer, tmp_path: Path, alarms: ManualAlarms, training: Training
) -> None:
    """A 400 ms capture records the training loop's steps for the duration asked: the
    duration's alarm is 0.4 s, and the test rings it once a few steps were recorded (how
    many steps a loaded machine runs in 400 ms is no property of the capture)."""
    before = time.time_ns()
    result: list[Any] = []
    runner = threading.Thread(
        target=lambda: result.append(
            stepscope.client.trace(f"grpc://{server.address}", tmp_path, 400, verbose=False)
        )
    )
    runner.start()
    _wait_for(lambda: bool(alarms.pending()) and capture_session.is_recording())
    assert alarms.pending() == [0.4]
    recorded_from = training.steps
    _wait_for(lambda: training.steps >= recorded_from + 3)  # two whole steps at least
    alarms.fire()
    runner.join(30)
    (worker,) = result[0].workers
    assert worker.state == "ok" and worker.attempt == 1
    expected = (
        tmp_path
        / "plugins"
        / "profile"
        / result[0].session_id
        / (server.address.replace(":", "_") + ".xplane.pb")
    )
    assert result[0].paths == [expected] and expected.is_file()
    saved = read_saved(expected)
    assert len(saved.named("train")) >= 2
    assert saved.start_ns >= before
    assert all(saved.start_ns <= start <= saved.stop_ns for _n, start, _d in saved.events)


def test_emit_xspace_and_empty_trace(server: ProfilerServer) -> None:
    response = profile_rpc(server.address, request(emit_xspace=True))
    assert not response.empty_trace and not response.tool_data
    assert read_space(response.xspace).named("compute")
    # Host tracer off: nothing is recorded, and the server says so.
    quiet = request(emit_xspace=True)
    quiet.opts.host_tracer_level = 0
    response = profile_rpc(server.address, quiet)
    assert response.empty_trace
    assert {"/host:CPU", "Task Environment"} <= {p.name for p in response.xspace.planes}


def test_empty_capture_is_reported_not_saved(server: ProfilerServer, tmp_path: Path) -> None:
    options = stepscope.ProfilerOptions(host_tracer_level=0)
    with pytest.raises(NoTraceCollectedError, match="No trace event was collected") as info:
        stepscope.client.trace(server.address, tmp_path, 300, options=options, verbose=False)
    assert [w.state for w in info.value.result.workers] == ["empty"]
    assert not list(tmp_path.rglob("*.xplane.pb"))


def test_default_options_when_unset(server: ProfilerServer) -> None:
    # TensorFlow treats ProfileOptions with version 0 as "use the defaults" (host level 2).
    response = profile_rpc(server.address, pb.ProfileRequest(duration_ms=300, emit_xspace=True))
    assert not response.empty_trace


def test_busy_worker_already_exists_then_retry(server: ProfilerServer, tmp_path: Path) -> None:
    stepscope.start(tmp_path / "local")  # a local capture holds the session slot
    try:
        with pytest.raises(grpc.RpcError) as info:
            profile_rpc(server.address, request(emit_xspace=True))
        assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "already running" in (info.value.details() or "")
        # The client retries on ALREADY_EXISTS: free the slot while it backs off.
        threading.Timer(0.3, stepscope.stop).start()
        result = stepscope.client.trace(server.address, tmp_path / "remote", 300, verbose=False)
    finally:
        if stepscope.capture.is_running():
            stepscope.stop()
    (worker,) = result.workers
    assert worker.state == "ok" and worker.attempt >= 2
    # A remote capture holds the slot too: a local start meanwhile fails.
    job = CaptureJob(server.address, tmp_path / "again", 1500)
    thread = threading.Thread(target=job.run)
    thread.start()
    _wait_for(lambda: stepscope.capture.is_running())
    with pytest.raises(stepscope.ProfilerAlreadyRunningError):
        stepscope.start(tmp_path / "local2")
    thread.join(10)


def test_busy_worker_gives_up_after_its_tries(server: ProfilerServer, tmp_path: Path) -> None:
    stepscope.start(tmp_path / "local")
    try:
        with pytest.raises(NoTraceCollectedError) as info:
            stepscope.client.trace(
                server.address, tmp_path / "remote", 300, num_tracing_attempts=2, verbose=False
            )
    finally:
        stepscope.stop()
    (worker,) = info.value.result.workers
    assert worker.state == "failed" and worker.attempt == 2
    assert "busy" in worker.reason


def test_wrong_token(server_factory: Any, tmp_path: Path) -> None:
    server = server_factory(token="s3cret")
    for token in (None, "wrong"):
        with pytest.raises(grpc.RpcError) as info:
            profile_rpc(server.address, request(emit_xspace=True), token=token)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(NoTraceCollectedError) as caught:
            stepscope.client.trace(server.address, tmp_path, 300, token=token, verbose=False)
        (worker,) = caught.value.result.workers
        assert worker.state == "failed" and worker.attempt == 1  # not retried
        assert "token" in worker.reason
    with pytest.raises(StepscopeError, match="token"):
        stepscope.client.monitor(server.address, 100, token="wrong")
    result = stepscope.client.trace(server.address, tmp_path, 300, token="s3cret", verbose=False)
    assert result.workers[0].state == "ok"


def test_server_writes_only_inside_allowed_roots(server_factory: Any, tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "link").symlink_to(outside)
    server = server_factory(allowed_roots=[allowed])

    def ask(root: Path | str, session: str = "s1") -> Any:
        return profile_rpc(
            server.address,
            request(repository_root=str(root), session_id=session, host_name="w1:6009"),
        )

    # Inside: the server writes <root>/<session>/<host>.xplane.pb, the answer carries no data.
    response = ask(allowed / "logs" / "plugins" / "profile")
    written = allowed / "logs" / "plugins" / "profile" / "s1" / "w1_6009.xplane.pb"
    assert written.is_file() and not response.tool_data and not response.xspace.planes
    assert read_saved(written).named("train")
    # Outside, by traversal, through a symlink, with a path-like session id, relative: the
    # server writes nothing and returns the XSpace as tool data (TensorFlow's client saves it).
    for root, session in [
        (outside, "s1"),
        (f"{allowed}/../outside", "s1"),
        (allowed / "link", "s1"),
        (allowed, "../../outside"),
        (allowed, ".."),
        ("relative/dir", "s1"),
    ]:
        response = ask(root, session)
        assert [t.name for t in response.tool_data] == ["xplane.pb"], (root, session)
        assert not response.empty_trace
    assert not list(outside.rglob("*")), list(outside.rglob("*"))
    assert not list(Path("relative").glob("*"))


def test_no_allowed_roots_by_default(server: ProfilerServer, tmp_path: Path) -> None:
    response = profile_rpc(
        server.address, request(repository_root=str(tmp_path), session_id="s", host_name="h:1")
    )
    assert [t.name for t in response.tool_data] == ["xplane.pb"]
    assert not list(tmp_path.rglob("*.xplane.pb"))


def test_delay_is_honoured(
    server: ProfilerServer, tmp_path: Path, alarms: ManualAlarms, training: Training
) -> None:
    """The server waits for the delay (TensorFlow's ``start_timestamp_ns``), then records for
    the duration counted from there; the session clock's alarms are fired here, so nothing
    depends on how fast this machine answers (a minute's delay costs nothing)."""
    options = stepscope.ProfilerOptions(delay_ms=60_000)
    job = CaptureJob(server.address, tmp_path, 300, options)
    thread = threading.Thread(target=job.run)
    sent_ns = time.time_ns()  # the client dates its request after this ...
    thread.start()
    _wait_for(lambda: bool(alarms.pending()))
    seen_ns = time.time_ns()  # ... and the server read its clock before this
    (delay_s,) = alarms.pending()
    # until the time asked for, less the request's way there (however long that took)
    assert (60 * 10**9 - (seen_ns - sent_ns)) / 1e9 <= delay_s <= 60
    assert job.workers[0].state == "capturing" and not capture_session.is_recording()
    alarms.fire()  # the delay is over
    assert capture_session.is_recording()
    assert alarms.pending() == [0.3]  # the duration starts now, not when the request came
    recorded_from = training.steps
    _wait_for(lambda: training.steps >= recorded_from + 2)  # a whole step is recorded
    alarms.fire()
    thread.join(30)
    assert not thread.is_alive()
    assert job.workers[0].state == "ok", job.workers[0].line()
    assert read_saved(job.workers[0].path).events  # type: ignore[arg-type]


def remote_python_work() -> int:
    return sum(range(1000))


def test_python_tracer_records_threads_started_during_the_capture(
    server: ProfilerServer, tmp_path: Path
) -> None:
    # Before Python 3.12 (and with the C tracer) threads already running when recording starts
    # cannot be hooked; threads started during the capture are. The server's own thread is
    # left out of the profile.
    job = CaptureJob(
        server.address, tmp_path, 800, stepscope.ProfilerOptions(python_tracer_level=1)
    )
    runner = threading.Thread(target=job.run)
    runner.start()
    _wait_for(lambda: capture_session.is_recording())
    worker = threading.Thread(target=lambda: [remote_python_work() for _ in range(5)], name="late")
    worker.start()
    worker.join()
    runner.join(10)
    saved = read_saved(job.workers[0].path)  # type: ignore[arg-type]
    names = {name for name, _s, _d in saved.events}
    assert any(n.endswith(" remote_python_work") for n in names), sorted(names)[:20]
    assert not any("_server.py" in n or "recording.py" in n for n in names)


def test_terminate_ends_a_capture_early(
    server: ProfilerServer, tmp_path: Path, training: Training
) -> None:
    job = CaptureJob(server.address, tmp_path, 20_000)
    thread = threading.Thread(target=job.run)
    thread.start()
    _wait_for(lambda: job.workers[0].state == "capturing" and capture_session.is_recording())
    recorded_from = training.steps
    _wait_for(lambda: training.steps >= recorded_from + 2)  # a whole step is recorded
    job.terminate()
    thread.join(10)
    assert not thread.is_alive()
    (worker,) = job.workers
    assert worker.state == "ok", worker.line()
    saved = read_saved(worker.path)  # type: ignore[arg-type]
    assert saved.named("train")  # what was recorded until Terminate
    assert saved.stop_ns - saved.start_ns < 20e9  # the profile ends before the 20 s asked


def test_client_cancel_frees_the_server(server: ProfilerServer) -> None:
    with grpc.insecure_channel(server.address) as channel:
        future = pb_grpc.ProfilerServiceStub(channel).Profile.future(
            request(60_000, emit_xspace=True), timeout=30
        )
        _wait_for(stepscope.capture.is_running)
        future.cancel()
    _wait_for(lambda: not stepscope.capture.is_running())


def test_bad_requests(server: ProfilerServer) -> None:
    far = request(emit_xspace=True)
    far.opts.start_timestamp_ns = time.time_ns() + 3600 * 10**9
    for bad in (pb.ProfileRequest(emit_xspace=True, opts=pb.ProfileOptions(version=1)), far):
        with pytest.raises(grpc.RpcError) as info:
            profile_rpc(server.address, bad)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_monitor(server: ProfilerServer, tmp_path: Path) -> None:
    text = stepscope.client.monitor(f"grpc://{server.address}", 200)
    assert "CPU utilization" in text and "Timestamp" in text
    assert "Step time: unknown" in text
    stepscope.client.trace(server.address, tmp_path, 300, verbose=False)
    assert "Steps in the last capture" in stepscope.client.monitor(server.address, 100)
    assert "Steps in the last 300 ms" in stepscope.client.monitor(server.address, 300, level=2)


def test_monitor_from_the_command_line_needs_no_logdir(
    server: ProfilerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # as docs/remote_capture.md writes it: `stepscope capture grpc://w1:6009 --monitor`
    from stepscope.cli.main import main

    assert main(["capture", f"grpc://{server.address}", "--monitor", "--duration-ms", "100"]) == 0
    assert "CPU utilization" in capsys.readouterr().out
    assert main(["capture", f"grpc://{server.address}"]) == 2  # capturing does need one
    assert "give --logdir" in capsys.readouterr().err


def test_server_binds_loopback_and_refuses_a_taken_port(server: ProfilerServer) -> None:
    assert server.host == "127.0.0.1"
    with pytest.raises(StepscopeError, match="cannot listen"):
        stepscope.server.start(server.port)


def test_addresses_are_checked(tmp_path: Path) -> None:
    for bad in ("", "http://h:1", "h", "h:0", "h:99999"):
        with pytest.raises(StepscopeError):
            stepscope.client.trace(bad, tmp_path, 100, verbose=False)
    with pytest.raises(StepscopeError, match="duration_ms"):
        stepscope.client.trace("h:1", tmp_path, 0, verbose=False)


def _wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_ranks_server_names_its_recording_by_its_job(
    server: ProfilerServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 of 2 answers with the host name a local capture gives its file (decision
    1079): the client names the worker's file by it."""
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    response = profile_rpc(server.address, request(emit_xspace=True))
    machine = __import__("socket").gethostname()
    assert list(response.xspace.hostnames) == [f"{machine}.rank1"]
