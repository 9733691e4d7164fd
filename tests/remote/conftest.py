"""Fixtures for the remote-capture tests: profiler servers in this process and in others.

Every server listens on a free loopback port (port 0) and is stopped at the end of its test;
worker processes also exit when their stdin closes, so none outlives the test run.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import stepscope
from tests.remote.helpers import Training
from tests.support.clock import ManualAlarms
from tests.support.ports import dead_address, ready_port

if importlib.util.find_spec("grpc") is None:  # the `remote` extra (CI installs it via `dev`)
    collect_ignore_glob = ["test_*.py"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stepscope.capture.remote.server import ProfilerServer

WORKER = Path(__file__).with_name("worker.py")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    """A worker process running `worker.py`."""

    proc: subprocess.Popen[str]
    port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # asks it to exit
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture(autouse=True)
def no_framework_bridges(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process captures record stepscope's own events only, whatever frameworks (torch,
    jax...) other tests imported: the framework bridges are tested in tests/bridges."""
    monkeypatch.setenv("STEPSCOPE_BRIDGES", "none")


@pytest.fixture
def spawn_workers() -> Iterator[Callable[..., list[Worker]]]:
    """``spawn_workers(n, *args)`` -> n worker processes, started in parallel."""
    started: list[Worker] = []

    def spawn(n: int, *args: str) -> list[Worker]:
        procs = [
            subprocess.Popen(
                [sys.executable, str(WORKER), *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
            )
            for _ in range(n)
        ]
        workers = [Worker(p, ready_port(p, 60.0)) for p in procs]
        started.extend(workers)
        return workers

    yield spawn
    for worker in started:
        worker.stop()


@pytest.fixture
def dead() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a worker that is not there, for the whole test."""
    with dead_address() as address:
        yield address


@pytest.fixture
def alarms(monkeypatch: pytest.MonkeyPatch) -> ManualAlarms:
    """New capture sessions (a server's too) read a clock whose ``delay_ms`` and
    ``duration_ms`` alarms the test fires."""
    from stepscope.capture import session

    clock = ManualAlarms()
    monkeypatch.setattr(session, "CLOCK", clock)
    return clock


@pytest.fixture
def server_factory() -> Iterator[Callable[..., ProfilerServer]]:
    """``server_factory(**kwargs)`` -> a stepscope server in this process on a free port."""
    servers: list[ProfilerServer] = []

    from stepscope.capture.remote.server import start

    def make(**kwargs: object) -> ProfilerServer:
        server = start(0, **kwargs)  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def server(server_factory: Callable[..., ProfilerServer]) -> ProfilerServer:
    return server_factory()


@pytest.fixture
def training() -> Iterator[Training]:
    """A loop of short steps on a background thread: something for captures to record."""
    done = threading.Event()
    progress = Training()

    def loop() -> None:
        step = 0
        while not done.is_set():
            with stepscope.step(step), stepscope.trace("compute"):
                time.sleep(0.002)
            step += 1
            progress.steps = step

    thread = threading.Thread(target=loop, name="training", daemon=True)
    thread.start()
    yield progress
    done.set()
    thread.join(5)
