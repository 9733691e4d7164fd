"""uvicorn's HTTP/1.1 protocol with a deadline for each request's headers.

uvicorn closes idle keep-alive connections, but a connection that opens and sends nothing,
or sends its request line and headers a byte at a time (slowloris), is kept as long as the
client likes, and a few hundred of them take every slot `limit_concurrency` allows. Here
the headers of each request must arrive within `HEADER_TIMEOUT_S` of its first byte (or of
the connection opening); otherwise the connection is closed. Bodies have their own limit
(`access.read_body`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0


class BoundedH11Protocol(H11Protocol):
    """`H11Protocol` plus the header deadline described in the module docstring."""

    _header_deadline: asyncio.TimerHandle | None = None

    def _waiting_for_headers(self) -> bool:
        cycle: Any = getattr(self, "cycle", None)
        return cycle is None or bool(cycle.response_complete)

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(HEADER_TIMEOUT_S, self._expire)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _expire(self) -> None:
        self._header_deadline = None
        if self._waiting_for_headers() and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._waiting_for_headers():
            self._arm()  # a new request begins: its headers are due within the deadline
        super().data_received(data)
        if not self._waiting_for_headers():
            self._disarm()  # the headers are in; the request is being served

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
