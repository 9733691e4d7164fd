"""The Capture Profile dialog in a real headless Chromium: capture from a live server and a
dead address, watch per-worker progress and results, find the new run in the run list.

Needs /usr/bin/chromium and Playwright's Python package (as tests/serve/test_serve_browser.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture.remote.server import ProfilerServer
from stepscope.serve.app import RunningServer, start_server
from tests.support.optional import skip_without

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
OLD_RUN = "2026_01_01_00_00_00"


@pytest.fixture
def ui_server(tmp_path: Path, fixtures_dir: Path) -> Iterator[RunningServer]:
    run_dir = tmp_path / "logs" / "plugins" / "profile" / OLD_RUN
    run_dir.mkdir(parents=True)
    shutil.copy(
        next((fixtures_dir / "tf" / "ctl_opt").rglob("*.xplane.pb")), run_dir / "vm.xplane.pb"
    )
    running = start_server(tmp_path / "logs", use_cache=False)
    yield running
    running.stop()


@pytest.fixture
def errors() -> list[str]:
    """Console errors and uncaught exceptions of the page (checked after each test)."""
    return []


@pytest.fixture
def page(browser: Any, ui_server: RunningServer, errors: list[str]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    context.route(
        "**/*",
        lambda route: (
            route.continue_() if route.request.url.startswith(ui_server.url) else route.abort()
        ),
    )
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, errors


@pytest.mark.usefixtures("training")
def test_capture_dialog(
    page: Any, ui_server: RunningServer, server: ProfilerServer, dead: str
) -> None:
    page.goto(f"{ui_server.url}?token={ui_server.token}")  # as `stepscope serve` prints it
    page.wait_for_selector("body[data-rendered]", timeout=120_000)
    button = page.locator("#capture-button")
    button.wait_for(state="visible")
    button.click()
    dialog = page.locator("#capture-dialog")
    assert dialog.is_visible()
    page.fill("#capture-service_addr", f"grpc://{server.address}, grpc://{dead}")
    page.fill("#capture-duration_ms", "1500")
    page.fill("#capture-num_tracing_attempts", "1")
    page.select_option("#capture-host_tracer_level", "1")
    page.select_option("#capture-python_tracer_level", "0")
    page.click("#capture-start")
    # Progress while it runs: the live worker shows elapsed / expected seconds.
    live = page.locator(f'li.capture-worker[data-address="{server.address}"]')
    live.locator("progress").wait_for(timeout=10_000)
    assert "/ 1.5 s" in live.inner_text()
    page.wait_for_selector('#capture-message[data-state="done"]', timeout=30_000)
    assert live.get_attribute("data-state") == "ok"
    failed = page.locator(f'li.capture-worker[data-address="{dead}"]')
    assert failed.get_attribute("data-state") == "failed"
    assert "unavailable" in failed.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "capture_dialog.png"))
    link = page.locator("#capture-open-run")
    session = link.inner_text().removeprefix("Open run ")
    # The shell listed the new run without a reload.
    page.wait_for_function(
        "s => [...document.querySelectorAll('#run-select option')].some(o => o.value === s)",
        arg=session,
        timeout=10_000,
    )
    link.click()
    assert not dialog.is_visible()
    page.wait_for_function(
        "s => document.getElementById('run-select').value === s", arg=session, timeout=10_000
    )
    options = page.eval_on_selector_all("#run-select option", "els => els.map(e => e.value)")
    assert sorted(options) == sorted([OLD_RUN, session])


def test_bad_input_is_shown_in_the_dialog(
    page: Any, ui_server: RunningServer, errors: list[str]
) -> None:
    page.goto(f"{ui_server.url}?token={ui_server.token}")  # as `stepscope serve` prints it
    page.locator("#capture-button").click()
    page.fill("#capture-service_addr", "http://not-grpc:80")
    page.click("#capture-start")
    alert = page.locator("#capture-status [role=alert]")
    alert.wait_for(timeout=10_000)
    assert "grpc://" in alert.inner_text()
    assert page.locator("#capture-start").is_enabled()
    # The browser logs the refused request (HTTP 400) itself; that one is expected.
    errors[:] = [e for e in errors if "status of 400" not in e]
