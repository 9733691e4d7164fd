"""The run picker names why the flight recorder saved a run (trigger and reason)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import start_server
from stepscope.serve.state import ServerState
from tests.support.browser import CHROMIUM, goto, open_page
from tests.support.optional import skip_without

if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


def test_run_picker_shows_the_recorders_trigger_and_reason(
    browser: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    source = next((fixtures_dir / "tf" / "ctl_opt").rglob("*.xplane.pb"))
    for run in ("2026_01_01_00_00_00", "2026_01_01_00_05_00"):
        run_dir = tmp_path / "logs" / "plugins" / "profile" / run
        run_dir.mkdir(parents=True)
        shutil.copy(source, run_dir / "vm.xplane.pb")
    marker = {"trigger": "slow_step", "reason": "step 30 took 10.1 ms, 9.2x the median 1.1 ms"}
    saved = tmp_path / "logs" / "plugins" / "profile" / "2026_01_01_00_05_00"
    (saved / "vm.recorder.json").write_text(json.dumps(marker))
    state = ServerState(tmp_path / "logs", cache_dir=tmp_path / "cache")
    server = start_server(state.logdir, state=state)
    try:
        context, page, rec = open_page(browser, server.url)
        goto(page, server.url, "overview_page", "2026_01_01_00_05_00")
        labels = page.eval_on_selector_all("#run-select option", "els => els.map(e => e.text)")
        assert labels == [
            "2026_01_01_00_00_00",
            "2026_01_01_00_05_00 — slow step: step 30 took 10.1 ms, 9.2x the median 1.1 ms",
        ]
        values = page.eval_on_selector_all("#run-select option", "els => els.map(e => e.value)")
        assert values == ["2026_01_01_00_00_00", "2026_01_01_00_05_00"]
        context.close()
        rec.check()
    finally:
        server.stop()
