"""The stepscope tab in TensorBoard: the same pages and API, served through TensorBoard's WSGI app.

TensorBoard finds this class through the ``tensorboard_plugins`` entry point. Its routes live
under ``/data/plugin/stepscope``: ``/index.js`` is the ES module TensorBoard loads into the tab (it
shows our UI in an iframe) and ``/ui/*`` is `WsgiApp` over the same route handlers as
`stepscope serve`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tensorboard.plugins import base_plugin

from stepscope.errors import StepscopeError
from stepscope.serve.routes import STATIC_DIR
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import StartResponse, WsgiApp, create_wsgi_app

PLUGIN_NAME = "stepscope"
UI_PREFIX = f"/data/plugin/{PLUGIN_NAME}/ui"


class StepscopePlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: Any) -> None:
        self._logdir: str = getattr(context, "logdir", "") or ""
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
        return {"/index.js": self._entry_module, "/ui/*": self._serve_ui}

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
            body = b'{"error":"stepscope: TensorBoard was started without a --logdir","status":404}'
            start_response(
                "404 Not Found",
                [
                    ("Content-Type", "application/json"),
                    ("Content-Length", str(len(body))),
                    ("X-Content-Type-Options", "nosniff"),
                ],
            )
            return [body]
        return app(environ, start_response)
