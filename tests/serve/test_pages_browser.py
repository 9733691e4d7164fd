"""Every page of every fixture's run at a laptop's size and a desktop's (1366x768, 1920x1080),
in headless Chromium: a screenshot of each for CI's artifacts (artifacts/screenshots/pages/),
and what a reader must never see — a page wider than the window, a literal
"null"/"undefined"/"NaN", "1 rows", a console error — and, at the laptop's size, no serious or
critical accessibility violation (axe-core). One server (the session's, every fixture) and one
browser page per size for all of it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer
from tests.support.a11y import grave_violations
from tests.support.browser import SHOTS, SIZES, Recorder, next_frames, open_sized, wait_rendered

pytestmark = [pytest.mark.browser, pytest.mark.untimed]
PAGES = SHOTS / "pages"
A11Y_SIZE = "1366x768"  # the check looks at the markup: once per page is enough
BAD_TEXT = re.compile(r"\b(null|undefined|NaN)\b|\b1 rows\b")
# Sizes are written in binary units on every page (KiB, MiB, GiB: the declared field units);
# a decimal size ("5892.8 MB") among them reads as another quantity. Rates stay GB/s.
DECIMAL_SIZE = re.compile(r"\b\d+(\.\d+)? (kB|KB|MB|GB|TB)\b(?!/s)")
# The runs of the session's log directory (tests/support/gpu_pages.py), by name prefix.
RUNS = [
    "gpu",
    "bert",
    "ranks",
    "jaxgpu",
    "jaxcpu",
    "tf2",
    "k_a100_triton_tiny",
    "k_b200_vllm_fp8_rank0",
    "k_cpu_only_gloo_rank34",
    "k_h100_timesformer_inference",
    "k_mi300x_resnet_training_rank0",
    "k_v100_resnet50_training_2021schema",
    "tf_keras",
    "tf_keras_marked",
    "tf_remote",
    "tf_big_ctl",
]


@pytest.fixture(scope="module", params=sorted(SIZES))
def sized(
    request: pytest.FixtureRequest, browser: Any, gpu_server: RunningServer
) -> Iterator[tuple[Any, Recorder, str]]:
    context, page, rec = open_sized(browser, gpu_server.url, request.param)
    yield page, rec, request.param
    context.close()


# A table's header wider than its column: its text runs under the next header and is cut
# ("Memory bandwidtl"); headers wrap between words only, so the column holds the longest word.
CUT_HEADERS = """() => [...document.querySelectorAll('table.data thead th')]
    .filter((th) => {
      const label = th.querySelector('button.sort') || th;
      return label.scrollWidth > label.clientWidth + 1
        || label.getBoundingClientRect().width > th.getBoundingClientRect().width + 1;
    })
    .map((th) => [th.closest('table').dataset.table, th.dataset.key, th.textContent])"""


# Two labels of one chart drawn over each other (a unit over the top tick's value).
CHART_TEXT_OVERLAPS = """() => {
    const found = [];
    for (const chart of document.querySelectorAll('svg.chart')) {
      const boxes = [...chart.querySelectorAll('text')]
        .filter((t) => t.textContent.trim() && !t.closest('[hidden]'))
        .map((t) => [t.textContent, t.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0);
      for (let i = 0; i < boxes.length; i += 1) {
        for (let j = i + 1; j < boxes.length; j += 1) {
          const [a, r] = boxes[i];
          const [b, q] = boxes[j];
          const w = Math.min(r.right, q.right) - Math.max(r.left, q.left);
          const h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
          if (w > 1 && h > 1) found.push([chart.getAttribute('aria-label') || '', a, b]);
        }
      }
    }
    return found.slice(0, 20);
}"""


def run_named(server: RunningServer, prefix: str) -> str:
    runs = httpx.get(server.url + "api/runs", timeout=60).json()["runs"]
    return next(r["run"] for r in runs if r["run"].split("/")[0] == prefix)


def tools_of(server: RunningServer, run: str) -> list[str]:
    tools = httpx.get(server.url + "api/tools", params={"run": run}, timeout=600).json()
    return [t["name"] for t in tools if t.get("page") and t.get("available", True)]


def read_page(page: Any, rec: Recorder, hash_: str, tool: str, shot: str, a11y: bool) -> list[str]:
    """Open one page, save its screenshot, list what a reader must never see on it."""
    size = f"{page.viewport_size['width']}x{page.viewport_size['height']}"
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.goto(f"{rec.base}{hash_}")
    wait_rendered(page, tool)
    if tool == "trace_viewer":  # its first window, drawn
        page.wait_for_selector('.tool-page[data-loading="0"][data-draw-count]', timeout=240_000)
    next_frames(page)  # charts and tables measure themselves on the next frame
    page.screenshot(path=str(PAGES / size / f"{shot}.png"), full_page=True)
    problems = []
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    if overflow > 1:
        problems.append(f"{shot} at {size}: page {overflow}px wider than the window")
    for chart, a, b in page.evaluate(CHART_TEXT_OVERLAPS):
        problems.append(f"{shot} at {size}: chart {chart}: {a!r} overlaps {b!r}")
    for table, key, text in page.evaluate(CUT_HEADERS):
        problems.append(f"{shot} at {size}: header {text!r} ({table}.{key}) cut by its column")
    text = page.inner_text("#page")
    for match in DECIMAL_SIZE.finditer(text):
        context = text[max(0, match.start() - 40) : match.end() + 10].replace("\n", " ")
        problems.append(f"{shot} at {size}: a decimal size {match.group(0)!r} in …{context}…")
    for match in BAD_TEXT.finditer(text):
        context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
        problems.append(f"{shot} at {size}: {match.group(0)!r} in …{context}…")
    if a11y:
        problems += [f"{shot}: {v}" for v in grave_violations(page)]
    if rec.errors:
        problems.append(f"{shot} at {size}: console errors {rec.errors[:3]}")
        rec.errors.clear()
    return problems


@pytest.mark.parametrize("prefix", RUNS)
def test_every_page_reads_well_at_both_sizes(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer, prefix: str
) -> None:
    page, rec, size = sized
    run = run_named(gpu_server, prefix)
    names = tools_of(gpu_server, run)
    assert len(names) >= 4
    (PAGES / size).mkdir(parents=True, exist_ok=True)
    problems = []
    for tool in names:
        hash_ = f"#/{tool}?{httpx.QueryParams({'run': run})}"
        problems += read_page(page, rec, hash_, tool, f"{prefix}_{tool}", size == A11Y_SIZE)
    assert not problems, "\n".join(problems)


def test_compare_page_reads_well_at_both_sizes(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, rec, size = sized
    (PAGES / size).mkdir(parents=True, exist_ok=True)
    runs = {"base": run_named(gpu_server, "tf2"), "cand": run_named(gpu_server, "gpu")}
    hash_ = f"#/compare?{httpx.QueryParams(runs)}"
    problems = read_page(page, rec, hash_, "compare", "compare", size == A11Y_SIZE)
    assert not problems, "\n".join(problems)


def test_wide_tables_keep_every_column_within_reach(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, size = sized
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.goto(f"{gpu_server.url}#/op_stats?{httpx.QueryParams({'run': 'gpu'})}")
    wait_rendered(page, "op_stats")
    table = "table[data-table='op_stats']"
    sticky = page.evaluate(
        f"""() => {{
        const th = document.querySelector("{table} thead th");
        const td = document.querySelector("{table} tbody td");
        return [getComputedStyle(th).position, getComputedStyle(td).position];
    }}"""
    )
    assert sticky == ["sticky", "sticky"]  # header row and the pinned columns stay in view
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
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.reload()
    wait_rendered(page, "op_stats")
    headers = page.eval_on_selector_all(f"{table} thead th", "els => els.map(e => e.dataset.key)")
    assert "occurrences" not in headers
    page.screenshot(path=str(PAGES / f"op_stats_columns_{size}.png"))
    page.evaluate("localStorage.clear()")


def test_every_tool_reads_well_in_the_dark_theme(browser: Any, gpu_server: RunningServer) -> None:
    """The dark theme (the system's setting) over each page once (the JAX GPU run has every
    device tool, the two-host TF run the pod and tf.data pages) and Compare: no serious
    accessibility violation (white text on the light accent of the dark theme failed
    contrast on every Export button); screenshots in artifacts/screenshots/pages/1366x768/dark/."""
    context = browser.new_context(viewport={"width": 1366, "height": 768}, color_scheme="dark")
    page = context.new_page()
    rec = Recorder(gpu_server.url)
    context.on("console", lambda m: rec.errors.append(m.text) if m.type == "error" else None)
    (PAGES / "1366x768" / "dark").mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    seen: set[str] = set()
    try:
        for prefix in ("jaxgpu", "tf2"):
            run = run_named(gpu_server, prefix)
            for tool in tools_of(gpu_server, run):
                if tool in seen:
                    continue
                seen.add(tool)
                hash_ = f"#/{tool}?{httpx.QueryParams({'run': run})}"
                problems += read_page(page, rec, hash_, tool, f"dark/{prefix}_{tool}", True)
        runs = {"base": run_named(gpu_server, "tf2"), "cand": run_named(gpu_server, "gpu")}
        problems += read_page(
            page, rec, f"#/compare?{httpx.QueryParams(runs)}", "compare", "dark/compare", True
        )
    finally:
        context.close()
    assert len(seen) >= 12
    assert not problems, "\n".join(problems)
