"""Headless Chromium for the web UI tests: the browser fixture, opening pages, reading what
they render (tests/serve and tests/remote page tests). A pytest plugin of the root conftest:
the fixture and the hooks that keep Playwright's asyncio loop out of the other tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
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


# One Chromium for the session, launched by the first test that asks for it (each module still
# gets a clean one: `browser` closes the contexts a module left open). Playwright's sync
# API marks its asyncio loop as running on the main thread between its calls (so that no other
# loop starts while its own is suspended), and a later `asyncio.run` in another test fails on
# that mark (the serve shutdown and slow-body tests). The mark is therefore set only around the
# test phases that may call Playwright (`pytest_runtest_setup` / `_call` / `_teardown` below)
# and cleared outside them; launching one browser per module instead cost 1.5-2.4 s a module
# (driver, launch, close) over 25 modules.
_LIVE: dict[str, asyncio.AbstractEventLoop] = {}  # "loop": Playwright's, while it runs


@pytest.fixture(scope="session")
def _chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("browser tests need /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as p:
        loop = asyncio.get_running_loop()  # Playwright's, marked running by its start
        _LIVE["loop"] = loop
        try:
            chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            yield chromium
            chromium.close()
        finally:
            del _LIVE["loop"]


@pytest.fixture(scope="module")
def browser(_chromium: Any) -> Iterator[Any]:
    """The session's Chromium; what a module left open in it (contexts, their pages) is closed
    when the module ends, as the browser of its own was."""
    yield _chromium
    for context in _chromium.contexts:
        context.close()


def _may_call_playwright(item: pytest.Item, nextitem: pytest.Item | None, teardown: bool) -> bool:
    """Whether this phase of ``item`` may call Playwright: the item uses the browser, or its
    teardown also ends module- or session-scoped fixtures that may (the module's last item)."""
    if "browser" in getattr(item, "fixturenames", ()):
        return True
    module = getattr(item, "module", None)
    return teardown and (nextitem is None or getattr(nextitem, "module", None) is not module)


@contextmanager
def _playwright_loop_marked(on: bool) -> Iterator[None]:
    """Playwright's loop marked running (``on``, while it runs) for the block; unmarked after
    it, also when the block started or stopped Playwright."""
    before = _LIVE.get("loop")
    if on and before is not None:
        asyncio._set_running_loop(before)
    try:
        yield
    finally:
        if asyncio._get_running_loop() in {before, _LIVE.get("loop")} - {None}:
            asyncio._set_running_loop(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _playwright_loop_marked(_may_call_playwright(item, item, teardown=False)):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _playwright_loop_marked(_may_call_playwright(item, item, teardown=False)):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with _playwright_loop_marked(_may_call_playwright(item, nextitem, teardown=True)):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish() -> Iterator[None]:
    """A run stopped early (-x, Ctrl-C) ends the browser here, outside any test's teardown."""
    with _playwright_loop_marked(True):
        return (yield)


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
    # A page that already shows this tool keeps its mark through a change of the address's
    # hash: without this, the wait could return before the new address's render.
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.goto(f"{base}#/{tool}?{query}")
    wait_rendered(page, tool)


def render_count(page: Any) -> int:
    """How many renders the page has finished: read it before an action on the page, then wait
    for ``wait_rendered(page, tool, count + 1)`` (the tool's mark alone is still the last
    render's)."""
    return int(page.get_attribute("body", "data-render-count") or 0)


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
