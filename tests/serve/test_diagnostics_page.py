"""diagnostics page in headless Chromium: finding cards with severity, evidence and fix."""

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


@pytest.mark.parametrize(("prefix", "host"), [("gpu", "trainer"), ("ranks", ALL_HOSTS)])
def test_diagnostics_page(
    page_for: tuple[Any, Recorder], gpu_server: Any, prefix: str, host: str
) -> None:
    page, _ = page_for
    run = run_of(gpu_server, prefix)
    goto(page, gpu_server.url, "diagnostics", run, host)
    data = tool_json(gpu_server, "diagnostics", run, host)
    assert check_fields(page, data) > 5
    cards = page.eval_on_selector_all(
        ".finding", "els => els.map(e => [e.dataset.finding, e.dataset.severity])"
    )
    assert cards == [[f["id"], f["severity"]] for f in data["findings"]]
    ids = {f["id"] for f in data["findings"]}
    assert {"collectives", "excessive_copies"} <= ids
    for f in data["findings"]:
        card = page.query_selector(f'.finding[data-finding="{f["id"]}"]')
        assert f["fix"] in card.inner_text()
        assert card.query_selector(f".sev-{f['severity']}")
