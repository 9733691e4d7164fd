"""The input pipeline page shows the DataLoader worker processes captured into the profile
(issue #26): the loader's sentence and a row per worker, every figure the tool's; and the
Python iterators a loop without a DataLoader waits on (decision 343)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import start_server
from stepscope.serve.state import ServerState
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import write_run
from tests.support.a11y import grave_violations
from tests.support.browser import CHROMIUM, check_fields, goto, open_page, tool_json, wait_rendered
from tests.support.fetch_loop import FETCH, Piece, fetch_loop_builder
from tests.support.loader import loader_space, plain_loader_space
from tests.support.optional import skip_without

if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


@contextmanager
def _input_page(browser: Any, tmp_path: Path, space: XSpaceBuilder) -> Iterator[tuple[Any, Any]]:
    """The input pipeline page of a run of ``space``, and the tool's JSON for it; the page's
    accessibility and its requests are checked on the way out."""
    run = write_run(tmp_path / "logs", [space])
    state = ServerState(tmp_path / "logs", cache_dir=tmp_path / "cache")
    server = start_server(state.logdir, state=state)
    try:
        context, page, rec = open_page(browser, server.url)
        goto(page, server.url, "input_pipeline_analyzer", run.name)
        wait_rendered(page, "input_pipeline_analyzer")
        yield page, tool_json(server, "input_pipeline_analyzer", run.name, "")
        assert grave_violations(page) == []
        context.close()
        rec.check()
    finally:
        server.stop()


def test_input_pipeline_page_shows_the_loader_workers(browser: Any, tmp_path: Path) -> None:
    space = loader_space(
        made_ms=[(0, 14, 15, 15), (0, 8, 9, 9), (15, 28, 30, 30), (10, 18, 20, 20)],
        asks_ms=[(10, 16), (17, 18), (27, 31), (32, 33)],
    )
    with _input_page(browser, tmp_path, space) as (page, data):
        [loader] = data["loader_workers"]
        body = page.inner_text("body")
        assert "DataLoader worker processes" in body and loader["summary"] in body
        rows = page.locator('[data-table="loader_workers"] tbody tr')
        assert rows.count() == 2
        assert "DataLoader worker 0 (pid 100)" in rows.nth(0).inner_text()
        assert check_fields(page, data) > 0  # every shown figure equals the tool's JSON


def test_a_plain_loaders_workers_show_the_verdict_functions_and_no_step_side(
    browser: Any, tmp_path: Path
) -> None:
    """A plain loop's loader (decisions 351-356): the verdict and its advice lead, the
    functions the workers' samples saw are listed, and the step-side columns (ready when
    asked, transfer), which only an instrumented loader times, are not shown as zeros."""
    space = plain_loader_space(
        step_ms=100, wait_ms=60, busy_ms=98, cpu=(8, 5.5), cpu_ms=30, cpu_wait_ms=5
    )
    with _input_page(browser, tmp_path, space) as (page, data):
        [loader] = data["loader_workers"]
        assert loader["verdict"] == "workers_busy"
        block = page.locator(".loader-workers")
        assert block.locator("[data-verdict=workers_busy]").inner_text() == (
            "The workers cannot keep up"
        )
        assert loader["advice"] in block.inner_text()
        headers = block.locator('[data-table="loader_workers"] thead').inner_text()
        assert "On CPU" in headers and "Per batch" in headers
        assert "Ready when asked" not in headers and "Transfer" not in headers
        functions = block.locator('[data-table="loader_worker_functions"] tbody tr')
        assert functions.count() == len(loader["functions"]) > 0
        assert loader["functions"][0]["function"] in functions.nth(0).inner_text()
        assert check_fields(page, data) > 0


def test_a_loader_of_uneven_batches_shows_its_verdict_and_what_to_change(
    browser: Any, tmp_path: Path
) -> None:
    """Decision 391: a worker idle while the loop waits for another's late batch: the page
    names the verdict and shows the advice (in_order=False, prefetch_factor)."""
    space = plain_loader_space(step_ms=100, wait_ms=60, busy_ms=(98, 20))
    with _input_page(browser, tmp_path, space) as (page, data):
        [loader] = data["loader_workers"]
        assert loader["verdict"] == "uneven_batches"
        block = page.locator(".loader-workers")
        badge = block.locator("[data-verdict=uneven_batches]")
        assert badge.inner_text() == "Batches of uneven cost"
        assert "in_order=False" in loader["advice"] and loader["advice"] in block.inner_text()
        assert check_fields(page, data) > 0


def test_the_python_iterator_the_loop_waits_on_is_listed(browser: Any, tmp_path: Path) -> None:
    """A loop fed by a plain generator: the page lists the iterator, its time per step and
    share, as the tool does (the tool named it, the page showed only its advice)."""
    with _input_page(browser, tmp_path, fetch_loop_builder(Piece(FETCH, 6, 6, "2"))) as (
        page,
        data,
    ):
        [row] = data["python_iterators"]
        shown = page.locator('[data-table="python_iterators"] tbody tr')
        assert shown.count() == 1
        text = shown.nth(0).inner_text()
        assert row["function"] == "batches (data.py)" and row["function"] in text
        assert f"{row['percent']:.1f}%" in text
