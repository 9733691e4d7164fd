"""memory_profile page in headless Chromium: summary numbers, memory selector, timeline hover,
live-at-peak table filter; on PyTorch (GPU and CPU allocators) and TensorFlow."""

from __future__ import annotations

from typing import Any

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


def test_memory_profile_page_pytorch(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, _ = page_for
    run = run_of(gpu_server, "gpu")
    goto(page, gpu_server.url, "memory_profile", run, "trainer")
    data = tool_json(gpu_server, "memory_profile", run, "trainer")
    assert check_fields(page, data) == 8
    assert page.eval_on_selector_all("#memory-select option", "els => els.length") == 2
    # PyTorch's terms, nothing TensorFlow's allocator has and PyTorch's trace lacks.
    text = page.inner_text(".memory-body")
    assert "Peak reserved" in text and "Peak allocated" in text
    assert "Stack" not in text and "Fragmentation" not in text and "INVALID" not in text
    # Step-shaped curves (horizontal then vertical segments) and a time axis with ticks.
    paths = page.eval_on_selector_all(
        "svg.mem-chart path.line",
        "els => els.map(e => e.dataset.series + ' ' + e.getAttribute('d'))",
    )
    assert {p.split(" ")[0] for p in paths} == {"reserved", "allocated"}
    assert all(" H" in p and " V" in p for p in paths)
    assert len(page.query_selector_all("svg.mem-chart text.x-tick")) >= 4
    # Hover the middle of the timeline: the panel names the event there.
    chart = page.query_selector("svg.mem-chart")
    box = chart.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    panel = page.inner_text(".mem-hover")
    assert "Reserved" in panel and "Allocated" in panel and "Op" in panel and "Step" in panel
    assert "Memory in use" not in panel and "Data type" not in panel
    assert page.query_selector("svg.mem-chart circle.peak")
    # Filter the live-at-peak table by op name.
    rows = len(table_column(page, "live_at_peak", "op_name"))
    page.fill("input.filter", "aten::mm")
    ops = table_column(page, "live_at_peak", "op_name")
    assert ops and all("aten::mm" in op for op in ops) and len(ops) < rows
    # The second memory (the CPU allocator).
    page.select_option("#memory-select", "1")
    assert page.get_attribute(".memory-body", "data-memory") == "trainer/cpu"
    assert check_fields(page, data) == 7  # the CPU's device memory is not in the trace


def test_memory_profile_page_tensorflow(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, _ = page_for
    run = run_of(gpu_server, "tf2")
    goto(page, gpu_server.url, "memory_profile", run, "vm")
    data = tool_json(gpu_server, "memory_profile", run, "vm")
    check_fields(page, data)
    peak = page.get_attribute('[data-field="memories.0.summary.peak_usage_bytes"]', "data-value")
    assert int(peak) == 8_699_904  # XProf's peak for this profile
    assert table_column(page, "live_at_peak", "op_name")[0] == "unused preallocated device memory"
