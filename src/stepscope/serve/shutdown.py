"""A request still being answered when the server stops is told so, without a traceback.

On Ctrl-C uvicorn stops accepting connections, waits ``timeout_graceful_shutdown`` seconds for
the requests in flight, then cancels their tasks. Uncaught, that cancellation reached uvicorn
as an exception of the application: it logged "Exception in ASGI application" with a
traceback of `asyncio.CancelledError` and answered HTTP 500, as if the server had failed
(decision 400). `AnswerCancelled` answers such a request 503 ("stopped before the answer was
ready": the client may ask again once a server runs) and ends the task quietly, and
`quiet_cancel_log` turns uvicorn's own error line about it into one plain line.

The computation itself cannot be cancelled (it runs on a worker thread): it ends on its own,
and its result is dropped.

SIGTERM (`kill`, a service manager, a container's stop) ends `serve` as an exit, not as the
signal's default action (`exit_on_sigterm`, decision 402): uvicorn stops gracefully and then
raises the signal again with the handler it found, and the default one killed the process
before the store's writes finished (the converted profile and trace index of the answers
just given), so the next start converted and indexed the profile again.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType

from stepscope import log
from stepscope.serve.access import ASGIApp, Message, Receive, Scope, Send
from stepscope.serve.http import error_response

STOPPED = "the server stopped before this answer was ready; ask again once it runs"
# uvicorn's message (uvicorn/server.py, Server.shutdown) and the line said in its place.
_UVICORN_CANCEL = "Cancel %s running task(s), timeout graceful shutdown exceeded"
_SAID = "stepscope: stopped; {} answer(s) still being computed were dropped"


class AnswerCancelled:
    """ASGI middleware: a request whose task is cancelled (the server stopping) gets a 503 in
    place of the answer, when nothing of the answer was sent yet; either way the cancellation
    ends here instead of reaching the server as the application's error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except asyncio.CancelledError:
            if started:
                return  # part of an answer went out: the server closes the connection
            reply = error_response(503, STOPPED)
            headers = [
                (b"content-type", reply.content_type.encode()),
                (b"content-length", str(len(reply.body)).encode()),
                (b"connection", b"close"),
                *((k.lower().encode(), v.encode()) for k, v in reply.headers.items()),
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": reply.body})


class _CancelLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _UVICORN_CANCEL:
            return True
        log.warn(_SAID.format(*record.args) if isinstance(record.args, tuple) else _SAID)
        return False  # said above, as stepscope's other lines are


def quiet_cancel_log() -> None:
    """Say uvicorn's "Cancel N running task(s)" error as one plain stepscope line (once per
    process, however many servers it runs)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _CancelLine) for f in logger.filters):
        logger.addFilter(_CancelLine())


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # the shell's status for a process ended by the signal


def exit_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM end this process as `sys.exit` does (the store's writes finish first),
    where it would be the signal's default action; returns what puts the old action back.
    Leaves a handler of the caller's, and does nothing off the main thread (where neither
    Python nor uvicorn handles signals)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        return lambda: None
    signal.signal(signal.SIGTERM, _exit)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
