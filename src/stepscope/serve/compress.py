"""gzip for the tools' query answers (trace viewer windows: up to a few MB each, per pan),
and none for a page on this machine.

zlib at level 1 compresses such a window at about 160 MB/s, as long as computing it took
(2.5 MB of a 64-host window: 15 ms). Intel's ISA-L (the optional ``isal`` package,
``stepscope[speed]``) writes the same gzip format about 5x faster (3.2 ms) for a body about
20% larger (681 vs 568 KB); browsers and every HTTP client read it as any gzip. Without it,
zlib level 1 as before.

A client on this machine (a loopback address) gets every answer uncompressed
(`PlainToThisMachine`, decision 290): over loopback, bytes cost a copy, while gzip costs
the server 6 ms and the page 16 ms to inflate for a 6.2 MB window of a 10.6M-event trace
(its 1.7 MB gzipped). A page that reaches the server through an SSH tunnel or a forwarded
port also arrives from a loopback address, but its bytes cross a network:
``stepscope serve --compress-local`` keeps gzip for it.
"""

from __future__ import annotations

import gzip
import importlib
from types import ModuleType

from stepscope.netaddr import is_loopback
from stepscope.serve.access import ASGIApp, Receive, Scope, Send


def _optional_isal() -> ModuleType | None:
    try:
        return importlib.import_module("isal.igzip")
    except ImportError:  # the optional extra is not installed
        return None


_isal = _optional_isal()


def compress(body: bytes) -> bytes:
    """gzip ``body`` at the fastest setting available (ISA-L when installed)."""
    if _isal is not None:
        return bytes(_isal.compress(body, compresslevel=1, mtime=0))
    return gzip.compress(body, compresslevel=1, mtime=0)


class PlainToThisMachine:
    """ASGI middleware: a request from a loopback address reaches the app without its
    Accept-Encoding, so neither the routes nor the gzip middleware compress its answer
    (identity is always acceptable to a client, RFC 9110 12.5.3)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] == "http" and client and is_loopback(str(client[0])):
            headers = [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"]
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)
