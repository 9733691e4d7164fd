"""The Compare page and its API: two runs or two hosts side by side, significance marks,
breakdown bars, delta tables and trace viewer links to the same step in both runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import RunningServer, start_server
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp
from tests.support.serve import wsgi_get

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

BASE = "a_ctl/2026_01_01_00_00_00"
CAND = "b_ctl_opt/2026_01_01_00_00_00"
PAIR = "c_pair/2026_01_01_00_00_00"
BROKEN = "d_broken/2026_01_01_00_00_00"


def _copy(fixtures: Path, name: str, run: str, host: str, root: Path) -> None:
    top, session = run.split("/")
    target = root / top / "plugins" / "profile" / session
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(next((fixtures / "tf" / name).rglob("*.xplane.pb")), target / f"{host}.xplane.pb")


@pytest.fixture(scope="module")
def compare_logdir(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare_logs")
    _copy(fixtures_dir, "ctl", BASE, "vm", root)
    _copy(fixtures_dir, "ctl_opt", CAND, "vm", root)
    _copy(fixtures_dir, "ctl", PAIR, "vm", root)
    _copy(fixtures_dir, "ctl_opt", PAIR, "w1", root)
    broken = root / "d_broken" / "plugins" / "profile" / "2026_01_01_00_00_00"
    broken.mkdir(parents=True)
    (broken / "vm.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\x0fnot an xspace")
    return root


@pytest.fixture(scope="module")
def wsgi_app(compare_logdir: Path) -> WsgiApp:
    return WsgiApp(build_routes(ServerState(compare_logdir, use_cache=False)))


def _get(app: WsgiApp, query: str) -> tuple[int, Any]:
    status, _, body = wsgi_get(app, "/api/compare", query)
    return status, json.loads(body)


def test_api_compares_two_runs(wsgi_app: WsgiApp) -> None:
    status, data = _get(wsgi_app, f"base={BASE}&cand={CAND}")
    assert status == 200
    assert data["verdict"].startswith("step time -78.7% [") and data["driver"] == "input"
    assert data["baseline"]["run"] == BASE and data["candidate"]["host"] == "vm"
    assert [s["step_num"] for s in data["baseline"]["steps"]] == [6, 7, 8, 9]
    metrics = {m["name"]: m for m in data["metrics"]}
    assert metrics["step_time.mean"]["significant"] and metrics["category.input"]["significant"]
    # what bounds each side: ctl waits for its slow map, ctl_opt computes
    assert data["baseline"]["bound_by"].startswith("Bound by input: ")
    assert data["candidate"]["bound_by"].startswith("Bound by compute: ")
    # neither run has a warm-up: every step is compared, as with steps=all
    assert data["compared"] == "all" and data["baseline"]["warmup_steps"] == []


def test_api_compares_two_hosts_of_one_run(wsgi_app: WsgiApp) -> None:
    status, data = _get(wsgi_app, f"base={PAIR}&base_host=w1&cand={PAIR}&cand_host=vm")
    assert status == 200 and data["verdict"].startswith("step time +369.1%")
    assert (data["baseline"]["host"], data["candidate"]["host"]) == ("w1", "vm")


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        (f"base={BASE}", 400, "compare needs two runs: give cand"),
        (f"base={BASE}&cand=nope/x", 404, "nope/x"),
        (f"base={BASE}&cand={CAND}&cand_host=zz", 404, "has no host 'zz'"),
        (f"base={BASE}&cand={CAND}&steps=warm", 400, "steps='warm': give 'all' or 'once_warm'"),
    ],
)
def test_api_errors_are_one_line(wsgi_app: WsgiApp, query: str, status: int, message: str) -> None:
    got, data = _get(wsgi_app, query)
    assert got == status and message in data["error"] and "\n" not in data["error"]


# ---- in a real browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compare_server(
    compare_logdir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    state = ServerState(compare_logdir, cache_dir=tmp_path_factory.mktemp("compare_cache"))
    running = start_server(state.logdir, state=state)
    yield running
    running.stop()


@pytest.fixture
def cmp_page(browser: Any, compare_server: RunningServer) -> Iterator[tuple[Any, Any]]:
    from tests.support.browser import open_page

    context, page, rec = open_page(browser, compare_server.url)
    yield page, rec
    context.close()
    rec.check()


def _open(page: Any, base: str, hash_: str) -> None:
    from tests.support.browser import wait_rendered

    page.goto(f"{base}{hash_}")
    wait_rendered(page, "compare")


@pytest.mark.browser
def test_compare_page_two_runs(cmp_page: tuple[Any, Any], compare_server: RunningServer) -> None:
    page, _ = cmp_page
    _open(page, compare_server.url, "#/compare")  # defaults: the first two runs
    verdict = page.locator(".cmp-verdict")
    assert verdict.text_content().startswith("step time -78.7% [")
    assert verdict.get_attribute("data-driver") == "input"
    assert verdict.get_attribute("data-direction") == "faster"
    bound = page.locator('.cmp-bound[data-side="baseline"]').text_content()
    assert bound.startswith("Baseline: Bound by input: ")
    assert page.get_attribute("#compare-link", "aria-current") == "page"
    mean = page.locator('tr[data-metric="step_time.mean"]')
    assert mean.get_attribute("data-significant") == "true"
    assert mean.locator("td.change").text_content() == "-78.7%"
    assert "▼ significant" in mean.locator("td.sig").text_content()
    host = page.locator('tr[data-metric="category.host_compute"]')
    assert host.get_attribute("data-significant") == "false"
    assert host.locator("td.sig").text_content() == "–"
    assert page.locator('tr[data-metric="memory.peak"] td.sig').text_content() == "n/a"
    # side-by-side breakdown: two bars, the input segment far taller in the baseline
    bars = page.locator("figure.chart-box svg g.bar")
    assert bars.count() == 2
    heights = [
        float(bars.nth(i).locator('rect[data-series="input"]').get_attribute("height"))
        for i in range(2)
    ]
    assert heights[0] > 20 * heights[1]
    stages = page.locator(
        'table[data-table="input_stages"] td[data-key="name"]'
    ).all_text_contents()
    assert stages[0] == "Iterator::Root::ForeverRepeat[0]::BatchV2::Map"
    statuses = page.locator('table[data-table="input_stages"] td[data-key="status"]')
    assert statuses.first.text_content() == "gone"


@pytest.mark.browser
def test_compare_page_trace_links_open_the_same_step(
    cmp_page: tuple[Any, Any], compare_server: RunningServer
) -> None:
    from tests.support.browser import wait_rendered

    page, _ = cmp_page
    _open(page, compare_server.url, f"#/compare?base={BASE}&cand={CAND}")
    base_link = page.locator('a[data-trace="baseline"]')
    cand_link = page.locator('a[data-trace="candidate"]')
    # the baseline's median step by default; ctl_opt counts its steps 21-24, not 6-9, so the
    # candidate's step at the same position is opened
    assert base_link.get_attribute("href").endswith("&step=7")
    assert cand_link.get_attribute("href").endswith("&step=22")
    page.select_option('select[aria-label="Step to open"]', "9")
    assert base_link.get_attribute("href").endswith("&step=9")
    assert cand_link.get_attribute("href").endswith("&step=24")
    assert cand_link.text_content().startswith("Candidate: train 24")
    cand_link.click()
    wait_rendered(page, "trace_viewer")
    # the steps arrive after the first window; then the page fits the step asked for
    page.wait_for_selector('.tool-page[data-steps="ready"]', timeout=60_000)
    page.wait_for_function("window.stepscopeTrace && window.stepscopeTrace.stepIndex !== undefined")
    view = page.evaluate(
        "(() => { const v = window.stepscopeTrace; const s = v.structure.steps;"
        " return {i: v.stepIndex, n: s.number[v.stepIndex], t0: v.view.t0, t1: v.view.t1,"
        " a: s.start_ns[v.stepIndex], b: s.start_ns[v.stepIndex] + s.dur_ns[v.stepIndex]}; })()"
    )
    assert view["n"] == 24
    assert view["t0"] <= view["a"] and view["b"] <= view["t1"]
    assert view["t1"] - view["t0"] < 1.2 * (view["b"] - view["a"])  # zoomed to that step


@pytest.mark.browser
def test_compare_page_two_hosts_pickers_and_swap(
    cmp_page: tuple[Any, Any], compare_server: RunningServer
) -> None:
    from tests.support.browser import render_count, wait_rendered

    page, _ = cmp_page
    _open(page, compare_server.url, f"#/compare?base={PAIR}&base_host=vm&cand={PAIR}&cand_host=w1")
    assert page.locator(".cmp-verdict").text_content().startswith("step time -78.7%")
    assert (
        "Baseline: c_pair/2026_01_01_00_00_00 · vm"
        in page.locator(".cmp-sides").first.text_content()
    )
    count = render_count(page)
    page.click('button[data-action="swap"]')
    wait_rendered(page, "compare", count + 1)
    assert page.locator(".cmp-verdict").text_content().startswith("step time +369.1%")
    assert page.locator(".cmp-verdict").get_attribute("data-direction") == "slower"
    assert "base_host=w1" in page.url and "cand_host=vm" in page.url
    # choosing another run in a picker reloads the comparison
    page.select_option('select[data-side="candidate"][data-control="run"]', CAND)
    wait_rendered(page, "compare", count + 2)
    assert f"cand={CAND.replace('/', '%2F')}" in page.url
    assert page.locator('select[data-side="candidate"][data-control="host"]').is_disabled()


@pytest.mark.browser
def test_compare_page_reports_a_broken_run_and_keeps_the_pickers(
    browser: Any, compare_server: RunningServer
) -> None:
    from tests.support.browser import open_page, render_count, wait_rendered

    context, page, rec = open_page(browser, compare_server.url)
    try:
        _open(page, compare_server.url, f"#/compare?base={BASE}&cand={BROKEN}")
        error = page.locator(".note-error").text_content()
        assert error.startswith("Cannot compare: ") and "vm.xplane.pb" in error
        assert page.locator('select[data-side="candidate"][data-control="run"]').is_visible()
        # the only console error is the failed request itself
        assert all("status of 422" in e for e in rec.errors) and rec.errors
        count = render_count(page)
        page.select_option('select[data-side="candidate"][data-control="run"]', BASE)
        wait_rendered(page, "compare", count + 1)
        assert "same run and host" in page.locator(".note-info").first.text_content()
        assert page.locator(".cmp-verdict").text_content().startswith("no change in step time")
    finally:
        context.close()
