"""The trace viewer in headless Chromium: drawing, zoom, pan, select, box select, timing,
search, fit to step, flows (Kineto GPU fixture), and a 10M-event profile drawn and panned.

Needs /usr/bin/chromium and Playwright's Python package. Screenshots go to
artifacts/screenshots/. Frame times are measured by benchmarks/bench_trace_frames.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.serve.app import RunningServer
from tests.support.fixtures import FIXTURES, tf_xplane
from tests.support.optional import skip_without
from tests.support.serve import add_tf_run, serving
from tests.support.trace_viewer import PAGE, close_pages, open_trace, settle, view

# the session's browser, and the autouse fixture closing each test's pages
__all__ = ["close_pages"]

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts"
SHOTS = ARTIFACTS / "screenshots"
BIG_EVENTS = 10_000_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("logs")
    add_tf_run(root, tf_xplane("remote"), "tf", "remote", "localhost_6009.xplane.pb")
    (root / "bert").mkdir()
    shutil.copy(
        FIXTURES / "kineto" / "h100_bert_small_inference.json.gz",
        root / "bert" / "worker0.1.pt.trace.json.gz",
    )
    with serving(root, tmp_path_factory.mktemp("cache")) as running:
        yield running


def painted_fraction(page: Any) -> float:
    """Share of the plot area's pixels that differ from the background."""
    return page.evaluate("""() => {
        const c = document.querySelector('.tv-canvas');
        const g = c.getContext('2d');
        const x0 = Math.round(260 * devicePixelRatio);
        const img = g.getImageData(x0, 40, c.width - x0, c.height - 40).data;
        let painted = 0;
        for (let i = 0; i < img.length; i += 4) {
          if (img[i] !== 250 || img[i + 1] !== 250 || img[i + 2] !== 250) painted += 1;
        }
        return painted / (img.length / 4);
    }""")


def event_point(page: Any, name: str) -> dict[str, float]:
    """Page coordinates of the middle of the widest visible event named ``name``."""
    return page.evaluate(
        """(name) => {
        const v = window.stepscopeTrace;
        const d = v.data;
        const k = (v.W - 240) / (v.view.t1 - v.view.t0);
        let best = -1;
        for (let i = 0; i < d.n; i += 1) {
          if (d.names[d.name[i]] !== name) continue;
          const y = 26 + v.layout.lineY[d.line[i]] + d.depth[i] * 16 - v.scrollY;
          if (y < 30 || y > v.H - 20) continue;
          if (best < 0 || d.dur[i] > d.dur[best]) best = i;
        }
        if (best < 0) return null;
        const x0 = Math.max(240 + (d.start[best] - v.view.t0) * k, 240);
        const x1 = Math.min(240 + (d.start[best] + d.dur[best] - v.view.t0) * k, v.W);
        const y = 26 + v.layout.lineY[d.line[best]] + d.depth[best] * 16 - v.scrollY + 8;
        const box = v.canvas.getBoundingClientRect();
        return {x: box.left + (x0 + x1) / 2, y: box.top + y, event: d.event[best]};
    }""",
        name,
    )


@pytest.mark.untimed
def test_fixture_is_drawn_and_zooms_and_pans(browser: Any, server: RunningServer) -> None:
    page = open_trace(browser, server, "tf/remote", "trace_viewer_tf_remote.png")
    assert int(page.get_attribute(PAGE, "data-drawn")) > 1000
    assert painted_fraction(page) > 0.05
    full = view(page)
    page.focus(".tv-scroll")
    for _ in range(4):
        page.keyboard.press("w")
    zoomed = view(page)
    assert zoomed["t1"] - zoomed["t0"] < (full["t1"] - full["t0"]) / 2
    page.keyboard.press("d")
    panned = view(page)
    assert panned["t0"] > zoomed["t0"] and panned["t1"] - panned["t0"] == pytest.approx(
        zoomed["t1"] - zoomed["t0"]
    )
    box = page.locator(".tv-canvas").bounding_box()
    page.mouse.move(box["x"] + 800, box["y"] + 300)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -600)  # Ctrl+wheel up: zoom in around the pointer
    page.keyboard.up("Control")
    wheeled = view(page)
    assert wheeled["t1"] - wheeled["t0"] < panned["t1"] - panned["t0"]
    settle(page)
    assert int(page.get_attribute(PAGE, "data-fetches")) >= 2
    assert int(page.get_attribute(PAGE, "data-drawn")) > 0
    assert painted_fraction(page) > 0.02
    page.screenshot(path=str(SHOTS / "trace_viewer_tf_remote_zoomed.png"))
    assert not page.errors


