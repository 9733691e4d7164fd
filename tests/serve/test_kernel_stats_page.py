"""kernel_stats page in headless Chromium: numbers, pie, sorting, filtering, CSV export."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.browser import table_column
from tests.support.gpu_pages import (
    Recorder,
    check_fields,
    goto,
    run_of,
    tool_json,
)

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


def test_kernel_stats_page(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, _ = page_for
    run = run_of(gpu_server, "gpu")
    goto(page, gpu_server.url, "kernel_stats", run, "trainer")
    data = tool_json(gpu_server, "kernel_stats", run, "trainer")
    assert check_fields(page, data) >= 7
    names = table_column(page, "kernel_stats", "kernel_name")
    assert names[:10] == [r["kernel_name"] for r in data["rows"][:10]]  # sorted by total time
    assert len(page.query_selector_all('figure[data-pie="top_kernels"] path.slice')) >= 2
    # Sort by occurrences (descending on first click of a numeric column).
    page.click('table[data-table="kernel_stats"] th[data-key="occurrences"] button')
    counts = [int(v) for v in table_column(page, "kernel_stats", "occurrences")]
    assert counts == sorted(counts, reverse=True)
    # Filter by op name.
    page.fill("input.filter", "aten::mm")
    ops = table_column(page, "kernel_stats", "op_name")
    assert ops and all("aten::mm" in op for op in ops)
    href = page.get_attribute("#export-csv", "href")
    csv = httpx.get(gpu_server.url + href)
    assert csv.status_code == 200 and csv.text.startswith("rank,kernel_name")
