"""The web UI at a laptop's size and a desktop's (1366x768 and 1920x1080) over the GPU fixtures
(issue #33): every number of the wide tables in view without scrolling sideways, one line per
row. One server (the GPU pages' session server) and one browser for the whole session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepscope.serve.app import RunningServer
from tests.support.browser import Recorder, goto, open_page
from tests.support.gpu_pages import run_of

pytestmark = pytest.mark.browser

SIZES = {"1366x768": (1366, 768), "1920x1080": (1920, 1080)}
# (run prefix, tool, table): the tables whose numbers must all be on screen.
TABLES = [
    ("jaxgpu", "kernel_stats", "kernel_stats"),
    ("gpu", "kernel_stats", "kernel_stats"),
    ("bert", "kernel_stats", "kernel_stats"),
    ("ranks", "kernel_stats", "kernel_stats"),
    ("jaxgpu", "op_stats", "op_stats"),
    ("jaxcpu", "op_stats", "op_stats"),
    ("gpu", "op_stats", "op_stats"),
    ("bert", "op_stats", "op_stats"),
    ("ranks", "op_stats", "op_stats"),
    ("jaxgpu", "hlo_stats", "hlo_stats"),
    ("gpu", "overview_page", "devices"),
    ("bert", "overview_page", "devices"),
    ("jaxgpu", "overview_page", "devices"),
    ("gpu", "overview_page", "top_ops"),
]


@pytest.fixture(scope="module", params=sorted(SIZES))
def sized(
    request: pytest.FixtureRequest, browser: Any, gpu_server: RunningServer
) -> Iterator[tuple[Any, Recorder, str]]:
    """One page at each size, kept for the module's tests (opening a context costs)."""
    width, height = SIZES[request.param]
    context, page, rec = open_page(browser, gpu_server.url)
    page.set_viewport_size({"width": width, "height": height})
    yield page, rec, request.param
    context.close()
    rec.check()


def numbers_out_of_view(page: Any, table: str) -> list[str]:
    """The numeric columns of ``table`` whose header is not inside both the window and the
    table's box (as drawn, without scrolling the box sideways)."""
    return list(
        page.evaluate(
            """(name) => {
            const table = document.querySelector(`table[data-table="${name}"]`);
            const box = table.closest('.table-scroll').getBoundingClientRect();
            const right = Math.min(box.right, window.innerWidth) + 1;
            return [...table.querySelectorAll('thead th.numeric')]
              .filter((th) => {
                const r = th.getBoundingClientRect();
                return r.right > right || r.left < box.left - 1;
              })
              .map((th) => th.dataset.key);
        }""",
            table,
        )
    )


def tallest_row(page: Any, table: str) -> float:
    return float(
        page.evaluate(
            """(name) => Math.max(0, ...[...document.querySelectorAll(
                `table[data-table="${name}"] tbody tr`)]
                .map((r) => r.getBoundingClientRect().height))""",
            table,
        )
    )


@pytest.mark.parametrize(("prefix", "tool", "table"), TABLES)
def test_every_number_of_the_wide_tables_is_in_view(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer, prefix: str, tool: str, table: str
) -> None:
    page, _rec, size = sized
    page.evaluate("document.body.removeAttribute('data-rendered')")  # wait for this page's
    goto(page, gpu_server.url, tool, run_of(gpu_server, prefix))
    page.wait_for_selector(f'table[data-table="{table}"] tbody tr')
    page.wait_for_timeout(50)  # the table measures its columns on the next frame
    hidden = numbers_out_of_view(page, table)
    assert not hidden, f"{prefix} {tool} at {size}: numeric columns out of view: {hidden}"
    # One line per row: long names are cut (a click shows them whole), never wrapped.
    assert tallest_row(page, table) < 40, f"{prefix} {tool} at {size}: rows taller than a line"


def test_a_click_shows_a_cut_name_whole(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    page.evaluate("document.body.removeAttribute('data-rendered')")
    goto(page, gpu_server.url, "kernel_stats", run_of(gpu_server, "jaxgpu"))
    cell = 'table[data-table="kernel_stats"] tbody tr:first-child td[data-key="kernel_name"]'
    one_line = tallest_row(page, "kernel_stats")
    name = page.get_attribute(cell, "data-value") or ""
    assert len(name) > 200  # a ck_tile attention kernel: hundreds of characters
    page.click(cell)
    assert tallest_row(page, "kernel_stats") > 3 * one_line
    assert page.inner_text(cell).replace("\n", "") == name
    page.click(cell)
    assert tallest_row(page, "kernel_stats") == one_line
