"""A real TensorBoard (started on a free loopback port) serves the stepscope tab with our data."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from stepscope.model import ALL_HOSTS
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp

pytestmark = [pytest.mark.integration, pytest.mark.untimed]

pytest.importorskip(
    "tensorboard", reason="TensorBoard is not installed (pip install -e .[tensorboard])"
)

PLUGIN = "/data/plugin/stepscope"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def tensorboard(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    exe = shutil.which("tensorboard", path=os.path.dirname(sys.executable)) or "tensorboard"
    log = tmp_path_factory.mktemp("tb") / "tensorboard.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [exe, "--logdir", str(fixtures_dir / "tf"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/data/plugins_listing", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"TensorBoard did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_plugin_is_listed_and_loads_our_ui(tensorboard: str) -> None:
    listing = httpx.get(tensorboard + "/data/plugins_listing").json()
    meta = listing["stepscope"]
    assert meta["enabled"] is True
    assert meta["loading_mechanism"] == {"type": "IFRAME", "module_path": PLUGIN + "/index.js"}
    module = httpx.get(tensorboard + PLUGIN + "/index.js")
    assert module.status_code == 200 and "ui/index.html" in module.text
    page = httpx.get(tensorboard + PLUGIN + "/ui/index.html")
    assert page.status_code == 200 and 'src="static/app.js"' in page.text
    assert httpx.get(tensorboard + PLUGIN + "/ui/static/app.js").status_code == 200


def test_plugin_serves_the_same_data_as_stepscope_serve(
    tensorboard: str, fixtures_dir: Path
) -> None:
    direct = WsgiApp(build_routes(ServerState(fixtures_dir / "tf")))
    from tests.support.serve import wsgi_get

    def ours(path: str, query: str = "") -> bytes:
        status, _, body = wsgi_get(direct, path, query)
        assert status == 200, (path, query, body[:200])
        return body

    def theirs(path: str, params: dict[str, str] | None = None) -> httpx.Response:
        return httpx.get(tensorboard + PLUGIN + "/ui" + path, params=params, timeout=120)

    runs = theirs("/api/runs").json()["runs"]
    assert len(runs) == 6
    assert theirs("/api/runs").content == ours("/api/runs")
    for run in runs:
        tools = theirs("/api/tools", {"run": run["run"]}).json()
        for tool in tools:
            if not tool.get("available") or "json" not in tool["formats"]:
                continue
            host = run["hosts"][0] if len(run["hosts"]) == 1 else ALL_HOSTS
            query = {"run": run["run"], "host": host}
            got = theirs(f"/api/tool/{tool['name']}", query)
            assert got.status_code == 200, (tool["name"], got.text[:300])
            assert got.content == ours(f"/api/tool/{tool['name']}", str(httpx.QueryParams(query)))
    refused = theirs("/api/tools", {"run": "../../etc"})
    assert refused.status_code == 404 and "refused" in refused.json()["error"]


@pytest.mark.browser
def test_stepscope_tab_renders_in_tensorboard(
    tensorboard: str, fixtures_dir: Path, browser: Any
) -> None:
    """TensorBoard's own page, its Stepscope tab: our UI renders the overview in the tab's frame,
    with the same numbers as the API, no console errors and no request leaving the machine."""
    requests: list[str] = []
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.on("request", lambda r: requests.append(r.url))
    context.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page = context.new_page()
    page.goto(tensorboard + "/#stepscope")
    deadline = time.monotonic() + 120
    frame = None
    while frame is None and time.monotonic() < deadline:
        frame = next(
            (
                f
                for f in page.frames
                if "/ui/index.html" in f.url
                and f.query_selector('body[data-rendered="overview_page"]')
            ),
            None,
        )
        page.wait_for_timeout(200)  # (lets Playwright take in the frames that appeared)
    assert frame is not None, f"no overview in the tab: {[f.url for f in page.frames]} {errors}"
    run = httpx.QueryParams(frame.url.split("?", 1)[1])["run"]
    shown = frame.get_attribute('[data-field="step_time_ms.avg"]', "data-value")
    context.close()
    data = httpx.get(
        tensorboard + PLUGIN + "/ui/api/tool/overview_page", params={"run": run}, timeout=120
    ).json()
    assert shown is not None and float(shown) == data["step_time_ms"]["avg"]
    assert not [u for u in requests if not u.startswith(tensorboard)]
    assert not errors, errors


@pytest.mark.browser
def test_tensorboard_links_open_the_page_they_were_copied_from(
    tensorboard: str, browser: Any
) -> None:
    """The page shown in the tab is kept in TensorBoard's address (#stepscope&stepscope_page=),
    so a copied TensorBoard link opens the same tool and run (issue #33)."""
    run = httpx.get(tensorboard + PLUGIN + "/ui/api/runs", timeout=60).json()["runs"][0]["run"]
    wanted = f"/op_stats?{httpx.QueryParams({'run': run})}"
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        page = context.new_page()
        page.goto(f"{tensorboard}/#stepscope&stepscope_page={quote(wanted, safe='')}")
        frame = _ui_frame(page, "op_stats")
        assert frame is not None, [f.url for f in page.frames]
        # moving to another page in the tab updates TensorBoard's address
        frame.evaluate("document.body.removeAttribute('data-rendered')")
        frame.evaluate(
            f"location.hash = '#/input_pipeline_analyzer?{httpx.QueryParams({'run': run})}'"
        )
        assert _ui_frame(page, "input_pipeline_analyzer") is not None
        page.wait_for_function("() => location.hash.includes('stepscope_page=%2Finput_pipeline')")
        assert page.evaluate("location.hash").startswith("#stepscope&")
    finally:
        context.close()


def _ui_frame(page: Any, tool: str) -> Any:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for f in page.frames:
            if "/ui/index.html" in f.url and f.query_selector(f'body[data-rendered="{tool}"]'):
                return f
        page.wait_for_timeout(200)
    return None
