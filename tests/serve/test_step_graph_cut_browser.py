"""A warm-up step hundreds of times longer than the others is cut at the top of the step-time
charts, whose axis then fits the other steps (decision 550): drawn to the tallest, a JAX
loop's 3.7 s first step left its 8 ms steps a flat line on the overview and the input
pipeline page. A loop whose first step compiles for 1.3 s, then 2 ms a step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.xspace.io import write_xspace
from tests.support.browser import CHROMIUM, goto, open_page, tool_json
from tests.support.compiled_loop import compiled_loop_space
from tests.support.optional import skip_without
from tests.support.serve import serving

if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]
RUN = "2026_01_01_00_00_00"

# per bar of the page's step chart: its height on screen (px), whether it is cut
BARS = """() => [...document.querySelectorAll('svg.chart g.bar')].map((g) => [
    g.getBoundingClientRect().height, g.dataset.cut !== undefined])"""
# the cut bar's parts: series and height on screen (px)
CUT_PARTS = """() => [...document.querySelectorAll('svg.chart g.bar[data-cut] rect')].map(
    (r) => [r.dataset.series, r.getBoundingClientRect().height])"""


def test_the_warm_up_step_is_cut_and_the_others_fill_the_chart(
    browser: Any, tmp_path: Path
) -> None:
    run_dir = tmp_path / "logs" / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    write_xspace(compiled_loop_space(12)[0], run_dir / "vm.xplane.pb")
    with serving(tmp_path / "logs", tmp_path / "cache") as server:
        context, page, rec = open_page(browser, server.url)
        for tool in ("overview_page", "input_pipeline_analyzer"):
            goto(page, server.url, tool, RUN)
            bars = page.evaluate(BARS)
            assert len(bars) >= 10, tool
            (first, first_cut), rest = bars[0], bars[1:]
            assert first_cut and not any(cut for _h, cut in rest), tool
            # the steps after it at least a third of the tallest's height, not a flat line
            assert min(h for h, _cut in rest) > first / 3, (tool, bars)
            label = page.text_content("svg.chart text.cut-label") or ""
            assert label.startswith("↑ 13"), label  # its height, 1.3 s, written above it
        # the overview's cut bar keeps every part in its share: the compile that is most of
        # it was above the cut and not drawn (its host work alone filled the axis)
        goto(page, server.url, "overview_page", RUN)
        data = tool_json(server, "overview_page", RUN, "")
        step = data["steps"][0]["breakdown_ns"]
        parts = dict(page.evaluate(CUT_PARTS))
        assert set(parts) == {k for k, v in step.items() if v > 0}, (parts, step)
        drawn = sum(parts.values())
        for key, px in parts.items():  # each part's share of the bar as drawn, within 2 px
            assert abs(px - drawn * step[key] / sum(step.values())) < 2, (key, parts, step)
        context.close()
        rec.check()
