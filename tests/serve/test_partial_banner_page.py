"""The partial-data banner in headless Chromium (issue #28 item 7): a page built from part of
a recording (a .json.gz cut short) says so above its content; a whole one does not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stepscope.serve.app import RunningServer, start_server
from tests.support.browser import goto, open_page
from tests.support.fixtures import FIXTURES

pytestmark = [pytest.mark.browser, pytest.mark.untimed]

BERT = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    run = tmp_path_factory.mktemp("logs") / "run"
    run.mkdir()
    data = BERT.read_bytes()
    (run / "cut.pt.trace.json.gz").write_bytes(data[: len(data) * 45 // 100])
    (run / "whole.pt.trace.json.gz").write_bytes(data)
    running = start_server(run.parent, use_cache=False)
    yield running
    running.stop()


def _banner(browser: Any, server: RunningServer, tool: str, host: str) -> str | None:
    context, page, rec = open_page(browser, server.url)
    try:
        goto(page, server.url, tool, "run", host)
        rec.check()
        found = page.query_selector(".partial-banner")
        return None if found is None else str(found.inner_text())
    finally:
        context.close()


@pytest.mark.parametrize("tool", ["overview_page", "op_stats"])
def test_banner_on_a_page_read_in_part(browser: Any, server: RunningServer, tool: str) -> None:
    banner = _banner(browser, server, tool, "cut")
    assert banner is not None and banner.startswith("Partial data")
    assert "gzip data is truncated" in banner
    assert _banner(browser, server, tool, "whole") is None
