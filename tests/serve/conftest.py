"""Fixtures for the server tests: a small log directory, a fake tool, clients for both adapters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stepscope.serve.app import start_server
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp

# Browser and GPU-fixture server fixtures, shared by the page tests of every tool.
from tests.support.gpu_pages import gpu_server, page_for  # noqa: F401
from tests.support.serve import FakeTools, make_logdir


@pytest.fixture
def fake_tools() -> FakeTools:
    return FakeTools()


@pytest.fixture
def logdir(tmp_path: Path, fixtures_dir: Path) -> Path:
    return make_logdir(tmp_path / "logs", fixtures_dir)


@pytest.fixture
def state(logdir: Path, fake_tools: FakeTools) -> ServerState:
    return ServerState(logdir, tools=fake_tools.specs, rediscover_s=0.0, use_cache=False)


@pytest.fixture
def client(state: ServerState) -> Iterator[httpx.Client]:
    """A real server (uvicorn on a free loopback port, background thread) and a client for it."""
    server = start_server(state.logdir, state=state)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            yield c
    finally:
        server.stop()


@pytest.fixture
def wsgi(state: ServerState) -> WsgiApp:
    return WsgiApp(build_routes(state))
