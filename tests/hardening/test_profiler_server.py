"""Issue #13 items 4-5: the profiler server keeps threads for control calls, and a hostile
host name from a worker never reaches the file system."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope.capture.remote.paths import writable_target
from stepscope.logdir import host_file_name

grpc = pytest.importorskip("grpc")

from stepscope.capture.remote import server as server_module  # noqa: E402
from stepscope.xspace.proto import profiler_service_pb2 as pb  # noqa: E402
from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc  # noqa: E402


def test_host_names_become_plain_file_names() -> None:
    assert host_file_name("evil\x00host:6009") == "evil_host_6009.xplane.pb"
    assert host_file_name("a/../b\\c\n") == "a_.._b_c_.xplane.pb"
    assert len(host_file_name("h" * 10_000)) == 200 + len(".xplane.pb")


def test_nul_in_repository_root_is_refused(tmp_path: Path) -> None:
    target, why = writable_target(f"{tmp_path}\x00/x", "s1", "host", (tmp_path,))
    assert target is None and "not an absolute local path" in why
    target, why = writable_target(str(tmp_path), "s1", "h\x00st", (tmp_path,))
    assert target is not None and "\x00" not in str(target)


@pytest.fixture
def small_server() -> Iterator[server_module.ProfilerServer]:
    running = server_module.start(0, max_workers=4)  # 2 threads for Monitor, 2 kept
    yield running
    running.stop()


@pytest.mark.integration
def test_monitor_calls_leave_threads_for_control_calls(
    small_server: server_module.ProfilerServer,
) -> None:
    channel = grpc.insecure_channel(small_server.address)
    stub = pb_grpc.ProfilerServiceStub(channel)
    started = threading.Barrier(3)
    answers: list[object] = []

    def long_monitor() -> None:
        started.wait()
        try:
            answers.append(stub.Monitor(pb.MonitorRequest(duration_ms=10**9), timeout=60))
        except grpc.RpcError as exc:
            answers.append(exc.code())

    threads = [threading.Thread(target=long_monitor) for _ in range(2)]
    for thread in threads:
        thread.start()
    started.wait()
    deadline = 5.0
    for _ in range(200):  # until both monitors hold their slot
        if len(small_server.servicer._monitors) == 2:
            break
        threading.Event().wait(0.02)
    with pytest.raises(grpc.RpcError) as third:
        stub.Monitor(pb.MonitorRequest(duration_ms=1000), timeout=deadline)
    assert third.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # Control calls still get a thread (they waited 14.5 s for one before).
    stub.Terminate(pb.TerminateRequest(session_id="none"), timeout=deadline)
    small_server.servicer.stop_all()  # ends the monitors early, as server.stop() does
    for thread in threads:
        thread.join(30)
    assert len(answers) == 2 and all(isinstance(a, pb.MonitorResponse) for a in answers)
    channel.close()


def test_monitor_duration_is_bounded() -> None:
    assert server_module.MAX_MONITOR_MS <= 10_000
    with pytest.raises(Exception, match="max_workers must be at least 3"):
        server_module.start(0, max_workers=2)
