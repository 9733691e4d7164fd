"""The web UI at a laptop's size and a desktop's (1366x768 and 1920x1080) over the GPU fixtures
(issue #33): every number of the wide tables in view without scrolling sideways, one line per
row. One server (the GPU pages' session server) and one browser for the whole session."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer
from tests.support.browser import SIZES, Recorder, goto, next_frames, open_sized, wait_rendered
from tests.support.gpu_pages import run_of
from tests.support.trace_viewer import canvas_share

pytestmark = [pytest.mark.browser, pytest.mark.untimed]

# (run prefix, tool, table): the tables whose numbers must all be on screen.
TABLES = [
    ("jaxgpu", "kernel_stats", "kernel_stats"),
    ("gpu", "kernel_stats", "kernel_stats"),
    ("bert", "kernel_stats", "kernel_stats"),
    ("ranks", "kernel_stats", "kernel_stats"),
    ("jaxgpu", "op_stats", "op_stats"),
    ("jaxcpu", "op_stats", "op_stats"),
    ("gpu", "op_stats", "op_stats"),
    ("bert", "op_stats", "op_stats"),
    ("ranks", "op_stats", "op_stats"),
    ("jaxgpu", "hlo_stats", "hlo_stats"),
    ("gpu", "overview_page", "devices"),
    ("bert", "overview_page", "devices"),
    ("jaxgpu", "overview_page", "devices"),
    ("gpu", "overview_page", "top_ops"),
]


@pytest.fixture(scope="module", params=sorted(SIZES))
def sized(
    request: pytest.FixtureRequest, browser: Any, gpu_server: RunningServer
) -> Iterator[tuple[Any, Recorder, str]]:
    """One page at each size, kept for the module's tests (opening a context costs)."""
    context, page, rec = open_sized(browser, gpu_server.url, request.param)
    yield page, rec, request.param
    context.close()
    rec.check()


def numbers_out_of_view(page: Any, table: str) -> list[str]:
    """The numeric columns of ``table`` whose header is not inside both the window and the
    table's box (as drawn, without scrolling the box sideways)."""
    return list(
        page.evaluate(
            """(name) => {
            const table = document.querySelector(`table[data-table="${name}"]`);
            const box = table.closest('.table-scroll').getBoundingClientRect();
            const right = Math.min(box.right, window.innerWidth) + 1;
            return [...table.querySelectorAll('thead th.numeric')]
              .filter((th) => {
                const r = th.getBoundingClientRect();
                return r.right > right || r.left < box.left - 1;
              })
              .map((th) => th.dataset.key);
        }""",
            table,
        )
    )


def tallest_row(page: Any, table: str) -> float:
    return float(
        page.evaluate(
            """(name) => Math.max(0, ...[...document.querySelectorAll(
                `table[data-table="${name}"] tbody tr`)]
                .map((r) => r.getBoundingClientRect().height))""",
            table,
        )
    )


@pytest.mark.parametrize(("prefix", "tool", "table"), TABLES)
def test_every_number_of_the_wide_tables_is_in_view(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer, prefix: str, tool: str, table: str
) -> None:
    page, _rec, size = sized
    goto(page, gpu_server.url, tool, run_of(gpu_server, prefix))
    page.wait_for_selector(f'table[data-table="{table}"] tbody tr')
    next_frames(page)  # the table measures its columns on the next frame
    hidden = numbers_out_of_view(page, table)
    assert not hidden, f"{prefix} {tool} at {size}: numeric columns out of view: {hidden}"
    # One line per row: long names are cut (a click shows them whole), never wrapped.
    assert tallest_row(page, table) < 40, f"{prefix} {tool} at {size}: rows taller than a line"


