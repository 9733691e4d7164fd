"""Issue #28 item 6: the TensorBoard plugin checks Host as `stepscope serve` does (a DNS
rebinding page got 200 and the run list from it)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.fixtures import FIXTURES

pytest.importorskip("tensorboard", reason="TensorBoard is not installed")


def _get(plugin: Any, route: str, path: str, host: str) -> tuple[str, bytes]:
    status: list[str] = []

    def start_response(code: str, headers: list[tuple[str, str]], *_: Any) -> None:
        status.append(code)

    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "HTTP_HOST": host,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "6006",
        "wsgi.url_scheme": "http",
    }
    body = b"".join(plugin.get_plugin_apps()[route](environ, start_response))
    return status[0], body


def _plugin(monkeypatch: pytest.MonkeyPatch, allow: str = "", **flags: Any) -> Any:
    from stepscope.serve.tensorboard_plugin import StepscopePlugin

    monkeypatch.setenv("STEPSCOPE_ALLOW_HOSTS", allow)
    context = SimpleNamespace(logdir=str(FIXTURES / "tf"), flags=SimpleNamespace(**flags))
    return StepscopePlugin(context)


RUNS = "/data/plugin/stepscope/ui/api/runs"


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("attacker.example", "403"),
        ("attacker.example:6006", "403"),
        ("127.0.0.1:6006", "200"),
        ("localhost:6006", "200"),
        ("[::1]:6006", "200"),
    ],
)
def test_plugin_routes_check_the_host(
    monkeypatch: pytest.MonkeyPatch, host: str, status: str
) -> None:
    plugin = _plugin(monkeypatch, host=None, bind_all=False)
    code, body = _get(plugin, "/ui/*", RUNS, host)
    assert code.startswith(status), body[:200]
    assert _get(plugin, "/index.js", "/data/plugin/stepscope/index.js", host)[0].startswith(status)
    if status == "403":
        assert b"not a name of this server" in body and b"ctl" not in body


def test_plugin_admits_tensorboards_host_and_the_allowed_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugin = _plugin(monkeypatch, "profiles.example.com", host="box.internal")
    assert _get(plugin, "/ui/*", RUNS, "box.internal:6006")[0].startswith("200")
    assert _get(plugin, "/ui/*", RUNS, "profiles.example.com")[0].startswith("200")
    assert _get(plugin, "/ui/*", RUNS, "other.example")[0].startswith("403")
    anyone = _plugin(monkeypatch, "*")
    assert _get(anyone, "/ui/*", RUNS, "other.example")[0].startswith("200")
