"""The overview page opens with what bounds the steps, says how much input is prepared inside
the steps (the JAX fixture builds and copies its batch in the step: XProf's table shows 0%
input) and keeps XProf's input verdict on its own line."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import start_server
from stepscope.serve.state import ServerState
from tests.support.browser import CHROMIUM, check_fields, goto, open_page, tool_json, wait_rendered
from tests.support.optional import skip_without

if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]
RUN = "2026_11_23_18_00_35"


def test_overview_shows_the_input_staged_in_the_steps(
    browser: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "logs" / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    shutil.copy(
        fixtures_dir / "jax" / "cnn_cpu" / "plugins" / "profile" / RUN / "vm.xplane.pb", run_dir
    )
    state = ServerState(tmp_path / "logs", cache_dir=tmp_path / "cache")
    server = start_server(state.logdir, state=state)
    try:
        context, page, rec = open_page(browser, server.url)
        goto(page, server.url, "overview_page", RUN)
        wait_rendered(page, "overview_page")
        data = tool_json(server, "overview_page", RUN, "")
        assert data["input_staged_ms"] > 0
        body = page.inner_text("body")
        assert "Input prepared inside the steps:" in body
        # the headline comes first on the page, XProf's sentence after it, unchanged
        headline = data["bound_by"]["headline"]
        assert headline.startswith("Bound by ")
        assert body.index(headline) < body.index("XProf's input verdict:")
        assert data["input_bound"]["statement"] in body
        assert check_fields(page, data) > 0  # every shown figure equals the tool's JSON
        context.close()
        rec.check()
    finally:
        server.stop()