def test_the_op_profile_tree_has_one_line_rows_in_the_themes_colours(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    """Op profile's tree rows were 42 px for one line of text (the toggle button's padding)
    and its time bars hard-coded light grey and blue, bright in the dark theme."""
    page, _rec, _size = sized
    goto(page, gpu_server.url, "op_profile", run_of(gpu_server, "jaxgpu"))
    assert tallest_row(page, "op_profile") < 36
    colours = page.evaluate(
        """() => {
        const probe = document.createElement('span');
        probe.style.background = 'var(--line-soft)';
        document.body.append(probe);
        const want = getComputedStyle(probe).backgroundColor;
        probe.remove();
        const track = document.querySelector('table[data-table="op_profile"] .hbar-track');
        return [getComputedStyle(track).backgroundColor, want];
    }"""
    )
    assert colours[0] == colours[1]


def test_a_click_shows_a_cut_name_whole(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    goto(page, gpu_server.url, "kernel_stats", run_of(gpu_server, "jaxgpu"))
    cell = 'table[data-table="kernel_stats"] tbody tr:first-child td[data-key="kernel_name"]'
    one_line = tallest_row(page, "kernel_stats")
    name = page.get_attribute(cell, "data-value") or ""
    assert len(name) > 200  # a ck_tile attention kernel: hundreds of characters
    page.click(cell)
    assert tallest_row(page, "kernel_stats") > 3 * one_line
    assert page.inner_text(cell).replace("\n", "") == name
    page.click(cell)
    assert tallest_row(page, "kernel_stats") == one_line


# ---- the trace viewer ------------------------------------------------------------------------

TRACE = '.tool-page[data-tool="trace_viewer"]'


def open_trace_at(page: Any, server: RunningServer, prefix: str, **options: str) -> None:
    goto(page, server.url, "trace_viewer", run_of(server, prefix), **options)
    page.wait_for_selector(f'{TRACE}[data-loading="0"][data-draw-count][data-steps="ready"]')


def show_range(page: Any, t0: float, t1: float) -> None:
    """Sets the view and waits for a window at its resolution (drawn)."""
    page.evaluate("([a, b]) => window.stepscopeTrace.setView(a, b)", [t0, t1])
    page.wait_for_function(
        """() => {
        const v = window.stepscopeTrace;
        const d = v.data;
        const span = v.view.t1 - v.view.t0;
        return d && d.t0 <= Math.max(0, v.view.t0) && d.t1 >= Math.min(v.duration, v.view.t1)
          && d.t1 - d.t0 <= 4 * span && v.root.dataset.loading === '0' && !v.frameScheduled;
    }"""
    )


@pytest.mark.parametrize("prefix", ["jaxgpu", "gpu"])
def test_the_timeline_takes_the_screen_and_details_open_beside_it(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer, prefix: str
) -> None:
    page, _rec, size = sized
    open_trace_at(page, gpu_server, prefix)
    share = canvas_share(page)
    assert share >= 0.55, f"{prefix} at {size}: the timeline is {share:.0%} of the window"
    # A clicked event's details open in the pane, inside the window, the timeline as large.
    page.evaluate(
        """() => {
        const v = window.stepscopeTrace;
        const d = v.data;
        let best = 0;
        for (let i = 0; i < d.n; i += 1) if (d.dur[i] > d.dur[best]) best = i;
        v.selectEvent({event: d.event[best], line: d.line[best], depth: d.depth[best],
                       start_ns: d.start[best], dur_ns: d.dur[best]});
    }"""
    )
    page.wait_for_selector(".tv-details .tv-event")
    box = page.locator(".tv-details").bounding_box()
    width, height = SIZES[size]
    assert box["y"] + box["height"] <= height and box["x"] + box["width"] <= width
    assert page.locator(".tv-details h2").is_visible()
    next_frames(page)
    assert canvas_share(page) >= 0.55 if width < 1600 else canvas_share(page) >= 0.4
    page.keyboard.press("Escape")
    assert page.locator(".tv-details").is_hidden()


def test_the_timeline_opens_at_the_steps_when_they_are_a_sliver_of_the_trace(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    """The JAX GPU trace is 9.73 s of start-up and compiling, then 4 steps in about 10 ms: it
    opened as a nearly empty timeline, the steps a sliver at its right edge. It opens at the
    steps now (Full view shows all); a trace whose steps fill it opens whole, as before."""
    page, _rec, _size = sized
    steps_and_view = """() => {
        const v = window.stepscopeTrace;
        const s = v.structure.steps;
        const n = s.number.length;
        return {t0: v.view.t0, t1: v.view.t1, duration: v.duration, first: s.start_ns[0],
                end: s.start_ns[n - 1] + s.dur_ns[n - 1], summary: v.summary.textContent};
    }"""
    open_trace_at(page, gpu_server, "jaxgpu")
    seen = page.evaluate(steps_and_view)
    assert seen["end"] - seen["first"] < 0.01 * seen["duration"]
    assert seen["t0"] <= seen["first"] and seen["end"] <= seen["t1"]
    assert seen["t1"] - seen["t0"] < 1.2 * (seen["end"] - seen["first"])
    assert "opened at the steps" in seen["summary"]
    page.click("text=Full view")
    page.wait_for_function(
        "() => window.stepscopeTrace.view.t1 - window.stepscopeTrace.view.t0"
        " >= window.stepscopeTrace.duration"
    )
    open_trace_at(page, gpu_server, "gpu")  # five steps over the whole trace
    seen = page.evaluate(steps_and_view)
    assert (seen["t0"], seen["t1"]) == (0, seen["duration"])
    assert "opened at the steps" not in seen["summary"]


def test_a_counter_reads_the_same_at_2us_as_at_200us(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    """Inside the longest kernel of the JAX GPU fixture (432 us) GPU utilization is 100% at a
    200 us span; at a 2 us span every bucket must read the same (it read 0/100% in turn)."""
    page, _rec, _size = sized
    open_trace_at(page, gpu_server, "jaxgpu")
    found = page.evaluate(
        """async () => {
        const r = await window.stepscopeTrace.client.search({q: 'FmhaBwdDQDKDV', limit: 50});
        let best = 0;
        r.results.dur_ns.forEach((d, i) => { if (d > r.results.dur_ns[best]) best = i; });
        return [r.results.start_ns[best], r.results.dur_ns[best]];
    }"""
    )
    mid = found[0] + found[1] / 2
    assert found[1] > 200_000
    values = """() => {
        const v = window.stepscopeTrace;
        const c = v.data.counters.find((x) => x.name.startsWith('Utilization'));
        const seen = [];
        for (let j = 0; j < c.t.length; j += 1) {
          if (c.t[j] >= v.view.t0 && c.t[j] < v.view.t1) seen.push(c.v[j]);
        }
        return seen;
    }"""
    show_range(page, mid - 100_000, mid + 100_000)
    wide = page.evaluate(values)
    show_range(page, mid - 1_000, mid + 1_000)
    narrow = page.evaluate(values)
    assert wide and narrow and set(wide) == set(narrow) == {100}
    show_range(page, mid - 10, mid + 10)  # 20 ns: still one value per nanosecond, drawn
    assert set(page.evaluate(values)) == {100}


def test_a_search_jump_zooms_to_the_match(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    open_trace_at(page, gpu_server, "gpu")
    page.fill(".tv-search input", "Memset")  # short kernels: well under a pixel at full view
    page.press(".tv-search input", "Enter")
    page.wait_for_selector(f"{TRACE}[data-selected]")
    page.wait_for_function("() => !window.stepscopeTrace.frameScheduled")
    width_px = page.evaluate(
        """() => {
        const v = window.stepscopeTrace;
        const e = v.selected;
        return e.dur_ns * (v.W - 240) / (v.view.t1 - v.view.t0);
    }"""
    )
    assert width_px >= 20
    page.press(".tv-search input", "Enter")  # the next match: also in view, as wide
    page.wait_for_function("() => window.stepscopeTrace.matchIndex === 1")
    assert page.evaluate(
        """() => {
        const v = window.stepscopeTrace;
        const e = v.selected;
        return e.dur_ns * (v.W - 240) / (v.view.t1 - v.view.t0) >= 20
          && e.start_ns >= v.view.t0 && e.start_ns + e.dur_ns <= v.view.t1;
    }"""
    )


def test_pinned_tracks_stay_on_top_and_the_filter_hides_the_others(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    open_trace_at(page, gpu_server, "gpu")
    page.evaluate("() => { localStorage.clear(); window.stepscopeTrace.pinned.clear(); }")
    page.evaluate("() => { window.stepscopeTrace.scroller.scrollTop = 0; }")
    page.wait_for_function("() => window.stepscopeTrace.scrollY === 0")
    layout = """() => window.stepscopeTrace.layout.bands
        .filter((b) => b.kind === 'track' || b.kind === 'counter').map((b) => [b.label, b.y])"""
    before = page.evaluate(layout)
    stream = next(label for label, _y in before if label.startswith("Stream"))
    # Click the pin at the right of the stream's name in the gutter.
    y = page.evaluate(
        """(name) => {
        const v = window.stepscopeTrace;
        const b = v.layout.bands.find((x) => x.label === name);
        return 26 + b.y - v.scrollY + 8;
    }""",
        stream,
    )
    page.mouse.click(
        page.locator("canvas.tv-canvas").bounding_box()["x"] + 240 - 14,
        page.locator("canvas.tv-canvas").bounding_box()["y"] + y,
    )
    page.wait_for_function("() => document.querySelector('.tool-page').dataset.pinned")
    after = page.evaluate(layout)
    assert after[0][0] == stream and after[0][1] < before[0][1] + 30  # first, under "Pinned"
    # It is in the part that does not scroll (drawn under the axis whatever the scroll).
    assert page.evaluate(
        """(name) => {
        const v = window.stepscopeTrace;
        const b = v.layout.bands.find((x) => x.label === name && x.pinned);
        return b && b.y + b.h <= v.layout.pinnedH;
    }""",
        stream,
    )
    # The track filter keeps the tracks whose name (or section) holds the text, pins too.
    page.fill("input.tv-track-filter", "python")
    shown = [label for label, _y in page.evaluate(layout)]
    assert stream in shown and all(label == stream or "python" in label for label in shown)
    page.fill("input.tv-track-filter", "")
    page.evaluate("localStorage.clear()")


def test_the_dark_theme_follows_the_system_setting(browser: Any, gpu_server: RunningServer) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 768}, color_scheme="dark")
    page = context.new_page()
    try:
        goto(page, gpu_server.url, "trace_viewer", run_of(gpu_server, "gpu"))
        page.wait_for_selector(f"{TRACE}[data-draw-count]")
        luminance = """(color) => {
            const [r, g, b] = color.match(/\\d+/g).map(Number);
            return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
        }"""
        page_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        card_bg = page.evaluate("getComputedStyle(document.querySelector('nav')).backgroundColor")
        text = page.evaluate("getComputedStyle(document.body).color")
        assert page.evaluate(f"({luminance})('{page_bg}')") < 0.2
        assert page.evaluate(f"({luminance})('{card_bg}')") < 0.25
        assert page.evaluate(f"({luminance})('{text}')") > 0.8
        # the timeline's canvas is drawn in the theme's colours too
        assert page.evaluate("window.stepscopeTrace.theme.canvas") == "#202124"
    finally:
        context.close()


def test_the_roofline_is_drawn_in_the_themes_text_colour(
    browser: Any, gpu_server: RunningServer
) -> None:
    """The roof and the whole program's point were #333 and black: invisible on the dark
    theme's background. They are drawn in the theme's text colour now, in either theme."""
    for scheme in ("dark", "light"):
        context = browser.new_context(viewport={"width": 1366, "height": 768}, color_scheme=scheme)
        page = context.new_page()
        try:
            goto(page, gpu_server.url, "roofline_model", run_of(gpu_server, "jaxgpu"))
            seen = page.evaluate(
                """() => {
                const chart = document.querySelector('[data-chart="roofline"]');
                return [getComputedStyle(document.body).color,
                        getComputedStyle(chart.querySelector('.roof')).stroke,
                        getComputedStyle(chart.querySelector('.point[data-operation="Program"]')).fill];
            }"""
            )
            assert seen[1] == seen[2] == seen[0], (scheme, seen)
        finally:
            context.close()


def test_pages_are_offered_only_for_runs_with_their_data(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    """The tool list beside Compare is the baseline run's tools with data (it listed every
    tool), and a JAX CPU run has no HLO op stats page (its HLO ops ran on no device)."""
    page, _rec, _size = sized
    base, cand = run_of(gpu_server, "jaxcpu"), run_of(gpu_server, "gpu")
    listed = httpx.get(gpu_server.url + "api/tools", params={"run": base}, timeout=300).json()
    offered = [t["name"] for t in listed if t["page"] and t["available"]]
    assert "hlo_stats" not in offered and "kernel_stats" not in offered
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.goto(f"{gpu_server.url}#/compare?{httpx.QueryParams({'base': base, 'cand': cand})}")
    wait_rendered(page, "compare")
    page.wait_for_function(
        "(n) => document.querySelectorAll('#tool-list a').length === n", arg=len(offered)
    )
    shown = page.eval_on_selector_all("#tool-list a", "els => els.map(e => e.dataset.tool)")
    assert shown == offered


# ---- charts ------------------------------------------------------------------------------------


def text_heights(page: Any, selector: str) -> list[float]:
    return list(
        page.eval_on_selector_all(
            f"{selector} text:not([transform])",  # (a rotated label's box is its length)
            "els => els.map((e) => e.getBoundingClientRect().height)",
        )
    )


def test_chart_text_is_one_size_at_any_width(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    """The roofline (drawn 640 units wide, shown ~900 px) had ~22 px text, Compare's charts
    (960 units, ~450 px) ~6 px: every chart's text is now about 12 px on screen."""
    page, _rec, size = sized
    goto(page, gpu_server.url, "roofline_model", run_of(gpu_server, "jaxgpu"))
    next_frames(page)  # the chart's text size is set once it is laid out
    heights = text_heights(page, "[data-chart='roofline'] svg")
    page.evaluate("document.body.removeAttribute('data-rendered')")
    base, cand = run_of(gpu_server, "tf2"), run_of(gpu_server, "gpu")
    page.goto(f"{gpu_server.url}#/compare?{httpx.QueryParams({'base': base, 'cand': cand})}")
    wait_rendered(page, "compare")
    next_frames(page)
    heights += text_heights(page, "svg.chart")
    assert heights and all(11 <= x <= 18 for x in heights), (
        size,
        sorted(heights)[:3],
        max(heights),
    )


def test_the_memory_timeline_is_a_step_function_with_one_time_axis(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    goto(page, gpu_server.url, "memory_profile", run_of(gpu_server, "jaxgpu"))
    paths = page.eval_on_selector_all(
        "svg.mem-chart path[data-series]",
        "els => els.map((e) => [e.dataset.series, e.getAttribute('d')])",
    )
    assert {name for name, _d in paths} == {"in_use", "heap", "fragmentation"}
    for name, d in paths:  # a move, then only horizontal and vertical segments: no ramps
        assert re.fullmatch(r"M[\d.]+ [\d.]+( H[\d.]+ V[\d.]+)*", d), name
    ticks = page.eval_on_selector_all(
        "svg.mem-chart .x-tick", "els => els.map((e) => e.textContent)"
    )
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks)  # one set of distinct time labels
    # Memory in use is an area under the heap line: in view where the two are equal
    assert page.locator("svg.mem-chart path.area").count() == 1


def test_the_pod_heat_map_names_its_workers_and_steps(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    goto(page, gpu_server.url, "pod_viewer", run_of(gpu_server, "tf2"))
    hosts = page.eval_on_selector_all(
        ".pod-heat-hosts span", "els => els.map((e) => e.textContent)"
    )
    steps = page.eval_on_selector_all(
        ".pod-heat-steps span", "els => els.map((e) => e.textContent)"
    )
    assert hosts == ["vm", "w1"] and steps == ["0", "1", "2", "3"]
    assert "Late against the median worker" in page.inner_text(".pod-heat-legend")


def test_diagnostics_name_their_measures_in_words(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    goto(page, gpu_server.url, "diagnostics", run_of(gpu_server, "tf2"))
    text = page.inner_text("#page")
    # measures were written as their keys ("input pct: 83.215984"): now "Input: 83.2%"
    assert not re.search(r"\b\w+[_ ](pct|ms|us|ns|bytes|mb|gbps):", text), "a raw field name"
    assert "Input: 83.2%" in text
    # and on the PyTorch GPU run: "Copy mb: 5892.8", "Link gbps: 150", "Caller: –" were shown
    goto(page, gpu_server.url, "diagnostics", run_of(gpu_server, "gpu"))
    text = page.inner_text("#page")
    assert not re.search(r"\b\w+[_ ](pct|ms|us|ns|bytes|mb|gbps):", text), "a raw field name"
    assert "Copy: 5.5 GiB" in text and "Link: 150 GB/s" in text and "Caller:" not in text


def test_the_recommendations_name_tools_by_their_titles(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    """The overview's "Where to look" read "op_stats: the most time-consuming ops" (the tool's
    id, as the CLI's report writes it): on the page it is the link "Op stats"."""
    page, _rec, _size = sized
    goto(page, gpu_server.url, "overview_page", run_of(gpu_server, "gpu"))
    links = page.eval_on_selector_all(
        "#page a[data-tool]", "els => els.map((e) => [e.dataset.tool, e.textContent])"
    )
    assert ["op_stats", "Op stats"] in links and ["trace_viewer", "Trace viewer"] in links
    text = page.inner_text("#page")
    assert "op_stats" not in text and "trace_viewer" not in text


def test_the_graph_viewer_is_steered_by_program_search_and_top_ops(
    sized: tuple[Any, Recorder, str], gpu_server: RunningServer
) -> None:
    page, _rec, _size = sized
    goto(page, gpu_server.url, "graph_viewer", run_of(gpu_server, "jaxgpu"))
    programs = page.eval_on_selector_all("#graph-module option", "els => els.map((e) => e.value)")
    assert programs[0] == "jit_loss_fn(17)" and len(programs) > 1
    chips = page.eval_on_selector_all(".chips .chip", "els => els.map((e) => e.dataset.node)")
    assert len(chips) == 8 and chips[0] == "te_fused_attn_backward_ffi.18"
    # a quick start: the second op becomes the center
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.click(f".chips .chip[data-node='{chips[1]}']")
    wait_rendered(page, "graph_viewer")
    assert page.get_attribute("g.node[data-distance='0']", "data-name") == chips[1]
    # the op search lists the program's matching names; Enter centers on the one typed
    page.fill("#graph-search", "gemm_fusion")
    page.wait_for_function("() => document.querySelectorAll('#graph-ops option').length > 0")
    names = page.eval_on_selector_all("#graph-ops option", "els => els.map((e) => e.value)")
    assert names and all("gemm_fusion" in n for n in names)
    page.evaluate("document.body.removeAttribute('data-rendered')")
    page.fill("#graph-search", names[-1])
    page.press("#graph-search", "Enter")
    wait_rendered(page, "graph_viewer")
    assert page.get_attribute("g.node[data-distance='0']", "data-name") == names[-1]
