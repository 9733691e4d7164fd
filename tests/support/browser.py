"""Headless Chromium for the web UI tests: the browser fixture, opening pages, reading what
they render (tests/serve and tests/remote page tests)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer
from tests.support.fixtures import REPO

CHROMIUM = Path("/usr/bin/chromium")
SIZES = {"1366x768": (1366, 768), "1920x1080": (1920, 1080)}  # a laptop's and a desktop's
SHOTS = REPO / "artifacts" / "screenshots"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Recorder:
    """What one page did: every request it made, console errors, uncaught exceptions."""

    base: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check(self) -> None:
        outside = [u for u in self.requests if not u.startswith(self.base)]
        assert not outside, f"requests left the server: {outside[:5]}"
        assert not self.errors, f"console errors: {self.errors[:5]}"


# One Chromium per test module, not per session: Playwright's sync API keeps its asyncio loop
# marked running on the main thread until it stops, so with one browser for the session every
# later test saw a running loop (`asyncio.run` then fails: the all-tiers run put the serve
# shutdown and slow-body tests after browser tests). A launch costs about a second.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("browser tests need /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


def open_page(browser: Any, base: str, block: bool = True) -> tuple[Any, Any, Recorder]:
    """A fresh context and page whose requests and errors are recorded; with ``block``, requests
    not for our server are also refused (the timing test leaves that out: intercepting every
    request through Playwright adds tens of milliseconds to each)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    rec = Recorder(base)
    context.on("request", lambda r: rec.requests.append(r.url))
    context.on("console", lambda m: rec.errors.append(m.text) if m.type == "error" else None)
    context.on("weberror", lambda e: rec.errors.append(f"uncaught: {e.error}"))
    if block:  # anything not for our server is refused (and recorded above)
        context.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith(base) else route.abort()
            ),
        )
    return context, page, rec


def run_name(server: RunningServer, prefix: str) -> str:
    runs = httpx.get(server.url + "api/runs").json()["runs"]
    return next(r["run"] for r in runs if r["run"].split("/")[0] == prefix)


def goto(page: Any, base: str, tool: str, run: str, host: str = "", **options: str) -> None:
    query = httpx.QueryParams({"run": run, **({"host": host} if host else {}), **options})
    page.goto(f"{base}#/{tool}?{query}")
    wait_rendered(page, tool)


def wait_rendered(page: Any, tool: str, count: int | None = None) -> None:
    selector = f'body[data-rendered="{tool}"]'
    if count is not None:
        selector += f'[data-render-count="{count}"]'
    page.wait_for_selector(selector, timeout=120_000)


def next_frames(page: Any, frames: int = 3) -> None:
    """Returns once the page has drawn ``frames`` more frames: what a page measures and lays
    out on its next frame (tables fitting their columns, charts their text) is done by then,
    however slow the machine (a fixed wait is not)."""
    page.evaluate(
        """(n) => new Promise((done) => {
            const tick = (left) => {
              if (left) requestAnimationFrame(() => tick(left - 1)); else done(true);
            };
            tick(n);
        })""",
        frames,
    )


def lookup(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = (
            len(data) if part == "length" else data[int(part) if isinstance(data, list) else part]
        )
    return data


def check_fields(page: Any, data: dict[str, Any]) -> int:
    """Every number the page marked with data-field equals the tool's JSON at that path."""
    fields = page.eval_on_selector_all(
        "[data-field]", "els => els.map(e => [e.dataset.field, e.dataset.value, e.textContent])"
    )
    for path, value, text in fields:
        expected = lookup(data, path)
        if value is None:
            assert text == str(expected), path
        else:
            assert float(value) == pytest.approx(float(expected), rel=0, abs=0), path
    return len(fields)


def tool_json(server: RunningServer, tool: str, run: str, host: str, **options: str) -> Any:
    params = {"run": run, "host": host, **options}
    r = httpx.get(server.url + f"api/tool/{tool}", params=params, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def drawn_shapes(page: Any, selector: str = "svg.chart") -> int:
    return int(
        page.eval_on_selector_all(
            selector,
            "els => els.reduce((n, e) => n + e.querySelectorAll('rect,path,circle').length, 0)",
        )
    )


def table_column(page: Any, table: str, key: str) -> list[str]:
    return list(
        page.eval_on_selector_all(
            f'table[data-table="{table}"] td[data-key="{key}"]',
            "els => els.map(e => e.dataset.value)",
        )
    )


def open_sized(browser: Any, base: str, size: str) -> tuple[Any, Any, Recorder]:
    """`open_page` at the window size ``size`` (a key of `SIZES`)."""
    width, height = SIZES[size]
    context, page, rec = open_page(browser, base)
    page.set_viewport_size({"width": width, "height": height})
    return context, page, rec
