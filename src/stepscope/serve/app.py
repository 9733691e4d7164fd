"""The ASGI application (Starlette) and the ways to run it: blocking or in a background thread.

From code (e.g. `stepscope demo`)::

    from stepscope.serve.app import page_url, serve, start_server
    serve(logdir, port=6006, open_browser=True, run="2026_11_22_00_46_33")  # blocks until Ctrl-C
    server = start_server(logdir)            # free port, background thread
    print(page_url(server.url, run="...")); ...; server.stop()
"""

from __future__ import annotations

import socket
import threading
import time
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from stepscope import log
from stepscope.errors import StepscopeError
from stepscope.executor import Executor
from stepscope.netaddr import is_loopback
from stepscope.records import record
from stepscope.serve.access import AccessGuard, new_token
from stepscope.serve.capture_routes import CaptureManager, capture_routes
from stepscope.serve.compress import PlainToThisMachine
from stepscope.serve.http import ApiRequest, Handler, error_response
from stepscope.serve.protocol import BoundedH11Protocol
from stepscope.serve.routes import build_routes
from stepscope.serve.shutdown import AnswerCancelled, exit_on_sigterm, quiet_cancel_log
from stepscope.serve.state import ServerState
from stepscope.store import values

MAX_RESPONSE_BYTES = 512 << 20  # no tool answer is this large; a bug or abuse if one is
LIMIT_CONCURRENCY = 256  # open connections and tasks; more get 503 instead of memory growth
KEEP_ALIVE_TIMEOUT_S = 5  # idle keep-alive connections are closed after this


def _endpoint(handler: Handler, blocking: bool = True) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        api_request = ApiRequest(
            dict(request.path_params),
            dict(request.query_params),
            {k.lower(): v for k, v in request.headers.items()},
        )
        # Tools are CPU-bound NumPy work: keep the event loop free for other requests. Static
        # files are answered from memory at once (a thread hop costs more than the work).
        if blocking:
            result = await run_in_threadpool(handler, api_request)
        else:
            result = handler(api_request)
        if len(result.body) > MAX_RESPONSE_BYTES:
            result = error_response(
                413, "the answer would be too large; ask for a narrower window or fewer rows"
            )
        headers = {"X-Content-Type-Options": "nosniff", **result.headers}
        return Response(result.body, result.status, headers, result.content_type)

    return endpoint


async def _not_found(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 404)
    result = error_response(
        status,
        f"no page {request.url.path[:80]!r}"
        if status == 404
        else f"{request.method} not allowed; the API is read-only (GET)",
    )
    return Response(result.body, result.status, result.headers, result.content_type)


def create_app(
    logdir: str | Path,
    *,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    state: ServerState | None = None,
    allowed_hosts: list[str] | None = None,
    token: str | None = None,
    token_for_reads: bool = False,
    port: int = 0,
    compress_local: bool = False,
) -> Starlette:
    """The UI and API for ``logdir``. ``allowed_hosts`` limits the Host header (a guard against
    DNS rebinding) and ``token`` guards state-changing requests (every request with
    ``token_for_reads``); see `access`. With neither (embedding in another ASGI server), the
    embedding server is responsible for both; `serve` and `start_server` always set them.
    Answers to clients on this machine go uncompressed unless ``compress_local`` (a page
    behind an SSH tunnel: see `compress`)."""
    state = state or ServerState(logdir, use_cache=use_cache, cache_dir=cache_dir)
    values.prepare_reads()  # before any request: not beside the windows (decision 660)
    routes = [
        Route(r.path, _endpoint(r.handler, r.blocking), methods=["GET", "HEAD"], name=r.name)
        for r in build_routes(state)
    ]
    # The Capture Profile dialog's routes go first: /api/{path} there catches every other name.
    routes = capture_routes(CaptureManager(state)) + routes
    middleware = [Middleware(GZipMiddleware, minimum_size=500)]
    if not compress_local:
        middleware.insert(0, Middleware(PlainToThisMachine))
    if allowed_hosts is not None or token is not None:
        guard = Middleware(
            AccessGuard,
            allowed_hosts=allowed_hosts if allowed_hosts is not None else ["*"],
            token=token,
            token_for_reads=token_for_reads,
            port=port,
        )
        middleware.insert(0, guard)
    middleware.insert(0, Middleware(AnswerCancelled))  # outermost: sees every cancellation
    app = Starlette(
        routes=routes, middleware=middleware, exception_handlers={404: _not_found, 405: _not_found}
    )
    app.state.stepscope = state
    return app


