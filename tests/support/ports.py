"""Loopback ports for tests that start servers and worker processes."""

from __future__ import annotations

import selectors
import socket
import subprocess
import time


def free_port() -> int:
    """A loopback port nothing listens on (for a dead worker)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
