"""Who may talk to the web server: a Host allow-list, a token, bounded request bodies.

- **Host allow-list, always.** A page on another site can make a browser send requests to
  ``127.0.0.1`` by pointing its own name at that address (DNS rebinding); such requests
  carry the other site's name in ``Host``. Only IP literals (rebinding needs a name), the
  loopback names, the name the server was bound to and the names given with
  ``--allow-host`` are accepted (``--allow-host '*'`` accepts any: behind a proxy that
  checks names itself).
- **A token** (printed at start, as Jupyter does) for every request that changes state
  (anything but GET/HEAD) and, when the server listens on a non-loopback address, for every
  request. It is accepted as ``?token=`` (which also sets a cookie for this port, so the
  page's own requests carry it), an ``Authorization: Token <t>`` header or that cookie.
- **Bodies are read in chunks up to a limit** and within a time limit; nothing larger is
  ever buffered (`read_body`).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
READ_METHODS = ("GET", "HEAD")
BODY_TIMEOUT_S = 10.0
TOKEN_COOKIE = "stepscope_token_{port}"  # cookies ignore ports: one per server port


class BodyTooLarge(Exception):
    """The request body exceeded the limit (HTTP 413)."""


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_name(header: str) -> str:
    """The name in a Host header, without port or IPv6 brackets, lowercased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header[1:]
    if header.count(":") == 1:
        return header.split(":", 1)[0]
    return header  # a bare IPv6 address (no port) or a plain name


def allowed_names(names: Iterable[str]) -> frozenset[str]:
    """The Host names a server answers to: ``names`` and the loopback names."""
    return frozenset({h.lower().strip("[]") for h in names} | set(LOOPBACK_NAMES))


def host_allowed(allowed: frozenset[str], header: str) -> bool:
    """Whether a request's Host header names this server (see the module's docs); one test
    for `stepscope serve` and the TensorBoard plugin."""
    name = host_name(header)
    return "*" in allowed or _is_ip(name) or name in allowed


class AccessGuard:
    """ASGI middleware applying the Host allow-list and the token (see the module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Iterable[str],
        token: str | None,
        token_for_reads: bool,
        port: int = 0,
    ) -> None:
        self.app = app
        self.allowed = allowed_names(allowed_hosts)
        self.token = token
        self.token_for_reads = token_for_reads
        self.cookie = TOKEN_COOKIE.format(port=port)

    def host_allowed(self, header: str) -> bool:
        return host_allowed(self.allowed, header)

    def _given_tokens(self, scope: Scope, headers: dict[str, str]) -> tuple[list[str], bool]:
        """Tokens the request offers, and whether one came in the query (to set the cookie)."""
        found: list[str] = []
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        in_query = bool(query.get("token"))
        found += query.get("token", [])
        auth = headers.get("authorization", "")
        if auth.lower().startswith("token "):
            found.append(auth[6:].strip())
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # a malformed cookie header offers no token
            cookie = SimpleCookie()
        if self.cookie in cookie:
            found.append(cookie[self.cookie].value)
        return found, in_query

    def token_ok(self, offered: list[str]) -> bool:
        assert self.token is not None
        expected = self.token.encode()
        return any(hmac.compare_digest(t.encode(), expected) for t in offered)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.host_allowed(headers.get("host", "")):
            shown = headers.get("host", "")[:80]
            await _reject(
                send,
                403,
                f"Host {shown!r} is not allowed (a guard against DNS rebinding); if this is "
                "how you reach the server, restart it with --allow-host NAME",
            )
            return
        method = scope.get("method", "GET")
        needs_token = self.token is not None and (
            self.token_for_reads or method not in READ_METHODS
        )
        offered, in_query = self._given_tokens(scope, headers) if self.token else ([], False)
        valid = bool(offered) and self.token_ok(offered)
        if needs_token and not valid:
            await _reject(
                send,
                403,
                "this server needs its token: open the URL `stepscope serve` printed "
                "(…/?token=…), or send 'Authorization: Token <token>'",
            )
            return
        if not (valid and in_query):
            await self.app(scope, receive, send)
            return
        cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


async def _reject(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_body(
    chunks: Callable[[], Any], declared: str | None, limit: int, timeout_s: float = BODY_TIMEOUT_S
) -> bytes:
    """The request body, read chunk by chunk: `BodyTooLarge` as soon as it passes ``limit``
    (or when Content-Length says it will), `TimeoutError` when it takes over ``timeout_s``."""
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyTooLarge
    out = bytearray()

    async def collect() -> None:
        async for chunk in chunks():
            out.extend(chunk)
            if len(out) > limit:
                raise BodyTooLarge

    await asyncio.wait_for(collect(), timeout_s)
    return bytes(out)
