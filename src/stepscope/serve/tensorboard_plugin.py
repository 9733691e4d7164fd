"""The stepscope tab in TensorBoard: the same pages and API, served through TensorBoard's WSGI app.

TensorBoard finds this class through the ``tensorboard_plugins`` entry point. Its routes live
under ``/data/plugin/stepscope``: ``/index.js`` is the ES module TensorBoard loads into the tab (it
shows our UI in an iframe) and ``/ui/*`` is `WsgiApp` over the same route handlers as
`stepscope serve`.

TensorBoard checks no Host header, so the plugin does, as `stepscope serve` does (a guard
against DNS rebinding: a page on another site pointing its name at 127.0.0.1): its routes
answer 403 unless ``Host`` is an IP literal, a loopback name, TensorBoard's ``--host`` (this
machine's names with ``--bind_all``) or a name in ``$STEPSCOPE_ALLOW_HOSTS`` (comma-separated;
``*`` accepts any, for a proxy that checks names itself).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tensorboard.plugins import base_plugin

from stepscope.errors import StepscopeError
from stepscope.serve.access import allowed_names, host_allowed
from stepscope.serve.routes import STATIC_DIR
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import StartResponse, WsgiApp, create_wsgi_app

PLUGIN_NAME = "stepscope"
UI_PREFIX = f"/data/plugin/{PLUGIN_NAME}/ui"
ALLOW_HOSTS_ENV = "STEPSCOPE_ALLOW_HOSTS"


def tensorboard_host_names(context: Any) -> frozenset[str]:
    """The Host names TensorBoard's flags say it answers to (see the module's docs)."""
    from stepscope.serve.app import server_names

    flags = getattr(context, "flags", None)
    host = getattr(flags, "host", None) or "localhost"
    names = server_names(host)
    if getattr(flags, "bind_all", False):
        names += server_names("0.0.0.0")
    extra = os.environ.get(ALLOW_HOSTS_ENV, "")
    return allowed_names([*names, *(n.strip() for n in extra.split(",") if n.strip())])


def _json_error(start_response: StartResponse, status: str, message: str) -> list[bytes]:
    import json

    body = json.dumps({"error": message, "status": int(status.split()[0])}).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("X-Content-Type-Options", "nosniff"),
        ],
    )
    return [body]


class StepscopePlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: Any) -> None:
        self._logdir: str = getattr(context, "logdir", "") or ""
        self._hosts = tensorboard_host_names(context)
        self._state: ServerState | None = None
        self._app: WsgiApp | None = None

    def _ui(self) -> WsgiApp | None:
        """Built on first use: TensorBoard constructs every plugin at start-up."""
        if self._app is None and self._logdir:
            try:
                self._state = ServerState(self._logdir)
            except StepscopeError:
                return None
            self._app = create_wsgi_app(self._logdir, prefix=UI_PREFIX, state=self._state)
        return self._app

    def get_plugin_apps(self) -> dict[str, Any]:
        return {
            "/index.js": self._checked(self._entry_module),
            "/ui/*": self._checked(self._serve_ui),
        }

    def _checked(self, app: Any) -> Any:
        def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
            host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
            if not host_allowed(self._hosts, host):
                return _json_error(
                    start_response,
                    "403 Forbidden",
                    f"Host {host[:100]!r} is not a name of this server (set "
                    f"${ALLOW_HOSTS_ENV} to admit it)",
                )
            return app(environ, start_response)

        return guarded

    def is_active(self) -> bool:
        if self._ui() is None or self._state is None:
            return False
        try:
            return bool(self._state.runs())
        except StepscopeError:
            return False

    def frontend_metadata(self) -> Any:
        return base_plugin.FrontendMetadata(
            es_module_path="/index.js", tab_name="Stepscope", disable_reload=True
        )

    def _entry_module(
        self, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        body = (STATIC_DIR / "tensorboard.js").read_bytes()
        start_response(
            "200 OK",
            [
                ("Content-Type", "text/javascript; charset=utf-8"),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-cache"),
                ("X-Content-Type-Options", "nosniff"),
            ],
        )
        return [body]

    def _serve_ui(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        app = self._ui()
        if app is None:
            message = "stepscope: TensorBoard was started without a --logdir"
            return _json_error(start_response, "404 Not Found", message)
        return app(environ, start_response)