@pytest.mark.untimed
def test_select_box_select_and_timing(browser: Any, server: RunningServer) -> None:
    page = open_trace(browser, server, "tf/remote")
    point = event_point(page, "train")
    assert point is not None
    page.mouse.click(point["x"], point["y"])
    page.wait_for_selector(f'.tv-event[data-event="{point["event"]}"]')
    details = page.inner_text(".tv-details")
    assert "train" in details and "step_num" in details and "_r" in details
    assert page.get_attribute(PAGE, "data-selected") == str(point["event"])

    box = page.locator(".tv-canvas").bounding_box()
    page.mouse.move(box["x"] + 600, box["y"] + 120)
    page.mouse.down()
    page.mouse.move(box["x"] + 900, box["y"] + 420, steps=5)
    page.mouse.up()
    page.wait_for_selector(".tv-box table[data-table='selection'] tbody tr")
    assert int(page.get_attribute(PAGE, "data-box-count")) > 0
    header = page.inner_text(".tv-box table thead")
    assert all(word in header for word in ("Name", "Count", "Total", "Average"))
    page.screenshot(path=str(SHOTS / "trace_viewer_box_select.png"))

    # Timing: drag along the time axis marks a range and shows its duration.
    v = view(page)
    page.mouse.move(box["x"] + 400, box["y"] + 10)
    page.mouse.down()
    page.mouse.move(box["x"] + 700, box["y"] + 10, steps=4)
    page.mouse.up()
    mark = float(page.get_attribute("[data-field='mark_duration']", "data-value"))
    expected = 300 * (v["t1"] - v["t0"]) / (page.evaluate("window.stepscopeTrace.W") - 240)
    assert mark == pytest.approx(expected, rel=0.02)
    assert not page.errors


@pytest.mark.untimed
def test_search_and_fit_to_step(browser: Any, server: RunningServer) -> None:
    page = open_trace(browser, server, "tf/remote")
    page.fill(".tv-toolbar input[type=search]", "iterator::root")
    page.press(".tv-toolbar input[type=search]", "Enter")
    page.wait_for_selector(f"{PAGE}[data-matches]")
    assert int(page.get_attribute(PAGE, "data-matches")) > 100
    assert page.evaluate("window.stepscopeTrace.matches.event.length") > 0
    page.press(".tv-toolbar input[type=search]", "Enter")  # next match: selects it
    page.wait_for_selector(".tv-event")
    assert "Iterator::Root" in page.inner_text(".tv-details h2")
    page.screenshot(path=str(SHOTS / "trace_viewer_search.png"))

    steps = page.evaluate("window.stepscopeTrace.structure.steps")
    page.fill(".tv-toolbar input[type=number]", str(steps["number"][3]))
    page.click("[data-action='fit-step']")
    v = view(page)
    start, dur = steps["start_ns"][3], steps["dur_ns"][3]
    assert v["t0"] == pytest.approx(start - 0.03 * dur, abs=dur * 0.01)
    assert v["t1"] == pytest.approx(start + 1.03 * dur, abs=dur * 0.01)
    settle(page)
    assert int(page.get_attribute(PAGE, "data-drawn")) > 0
    assert not page.errors


@pytest.mark.untimed
def test_steps_are_asked_for_after_the_first_window(browser: Any, server: RunningServer) -> None:
    # The structure carries no steps (finding them is most of a first open at 10M events):
    # the page draws the first window, then asks for the steps and shows the step picker.
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url.split("?")[0].rsplit("/", 1)[-1]))
    page.goto(f"{server.url}#/trace_viewer?run=tf%2Fremote")
    page.wait_for_selector(f'{PAGE}[data-steps="ready"]', timeout=120_000)
    try:
        assert "steps" in asked and "window" in asked
        assert asked.index("window") < asked.index("steps")
        assert page.is_visible("[data-action='fit-step']")
        page.click(".tv-menu summary")  # the view options' menu
        assert page.is_visible("[data-control='origin']")
        assert " 30 steps · " in page.inner_text(f"{PAGE} .tv-summary")
    finally:
        page.close()


