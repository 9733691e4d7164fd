"""The overview page says which steps were warm-up and what bounds the steps once warm
(decision 362), beside the all-steps figures: a torch.compile-like loop whose first step
compiles for 1.3 s and then takes 2 ms a step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.xspace.io import write_xspace
from tests.support.browser import CHROMIUM, check_fields, goto, open_page, tool_json, wait_rendered
from tests.support.compiled_loop import compiled_loop_space
from tests.support.optional import skip_without
from tests.support.serve import serving

if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]
RUN = "2026_01_01_00_00_00"


def test_overview_shows_the_warm_up_and_the_steady_state(browser: Any, tmp_path: Path) -> None:
    run_dir = tmp_path / "logs" / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    write_xspace(compiled_loop_space(12)[0], run_dir / "vm.xplane.pb")
    with serving(tmp_path / "logs", tmp_path / "cache") as server:
        context, page, rec = open_page(browser, server.url)
        goto(page, server.url, "overview_page", RUN)
        wait_rendered(page, "overview_page")
        data = tool_json(server, "overview_page", RUN, "")
        steady = data["steady_state"]
        assert steady["warmup_steps"] == [0] and steady["warmup_cause"] == "compilation"
        body = page.inner_text("body")
        assert "Once warm" in body and steady["statement"] in body
        assert steady["bound_by"]["headline"] in body
        # the all-steps headline first, the steady state after it
        assert body.index(data["bound_by"]["headline"]) < body.index(steady["statement"])
        assert check_fields(page, data) > 0  # every shown figure equals the tool's JSON
        context.close()
        rec.check()
