"""pod_viewer page in headless Chromium: step slider, one column per worker, slowest flagged."""

from __future__ import annotations

from typing import Any

import pytest

from stepscope.model import ALL_HOSTS
from tests.support.gpu_pages import (
    Recorder,
    check_fields,
    goto,
    run_of,
    tool_json,
)

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


@pytest.mark.parametrize("prefix", ["ranks", "tf2"])
def test_pod_viewer_page(page_for: tuple[Any, Recorder], gpu_server: Any, prefix: str) -> None:
    page, _ = page_for
    run = run_of(gpu_server, prefix)
    goto(page, gpu_server.url, "pod_viewer", run, ALL_HOSTS)
    data = tool_json(gpu_server, "pod_viewer", run, ALL_HOSTS)
    steps = data["steps"]
    for index in (len(steps) - 1, 0):
        page.fill("#pod-step", str(index))  # the range input takes the value and fires input
        step = steps[index]
        assert page.get_attribute(".pod-view", "data-step") == str(step["step_num"])
        assert check_fields(page, data) > 10
        cards = page.eval_on_selector_all(
            ".pod-cards .card", "els => els.map(e => e.dataset.worker)"
        )
        assert cards == [w["host"] for w in step["workers"] if w]
        slowest = page.eval_on_selector_all(
            ".pod-cards .card.slowest", "els => els.map(e => e.dataset.worker)"
        )
        if step["slowest_worker"]:
            assert slowest == [step["slowest_worker"]] == [page.inner_text("#pod-slowest")]
        else:  # even workers (the ranks run is one file twice): none flagged, and it says so
            assert slowest == [] and step["spread_ms"] == 0
            assert page.inner_text("#pod-even") == "the workers are even"
        assert len(page.query_selector_all("svg.chart g.bar")) == len(cards)
        # what bounds each worker's step, beside XProf's categories (decision 416): its
        # figures are checked against the answer by `check_fields`
        bound = page.eval_on_selector_all(
            ".pod-cards .card .pod-bound", "els => els.map(e => e.textContent)"
        )
        assert len(bound) == len(cards) and all("input" in t for t in bound)
    if prefix == "ranks":  # one file twice: no slowest worker at any step
        assert all(s["slowest_worker"] == "" for s in steps)
    if prefix == "tf2":  # the unoptimized input pipeline is the slowest worker
        assert all(s["slowest_worker"] == "vm" for s in steps)
