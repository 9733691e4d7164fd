"""The same routes as a WSGI application, for WSGI hosts such as TensorBoard.

Matching follows Starlette's rules for the two placeholders the routes use (``{name}`` is one
path segment, ``{name:path}`` anything), first route that matches wins. Responses are gzipped
here, as GZipMiddleware does for the ASGI app.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from stepscope.serve.http import ApiRequest, ApiResponse, RouteSpec, error_response
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState

StartResponse = Callable[..., Any]
GZIP_MIN_BYTES = 500
_PLACEHOLDER = re.compile(r"\{(\w+)(?::(\w+))?\}")


def compile_path(path: str) -> re.Pattern[str]:
    pattern, last = "", 0
    for match in _PLACEHOLDER.finditer(path):
        pattern += re.escape(path[last : match.start()])
        name, kind = match.group(1), match.group(2) or "str"
        pattern += f"(?P<{name}>.*)" if kind == "path" else f"(?P<{name}>[^/]+)"
        last = match.end()
    return re.compile("^" + pattern + re.escape(path[last:]) + "$")


class WsgiApp:
    """Serves ``routes`` below ``prefix`` (the part of PATH_INFO the host uses, e.g. TensorBoard's
    ``/data/plugin/stepscope/ui``)."""

    def __init__(self, routes: Sequence[RouteSpec], prefix: str = "") -> None:
        self.prefix = prefix.rstrip("/")
        self.routes = [(compile_path(r.path), r) for r in routes]

    def handle(
        self, method: str, path: str, query_string: str, headers: dict[str, str]
    ) -> ApiResponse:
        if method not in ("GET", "HEAD"):
            return error_response(405, f"method {method} not allowed; the API is read-only (GET)")
        if self.prefix and path.startswith(self.prefix):
            path = path[len(self.prefix) :] or "/"
        query = dict(parse_qsl(query_string, keep_blank_values=True))
        for pattern, route in self.routes:
            match = pattern.match(path)
            if match:
                return route.handler(ApiRequest(match.groupdict(), query, headers))
        return error_response(404, f"no page {path[:80]!r}")

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        # PEP 3333: PATH_INFO is the percent-decoded path as latin-1 characters.
        raw_path = environ.get("PATH_INFO", "") or "/"
        path = raw_path.encode("latin-1", "replace").decode("utf-8", "replace")
        headers = {
            key[5:].replace("_", "-").lower(): str(value)
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        response = self.handle(method, path, str(environ.get("QUERY_STRING", "")), headers)
        body = response.body
        out_headers = [("Content-Type", response.content_type), *response.headers.items()]
        if "X-Content-Type-Options" not in response.headers:
            out_headers.append(("X-Content-Type-Options", "nosniff"))
        if (
            len(body) >= GZIP_MIN_BYTES
            and "gzip" in headers.get("accept-encoding", "")
            and not response.content_type.startswith(("image/png", "font/"))
            and "Content-Encoding" not in response.headers  # already compressed by its route
        ):
            body = gzip.compress(body, compresslevel=6)
            out_headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        out_headers.append(("Content-Length", str(len(body))))
        status = HTTPStatus(response.status)
        start_response(f"{status.value} {status.phrase}", out_headers)
        return [] if method == "HEAD" else [body]


def create_wsgi_app(
    logdir: str | Path,
    *,
    prefix: str = "",
    state: ServerState | None = None,
    use_cache: bool = True,
) -> WsgiApp:
    """The UI and API for ``logdir`` as a WSGI application."""
    state = state or ServerState(logdir, use_cache=use_cache)
    return WsgiApp(build_routes(state), prefix)
