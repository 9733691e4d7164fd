"""A run the flight recorder saved, in the web UI at a laptop's size and a desktop's (issue #33):
every page names its trigger in a banner, the trace viewer opens at the trigger step, and the
overview marks it on the step chart beside the step history the recorder kept."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import RunningServer, start_server
from stepscope.serve.state import ServerState
from tests.support.browser import SIZES, goto, open_sized
from tests.support.trace_viewer import PAGE as TRACE
from tests.support.trace_viewer import canvas_share

pytestmark = [pytest.mark.browser, pytest.mark.untimed]

SAVED = "2026_01_01_03_12_09"
HUNG = "2026_01_01_03_20_00"
REASON = "step 23 took 20.6 ms, 1.5x the median 14.0 ms of the 20 steps before"


@pytest.fixture(scope="module")
def recorder_server(
    fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    """A run as the flight recorder writes it (docs/flight_recorder.md): the profile, its marker
    (a slow step: step 23 of the TF fixture's 21-24) and the step history of 40 steps."""
    run = tmp_path_factory.mktemp("recorder_logs") / "plugins" / "profile" / SAVED
    run.mkdir(parents=True)
    shutil.copy(next((fixtures_dir / "tf" / "ctl_opt").rglob("*.xplane.pb")), run / "w1.xplane.pb")
    marker = {
        "trigger": "slow_step",
        "reason": REASON,
        "host": "w1",
        "steps": [21, 24],
        "steps_before": 21,
        "step": 23,
        "dur_ns": 20_582_539,
        "median_ns": 14_000_000,
    }
    (run / "w1.recorder.json").write_text(json.dumps(marker))
    rows = [
        [k, k * 15_000_000, 20_582_539 if k == 23 else 14_000_000 + 1000 * k, 7]
        for k in range(1, 41)
    ]
    history = {"fields": ["step_num", "start_ns", "dur_ns", "thread_id"], "steps": rows}
    (run / "w1.recorder_steps.json").write_text(json.dumps(history))
    # the same ring saved by a hang in the step after 24 (that step is open: not kept)
    hung = run.parent / HUNG
    shutil.copytree(run, hung)
    stack = (
        '  File "/home/u/train.py", line 13, in <module>\n    for step, batch in loop():\n'
        '  File "/home/u/data.py", line 9, in fetch\n    time.sleep(2.5)\n'
    )
    hang = {
        "trigger": "hang",
        "reason": "a step has been open for 300.2 s",
        "host": "w1",
        "stacks": {"MainThread (7)": stack},
        "hung_thread": "MainThread (7)",
    }
    (hung / "w1.recorder.json").write_text(json.dumps(hang | {"steps": [21, 24]}))
    state = ServerState(run.parents[2], cache_dir=tmp_path_factory.mktemp("recorder_cache"))
    running = start_server(state.logdir, state=state)
    yield running
    running.stop()


@pytest.fixture(scope="module", params=sorted(SIZES))
def recorder_page(
    request: pytest.FixtureRequest, browser: Any, recorder_server: RunningServer
) -> Iterator[Any]:
    context, page, rec = open_sized(browser, recorder_server.url, request.param)
    yield page
    context.close()
    rec.check()


def test_a_recorder_runs_pages_name_its_trigger_and_open_at_its_step(
    recorder_page: Any, recorder_server: RunningServer
) -> None:
    page = recorder_page
    for tool in ("overview_page", "op_stats", "trace_viewer"):
        goto(page, recorder_server.url, tool, SAVED)
        text = page.inner_text("[data-banner='recorder']")
        assert "Saved by the flight recorder on a slow step" in text and REASON in text, tool
        # the run begins mid-run: the overview must not read as if the program started there
        mid_run = "It holds the loop’s steps 21 to 24, recorded mid-run (the recorder saw 21"
        assert (mid_run in text) == (tool == "overview_page"), tool
    # The banner's link opens the trace viewer fitted to the trigger step...
    goto(page, recorder_server.url, "overview_page", SAVED)
    page.click("[data-banner='recorder'] a[data-link='trigger-step']")
    page.wait_for_selector(f"{TRACE}[data-steps='ready'][data-loading='0']")
    view = page.evaluate(
        "() => ({...window.stepscopeTrace.view, i: window.stepscopeTrace.stepIndex})"
    )
    steps = page.evaluate("() => window.stepscopeTrace.structure.steps")
    k = steps["number"].index(23)
    assert view["i"] == k and view["t0"] <= steps["start_ns"][k] < view["t1"]
    assert view["t1"] - view["t0"] < 2 * steps["dur_ns"][k]  # fitted to the step
    # ...and the trace viewer of a recorder run opens at the trigger step without being asked.
    goto(page, recorder_server.url, "op_stats", SAVED)
    goto(page, recorder_server.url, "trace_viewer", SAVED)
    page.wait_for_selector(f"{TRACE}[data-steps='ready'][data-loading='0']")
    assert page.evaluate("() => window.stepscopeTrace.stepIndex") == k
    assert canvas_share(page) >= 0.55  # the banner above it included


def test_a_recorder_runs_overview_marks_the_trigger_and_shows_the_step_history(
    recorder_page: Any, recorder_server: RunningServer
) -> None:
    page = recorder_page
    goto(page, recorder_server.url, "overview_page", SAVED)
    marked = page.eval_on_selector_all(
        "svg.chart .bar.marked", "els => els.map((e) => e.dataset.mark)"
    )
    assert marked == ["trigger"]
    assert "23" in page.get_attribute("svg.chart .bar.marked", "data-tip")
    page.wait_for_selector("[data-card='step_history'][data-steps='40']")
    label = page.text_content("[data-chart='step_history'] .trigger-label") or ""
    assert label.startswith("trigger: step 23")
    assert page.locator("[data-chart='step_history'] rect.kept").count() == 1


def test_a_hang_is_after_the_last_kept_step_on_the_page(
    recorder_page: Any, recorder_server: RunningServer
) -> None:
    """The hung step is still open when the ring is saved: its last kept step is the one
    before it, and the page says so rather than calling it the trigger step."""
    page = recorder_page
    goto(page, recorder_server.url, "overview_page", HUNG)
    link = page.text_content("[data-banner='recorder'] a[data-link='trigger-step']") or ""
    assert link == "Step 24 in the trace viewer (the last before the hang)"
    page.wait_for_selector("[data-card='step_history'][data-steps='40']")
    label = page.text_content("[data-chart='step_history'] .trigger-label") or ""
    assert label.startswith("before the hang: step 24")
    text = page.inner_text("[data-card='step_history']")
    assert "red: the last step before the hang, 24" in text
    # where the hung thread was: its innermost frame, as `stepscope report` lists them
    hung = page.text_content("[data-banner='recorder'] [data-part='hung']") or ""
    assert hung == " Thread ‘MainThread’ was in the step, at data.py:9 in fetch: time.sleep(2.5)."
