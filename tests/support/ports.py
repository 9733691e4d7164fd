"""Loopback ports for tests that start servers and worker processes."""

from __future__ import annotations

import contextlib
import selectors
import socket
import subprocess
import time
from collections.abc import Iterator


def free_port() -> int:
    """A loopback port nothing listens on now (for a server the test starts on it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def dead_address() -> Iterator[str]:
    """``127.0.0.1:PORT`` where nothing listens while the block runs: the port is bound but
    never listened on, so no other process can take it (a port closed again may be reused by
    any server on the machine) and every connection is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def ready_port(proc: subprocess.Popen[str], timeout_s: float) -> int:
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if selector.select(deadline - time.monotonic()):
            line = proc.stdout.readline()
            if line.startswith("READY "):
                return int(line.split()[1])
            if not line:
                break
    proc.kill()
    raise RuntimeError(f"worker did not start: {proc.stderr.read() if proc.stderr else ''}")
