"""Every page of every kind of run at 1280 and 1920 px, in headless Chromium: screenshots for CI's
artifacts (artifacts/screenshots/pages/), and what a reader must never see — a page wider than
the window (hidden columns), a literal "null"/"undefined"/"NaN", "1 rows"."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer, start_server
from stepscope.serve.state import ServerState
from tests.support.browser import SHOTS
from tests.support.fixtures import FIXTURES, tf_xplane
from tests.support.serve import make_logdir
from tests.support.trace_viewer import OPEN_PAGES, close_pages

__all__ = ["close_pages"]  # fixtures

pytestmark = pytest.mark.browser
PAGES = SHOTS / "pages"
WIDTHS = (1280, 1920)
RUNS = {
    "tf": "tf/remote",
    "gpu": "gpu",
    "two_hosts": "a/2026_01_01_00_00_00",
    "jax_gpu": "jax_gpu/run",  # the XLA tools' pages (op_profile, hlo_stats, roofline, ...)
}
BAD_TEXT = re.compile(r"\b(null|undefined|NaN)\b|\b1 rows\b")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = make_logdir(tmp_path_factory.mktemp("logs"), FIXTURES)  # two hosts: vm, w1
    tf_run = root / "tf" / "plugins" / "profile" / "remote"
    tf_run.mkdir(parents=True)
    shutil.copy(tf_xplane("remote"), tf_run / "localhost_6009.xplane.pb")
    (root / "gpu").mkdir()
    shutil.copy(
        FIXTURES / "kineto" / "v100_training_with_memory.json.gz", root / "gpu" / "rank0.json.gz"
    )
    jax_run = root / "jax_gpu" / "plugins" / "profile" / "run"
    jax_run.mkdir(parents=True)
    shutil.copy(
        FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb", jax_run / "gpu.xplane.pb"
    )
    state = ServerState(root, cache_dir=tmp_path_factory.mktemp("cache"))
    running = start_server(state.logdir, state=state)
    yield running
    running.stop()


def tools_of(server: RunningServer, run: str) -> list[str]:
    tools = httpx.get(server.url + "api/tools", params={"run": run}, timeout=300).json()
    return [t["name"] for t in tools if t.get("page") and t.get("available", True)]


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_every_page_reads_well_at_common_widths(
    browser: Any, server: RunningServer, kind: str
) -> None:
    run = RUNS[kind]
    names = tools_of(server, run)
    assert len(names) >= 4
    PAGES.mkdir(parents=True, exist_ok=True)
    problems = []
    for width in WIDTHS:
        page = browser.new_page(viewport={"width": width, "height": 1000 if width < 1900 else 1080})
        OPEN_PAGES.append(page)
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        for tool in names:
            hash_ = f"#/{tool}?{httpx.QueryParams({'run': run})}"
            problems += read_page(page, server, hash_, tool, f"{kind}_{tool}_{width}")
        assert not errors, errors
    assert not problems, "\n".join(problems)


def read_page(page: Any, server: RunningServer, hash_: str, tool: str, shot: str) -> list[str]:
    """Open one page, save its screenshot, and list what a reader must never see on it."""
    width = page.viewport_size["width"]
    page.goto(f"{server.url}{hash_}")
    page.wait_for_selector(f'body[data-rendered="{tool}"]', timeout=240_000)
    page.wait_for_timeout(250)
    page.screenshot(path=str(PAGES / f"{shot}.png"), full_page=True)
    problems = []
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    if overflow > 1:
        problems.append(f"{tool} at {width}px: page {overflow}px wider than the window")
    text = page.inner_text("#page")
    for match in BAD_TEXT.finditer(text):
        context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
        problems.append(f"{tool} at {width}px: {match.group(0)!r} in …{context}…")
    page.evaluate("document.body.removeAttribute('data-rendered')")
    return problems


def test_compare_page_reads_well_at_common_widths(browser: Any, server: RunningServer) -> None:
    PAGES.mkdir(parents=True, exist_ok=True)
    runs = {"base": RUNS["tf"], "cand": RUNS["gpu"]}  # a TensorFlow run against a PyTorch run
    hash_ = f"#/compare?{httpx.QueryParams(runs)}"
    problems: list[str] = []
    for width in WIDTHS:
        page = browser.new_page(viewport={"width": width, "height": 1000})
        OPEN_PAGES.append(page)
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        problems += read_page(page, server, hash_, "compare", f"compare_{width}")
        assert not errors, errors
    assert not problems, "\n".join(problems)


def test_wide_tables_keep_every_column_within_reach(browser: Any, server: RunningServer) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    OPEN_PAGES.append(page)
    page.goto(f"{server.url}#/op_stats?{httpx.QueryParams({'run': RUNS['gpu']})}")
    page.wait_for_selector('body[data-rendered="op_stats"]', timeout=240_000)
    table = "table[data-table='op_stats']"
    sticky = page.evaluate(
        f"""() => {{
        const th = document.querySelector("{table} thead th");
        const td = document.querySelector("{table} tbody td");
        return [getComputedStyle(th).position, getComputedStyle(td).position];
    }}"""
    )
    assert sticky == ["sticky", "sticky"]  # header row and first column stay in view
    # Scrolling down inside the table keeps the header at the top of the box.
    page.evaluate("document.querySelector('.table-scroll').scrollTop = 400")
    box_top = page.evaluate("document.querySelector('.table-scroll').getBoundingClientRect().top")
    head_top = page.evaluate(
        f'document.querySelector("{table} thead th").getBoundingClientRect().top'
    )
    assert abs(head_top - box_top) < 2
    # The column chooser hides a column and the choice survives a reload.
    page.click(".col-chooser summary")
    page.uncheck(".col-menu input[data-column='occurrences']")
    headers = page.eval_on_selector_all(f"{table} thead th", "els => els.map(e => e.dataset.key)")
    assert "occurrences" not in headers and "name" in headers
    assert "1 column hidden" in page.inner_text(".table-tools .count")
    page.reload()
    page.wait_for_selector('body[data-rendered="op_stats"]', timeout=240_000)
    headers = page.eval_on_selector_all(f"{table} thead th", "els => els.map(e => e.dataset.key)")
    assert "occurrences" not in headers
    page.screenshot(path=str(PAGES / "op_stats_columns_1280.png"))
    page.evaluate("localStorage.clear()")
