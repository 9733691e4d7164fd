"""Helpers of the trace viewer's browser tests: opening the page, reading its view, waiting for
its windows (tests/serve/test_trace_viewer_*.py and the shell tests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer
from tests.support.browser import SHOTS, next_frames

PAGE = '.tool-page[data-tool="trace_viewer"]'
READY = f'{PAGE}[data-loading="0"][data-draw-count]'
STEPS_READY = f'{PAGE}[data-steps="ready"]'  # one host's steps arrive after the first window
OPEN_PAGES: list[Any] = []


@pytest.fixture(autouse=True)
def close_pages() -> Iterator[None]:
    """Closes the pages a test opened (autouse in the modules that import it)."""
    yield
    while OPEN_PAGES:
        OPEN_PAGES.pop().close()


def open_trace(browser: Any, server: RunningServer, run: str, shot: str = "") -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    OPEN_PAGES.append(page)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    query = httpx.QueryParams({"run": run})
    page.goto(f"{server.url}#/trace_viewer?{query}")
    page.wait_for_selector(READY, timeout=240_000)
    page.wait_for_selector(STEPS_READY, timeout=240_000)
    settle(page)
    if shot:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / shot))
    return page


def view(page: Any) -> dict[str, float]:
    return dict(page.evaluate("() => ({...window.stepscopeTrace.view})"))


def settle(page: Any) -> None:
    """Wait until no window fetch is queued or running and the last one is drawn. (A fetch is
    queued, `data-loading="1"`, as soon as the view changes; the frames first let input that
    changes the view on the next frame arrive.)"""
    next_frames(page)
    page.wait_for_function(
        """() => {
        const v = window.stepscopeTrace;
        return v.root.dataset.loading === '0' && !v.frameScheduled && v.drawCount > 0;
    }""",
        timeout=60_000,
    )


def choose(page: Any, control: str, value: str) -> None:
    """Picks ``value`` in one of the viewer's options (`data-control`), opening the toolbar's
    View menu that holds it."""
    select = f"[data-control='{control}']"
    if not page.is_visible(select):
        page.click(".tv-menu summary")
    page.select_option(select, value)


def canvas_share(page: Any) -> float:
    """The share of the window the timeline's canvas takes (what is on screen of it)."""
    return float(
        page.evaluate(
            """() => {
            const r = document.querySelector('canvas.tv-canvas').getBoundingClientRect();
            const w = Math.min(r.right, innerWidth) - Math.max(r.left, 0);
            const h = Math.min(r.bottom, innerHeight) - Math.max(r.top, 0);
            return (w * h) / (innerWidth * innerHeight);
        }"""
        )
    )
