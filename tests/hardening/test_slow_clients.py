"""Issue #13 item 3: idle and slow connections are closed (the headers of each request are
due within a deadline; idle keep-alive connections close)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope.serve import protocol
from stepscope.serve.app import RunningServer, start_server

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    monkeypatch.setattr(protocol, "HEADER_TIMEOUT_S", 0.3)
    running = start_server(tmp_path, use_cache=False)
    yield running
    running.stop()


def _closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes the connection (recv gives b"") before our own timeout."""
    sock.settimeout(30)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (TimeoutError, ConnectionResetError):
        return False


@pytest.mark.parametrize(
    "sent", [b"", b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"], ids=["silent", "slowloris"]
)
def test_connections_without_complete_headers_are_closed(
    server: RunningServer, sent: bytes
) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(sent)  # ... and never the blank line that ends the headers
        assert _closed_by_server(sock)


def test_a_normal_request_is_answered(server: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        sock.settimeout(30)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