@pytest.mark.untimed
def test_kineto_gpu_flows_are_drawn(browser: Any, server: RunningServer) -> None:
    page = open_trace(browser, server, "bert", "trace_viewer_kineto_bert.png")
    assert int(page.get_attribute(PAGE, "data-flows-drawn")) > 10
    sections = page.evaluate("window.stepscopeTrace.structure.sections.map((s) => s.name)")
    assert sections[0] == "/device:GPU:0" and "Host Threads" in sections
    # A kernel's details link back to the launch; following the link selects the launch.
    kernel = page.evaluate("""() => {
        const d = window.stepscopeTrace.data;
        for (let i = 0; i < d.flows.n; i += 1) if (d.flows.kind[i] === 0) return d.flows.dst[i];
        return null;
    }""")
    assert kernel is not None
    page.evaluate(
        """(id) => {
        const v = window.stepscopeTrace;
        const d = v.data;
        const i = Array.from(d.event).indexOf(id);
        v.selectEvent({event: id, line: d.line[i], depth: d.depth[i],
                       start_ns: d.start[i], dur_ns: d.dur[i]}, true);
    }""",
        kernel,
    )
    page.wait_for_selector(".tv-flows li[data-flow='in'] button")
    page.click(".tv-flows li[data-flow='in'] button")
    page.wait_for_selector(f'{PAGE}[data-selected]:not([data-selected="{kernel}"])')
    assert (
        "launch" in page.inner_text(".tv-details").lower()
        or "cuda" in page.inner_text(".tv-details h2").lower()
    )
    settle(page)
    page.screenshot(path=str(SHOTS / "trace_viewer_kineto_flow_link.png"))
    assert not page.errors


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    from tests.support.synthetic import synthetic_xspace_bytes

    root = tmp_path_factory.mktemp("big")
    run = root / "plugins" / "profile" / "synthetic_10m"
    run.mkdir(parents=True)
    (run / "synthetic.xplane.pb").write_bytes(synthetic_xspace_bytes(BIG_EVENTS))
    with serving(root, tmp_path_factory.mktemp("cache")) as running:
        yield running


# Draw and frame times are the benchmarks' (bench_trace_frames.py): this test reads none of
# them, only that a 10M-event profile draws at every zoom and pans (decision 781).
@pytest.mark.slow
@pytest.mark.untimed
def test_10m_events_draw_at_every_zoom_and_pan(browser: Any, big_server: RunningServer) -> None:
    page = open_trace(browser, big_server, "synthetic_10m", "trace_viewer_10m_full.png")
    assert page.evaluate("window.stepscopeTrace.structure.events") >= BIG_EVENTS
    assert int(page.get_attribute(PAGE, "data-drawn")) > 5000
    assert painted_fraction(page) > 0.1
    # Zoom to 1 ms in the middle: events are there and drawn individually.
    page.evaluate("""() => {
        const v = window.stepscopeTrace;
        const mid = v.duration / 2;
        v.setView(mid, mid + 1e6);
    }""")
    settle(page)
    assert int(page.get_attribute(PAGE, "data-drawn")) > 500
    page.screenshot(path=str(SHOTS / "trace_viewer_10m_1ms.png"))
    # Back to a 100 ms view and pan frame by frame (fetches happen on the way): every frame
    # draws, and the view ends 40% of its width later with events drawn there.
    page.evaluate("() => window.stepscopeTrace.setView(2e8, 3e8)")
    settle(page)
    result = page.evaluate("() => window.stepscopeTrace.measurePan(40, 0.01)")
    assert len(result["draws"]) == 40
    settle(page)
    assert page.evaluate("() => window.stepscopeTrace.view.t0") == pytest.approx(2.4e8, rel=0.01)
    assert int(page.get_attribute(PAGE, "data-drawn")) > 500
    assert painted_fraction(page) > 0.1
    assert not page.errors
