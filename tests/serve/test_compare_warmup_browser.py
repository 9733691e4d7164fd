"""The Compare page on two runs of a compiled loop (decision 386): the steps once warm are
compared, and the page says so: the verdict, each side's warm-up step, each side's headline
once warm, and the warm-up's own row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import RunningServer
from stepscope.xspace.io import write_xspace
from tests.support.compiled_loop import compiled_loop_space
from tests.support.serve import serving

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

BASE = "a_warm/2026_01_01_00_00_00"
CAND = "b_slow/2026_01_01_00_00_00"


@pytest.fixture(scope="module")
def warm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("compare_warm")
    later = {k: 0.5 for k in range(1, 12)}  # 0.5 ms more host work a step once warm
    for run, kwargs in (
        (BASE, {"compile_ms": 1000.0}),
        (CAND, {"compile_ms": 300.0, "extra": later}),
    ):
        top, session = run.split("/")
        target = root / top / "plugins" / "profile" / session
        target.mkdir(parents=True)
        space, _ = compiled_loop_space(12, **kwargs)  # type: ignore[arg-type]
        write_xspace(space, Path(target) / "vm.xplane.pb")
    with serving(root, tmp_path_factory.mktemp("compare_warm_cache")) as running:
        yield running


@pytest.mark.browser
def test_compare_page_says_it_compared_the_steps_once_warm(
    browser: Any, warm_server: RunningServer
) -> None:
    from tests.support.browser import open_page, wait_rendered

    context, page, rec = open_page(browser, warm_server.url)
    try:
        page.goto(f"{warm_server.url}#/compare?base={BASE}&cand={CAND}")
        wait_rendered(page, "compare")
        verdict = page.locator(".cmp-verdict")
        assert verdict.text_content().startswith("once warm, step time +25.3%")
        assert verdict.get_attribute("data-direction") == "slower"
        sides = page.locator(".cmp-sides").first.text_content()
        assert sides.count("warm-up: step 0") == 2
        assert page.locator(".cmp-compared").text_content().startswith("Compared once warm")
        bound = page.locator('.cmp-bound[data-side="baseline"]').text_content()
        assert bound.startswith("Baseline: Once warm: Bound by ")
        warm = page.locator('tr[data-metric="warmup.time"]')
        assert warm.locator("td.sig").text_content() == "n/a"
    finally:
        context.close()
    rec.check()