def server_names(host: str, extra: Sequence[str] = ()) -> list[str]:
    """Host-header names the server answers to: the bound name, this machine's names when
    bound to every interface, and what the user allowed (IP literals are always accepted)."""
    names = [host.strip("[]"), *extra]
    if host in ("0.0.0.0", "::", ""):
        names += [socket.gethostname(), socket.getfqdn()]
    return [n.lower() for n in names if n]


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only when the
    # listening socket says TCP, and without it every keep-alive response waits ~40 ms (Nagle
    # + delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        hint = "; pass --port 0 for any free port" if port else ""
        raise StepscopeError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/"


@record(frozen=False)
class RunningServer:
    """A server on a background thread (tests, notebooks, `stepscope demo`)."""

    url: str  # base address, e.g. http://127.0.0.1:6006/
    port: int
    state: ServerState
    token: str  # needed by state-changing requests (and by all on a non-loopback bind)
    _server: Any
    _thread: threading.Thread

    def stop(self, timeout_s: float = 5.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)


def _prepare(
    logdir: str | Path,
    host: str,
    port: int,
    use_cache: bool,
    warn: Callable[[str], None],
    state: ServerState | None = None,
    allow_hosts: Sequence[str] = (),
    token: str | None = None,
    compress_local: bool = False,
) -> tuple[Any, socket.socket, ServerState, str, str]:
    import uvicorn

    state = state or ServerState(logdir, use_cache=use_cache)
    loopback = is_loopback(host)
    if not loopback:
        warn(
            f"stepscope: warning: listening on {host}: anyone who can reach this machine on "
            "that port and has the token can read these profiles and start captures"
        )
    token = token or new_token()
    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    app = create_app(
        logdir,
        state=state,
        allowed_hosts=server_names(host, allow_hosts),
        token=token,
        token_for_reads=not loopback,
        port=bound_port,
        compress_local=compress_local,
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT_S,
        limit_concurrency=LIMIT_CONCURRENCY,
        http=BoundedH11Protocol,  # each request's headers within a deadline (slowloris)
    )
    quiet_cancel_log()  # after the Config: it sets uvicorn's loggers up
    return uvicorn.Server(config), sock, state, _url(host, bound_port), token


def page_url(
    base_url: str,
    run: str | None = None,
    tool: str = "overview_page",
    host: str | None = None,
    token: str | None = None,
) -> str:
    """The address of one tool page of one run (the UI routes on the URL fragment); with
    ``token``, the address that also hands the browser the server's token."""
    if token:
        base_url = f"{base_url}?{urlencode({'token': token})}"
    if not run:
        return base_url
    params = {"run": run, **({"host": host} if host else {})}
    return f"{base_url}#/{quote(tool)}?{urlencode(params)}"


def serve(
    logdir: str | Path,
    host: str = "127.0.0.1",
    port: int = 6006,
    *,
    open_browser: bool = False,
    use_cache: bool = True,
    run: str | None = None,
    say: Callable[[str], None] = log.info,
    executor: Executor | None = None,
    allow_hosts: Sequence[str] = (),
    token: str | None = None,
    compress_local: bool = False,
) -> None:
    """Serve the UI for ``logdir`` until interrupted; tells ``say`` (the ``stepscope`` logger
    by default; the CLI prints it) the URL to open, with the token.
    With ``run`` (a run name as `stepscope runs` lists it), the URL opens that run's overview.
    ``compress_local``: gzip answers to this machine's clients too (see `compress`).
    """
    state = ServerState(logdir, use_cache=use_cache, executor=executor)
    server, sock, _state, url, token = _prepare(
        logdir,
        host,
        port,
        use_cache,
        log.warn,
        state,
        allow_hosts=allow_hosts,
        token=token,
        compress_local=compress_local,
    )
    url = page_url(url, run, token=token)
    say(f"stepscope: serving {_state.logdir} at {url}  (Ctrl-C to stop)")
    if open_browser:
        threading.Timer(0.5, webbrowser.open, [url]).start()
    restore = exit_on_sigterm()  # uvicorn raises it again once stopped: exit, writes done
    try:
        server.run(sockets=[sock])
    finally:
        restore()
        sock.close()
        if executor is not None:
            executor.close()


def start_server(
    logdir: str | Path,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    use_cache: bool = True,
    timeout_s: float = 10.0,
    state: ServerState | None = None,
    allow_hosts: Sequence[str] = (),
    token: str | None = None,
    compress_local: bool = False,
) -> RunningServer:
    """Start serving ``logdir`` on a background thread; returns once it accepts connections.
    ``state`` replaces the default one (tests pass one with their own tool registry)."""
    server, sock, state, url, token = _prepare(
        logdir, host, port, use_cache, log.warn, state, allow_hosts, token, compress_local
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="stepscope-serve", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise StepscopeError(f"the server for {logdir} did not start")
        time.sleep(0.01)
    return RunningServer(url, sock.getsockname()[1], state, token, server, thread)
