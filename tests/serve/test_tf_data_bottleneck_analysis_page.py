"""tf_data_bottleneck_analysis page in headless Chromium: conclusion, graph, bottleneck, fix."""

from __future__ import annotations

from typing import Any

import pytest

from stepscope.model import ALL_HOSTS
from tests.support.browser import table_column
from tests.support.gpu_pages import (
    Recorder,
    check_fields,
    goto,
    run_of,
    tool_json,
)

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


def test_tf_data_page(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, _ = page_for
    run = run_of(gpu_server, "tf2")
    goto(page, gpu_server.url, "tf_data_bottleneck_analysis", run, ALL_HOSTS)
    data = tool_json(gpu_server, "tf_data_bottleneck_analysis", run, ALL_HOSTS)
    assert check_fields(page, data) >= 5
    assert "'Map'" in page.inner_text(".note")
    assert page.inner_text("#bottleneck strong") == "Map"
    assert "num_parallel_calls" in page.inner_text("#suggestion")
    bottleneck = page.eval_on_selector_all(
        ".pipeline-node.bottleneck", "els => els.map(e => e.dataset.node)"
    )
    assert bottleneck == ["Map"]
    critical = page.eval_on_selector_all(
        ".pipeline-node.critical", "els => els.map(e => e.dataset.node)"
    )
    assert set(critical) >= {"Root", "BatchV2", "Map"}
    assert table_column(page, "iterators", "name")[0] == "Map"  # sorted by self time
    assert table_column(page, "pipelines", "host") == ["vm", "w1"]
    page.select_option("#pipeline-select", "1")  # the optimized host
    assert page.inner_text("#bottleneck strong") == "Prefetch"
    assert check_fields(page, data) >= 3
