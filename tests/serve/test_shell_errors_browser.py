"""The shell in headless Chromium: an address naming a run, host or tool that is not there shows
an error naming it and the choices (never another page); "All hosts" on the trace viewer opens
the multi-host timeline; Kineto traces with any .json name are listed and open."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer
from tests.support.browser import SHOTS
from tests.support.fixtures import FIXTURES
from tests.support.serve import make_logdir, serving
from tests.support.trace_viewer import OPEN_PAGES, close_pages

__all__ = ["close_pages"]  # fixtures

pytestmark = [pytest.mark.browser, pytest.mark.untimed]
RUN = "a/2026_01_01_00_00_00"  # two hosts, vm and w1 (make_logdir)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = make_logdir(tmp_path_factory.mktemp("logs"), FIXTURES)
    (root / "bert").mkdir()
    shutil.copy(
        FIXTURES / "kineto" / "h100_bert_small_inference.json.gz", root / "bert" / "rank0.json.gz"
    )
    with serving(root, tmp_path_factory.mktemp("cache")) as running:
        yield running


def open_address(browser: Any, server: RunningServer, tool: str, **params: str) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    OPEN_PAGES.append(page)
    errors: list[str] = []
    # A wrong address's early fetches answer 404 (logged by Chromium): anything else is a bug.
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" and "404" not in m.text else None,
    )
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(f"{server.url}#/{tool}?{httpx.QueryParams(params)}")
    page.wait_for_selector("body[data-rendered]", timeout=120_000)
    return page


def choices(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("[data-choices] a", "els => els.map(e => e.textContent)"))


def test_unknown_run_is_named_with_the_runs(browser: Any, server: RunningServer) -> None:
    page = open_address(browser, server, "overview_page", run="a/nope")
    assert "No run “a/nope”" in page.inner_text(".note-error")
    assert choices(page) == ["a/2026_01_01_00_00_00", "bert"]
    assert page.locator(".tool-page[data-tool]").count() == 0  # no other run's page instead
    page.screenshot(path=str(SHOTS / "error_unknown_run.png"))
    page.click("[data-choices] a >> text=bert")
    page.wait_for_selector('.tool-page[data-tool="overview_page"]', timeout=120_000)
    assert not page.errors


def test_unknown_host_is_named_with_the_hosts(browser: Any, server: RunningServer) -> None:
    page = open_address(browser, server, "op_stats", run=RUN, host="w9")
    assert f"Run “{RUN}” has no host “w9”" in page.inner_text(".note-error")
    assert choices(page) == ["vm", "w1", "All hosts"]
    assert page.locator(".tool-page[data-tool]").count() == 0
    assert not page.errors


def test_unknown_tool_is_named_with_the_tools(browser: Any, server: RunningServer) -> None:
    page = open_address(browser, server, "flame_graph", run=RUN, host="vm")
    assert "No tool “flame_graph”" in page.inner_text(".note-error")
    assert "Trace viewer" in choices(page) and "Overview" in choices(page)
    assert page.locator(".tool-page[data-tool]").count() == 0
    assert not page.errors


def test_all_hosts_on_the_trace_viewer_opens_one_timeline_of_both_hosts(
    browser: Any, server: RunningServer
) -> None:
    page = open_address(browser, server, "trace_viewer", run=RUN, host="vm")
    page.wait_for_selector('.tool-page[data-tool="trace_viewer"]', timeout=120_000)
    page.select_option("#host-select", "ALL_HOSTS")
    page.wait_for_selector('.tv-pod[data-hosts="2"]', timeout=120_000)
    assert "#/trace_viewer?" in page.evaluate("location.hash")  # not sent to the overview
    assert page.locator("[data-error]").count() == 0
    assert not page.errors


def test_kineto_trace_with_any_json_name_is_a_run(browser: Any, server: RunningServer) -> None:
    runs = httpx.get(server.url + "api/runs").json()["runs"]
    bert = next(r for r in runs if r["run"] == "bert")
    assert bert["hosts"] == ["rank0"] and bert["formats"] == ["kineto"]
    page = open_address(browser, server, "overview_page", run="bert")
    page.wait_for_selector('.tool-page[data-tool="overview_page"]', timeout=120_000)
    assert not page.errors
