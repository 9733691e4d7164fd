"""op_profile, hlo_stats and roofline_model pages in headless Chromium on the JAX GPU fixture:
numbers equal the tool's JSON, the tree expands, the table sorts and filters, the roofline
draws its roof and points."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.browser import render_count, table_column, wait_rendered
from tests.support.gpu_pages import Recorder, check_fields, goto, run_of, tool_json

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


def test_hlo_stats_page(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, rec = page_for
    run = run_of(gpu_server, "jaxgpu")
    goto(page, gpu_server.url, "hlo_stats", run, "gpu0")
    data = tool_json(gpu_server, "hlo_stats", run, "gpu0")
    assert check_fields(page, data) >= 8
    names = table_column(page, "hlo_stats", "hlo_op_name")
    assert names[:5] == [r["hlo_op_name"] for r in data["rows"][:5]]
    page.fill("input.filter", "custom fusion")  # the category; expressions name operands too
    categories = table_column(page, "hlo_stats", "category")
    assert categories and set(categories) == {"custom fusion"}
    assert not rec.errors


def test_op_profile_page_tree(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, rec = page_for
    run = run_of(gpu_server, "jaxgpu")
    goto(page, gpu_server.url, "op_profile", run, "gpu0")
    data = tool_json(gpu_server, "op_profile", run, "gpu0")
    assert check_fields(page, data) >= 4
    rows = 'table[data-table="op_profile"] tbody tr'
    before = len(page.query_selector_all(rows))
    assert before == 1 + len(data["by_program"]["children"])  # root open, programs shown
    page.click(f'{rows}[data-kind="program"] button')
    assert len(page.query_selector_all(rows)) > before  # the program's categories
    assert page.query_selector(f'{rows}[data-name="IDLE"]') is not None
    page.check('input[value="by_category"]')
    kinds = page.eval_on_selector_all(rows, "els => els.map(e => e.dataset.kind)")
    assert "category" in kinds and "program" not in kinds
    assert check_fields(page, data) >= 4
    assert not rec.errors


def test_roofline_model_page(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, rec = page_for
    run = run_of(gpu_server, "jaxgpu")
    goto(page, gpu_server.url, "roofline_model", run, "gpu0")
    data = tool_json(gpu_server, "roofline_model", run, "gpu0")
    assert check_fields(page, data) >= 3
    assert page.query_selector('figure[data-chart="roofline"] polyline.roof') is not None
    placed = [
        p
        for p in data["points"]
        if p["step"] == "Total" and p["operational_intensity"] > 0 and p["flop_rate_gflops"] > 0
    ]
    circles = page.query_selector_all('figure[data-chart="roofline"] circle.point')
    assert len(circles) == len(placed)
    ops = table_column(page, "roofline_model", "operation")
    assert "Program" in ops
    # where the peaks come from: the datasheet bandwidth beside the profile's
    source = page.inner_text(".peaks-source")
    assert source == data["device"]["source"] == "profile + table: MI350X/MI355X bandwidth"
    assert data["points_above_roof"] == 0 and page.query_selector(".above-roof") is None
    assert not rec.errors


def test_memory_viewer_page(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, rec = page_for
    run = run_of(gpu_server, "jaxcpu")
    goto(page, gpu_server.url, "memory_viewer", run, "vm")
    data = tool_json(gpu_server, "memory_viewer", run, "vm")
    assert check_fields(page, data) >= 4
    sizes = [float(v) for v in table_column(page, "memory_viewer", "size_mib")]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == len(data["live_at_peak"])
    assert page.query_selector("figure.chart-box path.line") is not None
    # Another program from the picker: the address and the numbers follow.
    # The picker shows the choice at once and the mark is the first program's render's until
    # the next render: wait for that render itself, or the page read is the first program's.
    other = next(p for p in data["programs"] if p["program_id"] != data["program_id"])
    before = render_count(page)
    page.select_option("#program-picker", str(other["program_id"]))
    wait_rendered(page, "memory_viewer", before + 1)
    again = tool_json(gpu_server, "memory_viewer", run, "vm", module=str(other["program_id"]))
    assert again["peak_mib"] != data["peak_mib"]  # else the check below could pass on either
    assert check_fields(page, again) >= 4
    assert not rec.errors


def test_graph_viewer_page(page_for: tuple[Any, Recorder], gpu_server: Any) -> None:
    page, rec = page_for
    run = run_of(gpu_server, "jaxgpu")
    goto(page, gpu_server.url, "graph_viewer", run, "gpu0", depth="1")
    data = tool_json(gpu_server, "graph_viewer", run, "gpu0", depth="1")
    graph = 'figure[data-chart="hlo_graph"]'
    assert len(page.query_selector_all(f"{graph} g.node")) == len(data["nodes"])
    assert len(page.query_selector_all(f"{graph} line.edge")) == len(data["edges"])
    center = page.get_attribute(f'{graph} g.node[data-distance="0"]', "data-name")
    assert center == data["node"]
    # Click an operand: the graph re-centers on it.
    target = next(n["name"] for n in data["nodes"] if n["distance"] == -1)
    page.click(f'{graph} g.node[data-name="{target}"]')
    page.wait_for_selector(f'{graph} g.node[data-distance="0"][data-name="{target}"]')
    assert not rec.errors


def _luminance(rgb: str) -> float:
    """WCAG relative luminance of a computed colour, ``rgb(r, g, b)``."""
    parts = [int(float(v)) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in parts)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_graph_viewer_boxes_follow_the_dark_theme(
    page_for: tuple[Any, Recorder], gpu_server: Any
) -> None:
    # The boxes' fills were fixed light colours: in the dark theme their text (the theme's
    # light text) was light on light.
    page, rec = page_for
    page.emulate_media(color_scheme="dark")
    goto(page, gpu_server.url, "graph_viewer", run_of(gpu_server, "jaxgpu"), "gpu0", depth="1")
    boxes = page.eval_on_selector_all(
        'figure[data-chart="hlo_graph"] g.node',
        """els => els.map(g => [g.dataset.distance, getComputedStyle(g.querySelector('rect')).fill,
            ...[...g.querySelectorAll('text')].map(t => getComputedStyle(t).fill)])""",
    )
    assert len(boxes) > 3
    for distance, fill, *texts in boxes:
        assert _luminance(fill) < 0.1, (distance, fill)  # a dark box
        for text in texts:
            assert _contrast(fill, text) >= 4.5, (distance, fill, text)
    assert not rec.errors


def test_op_profile_page_on_pytorch_says_costs_are_estimated(
    page_for: tuple[Any, Recorder], gpu_server: Any
) -> None:
    page, rec = page_for
    run = run_of(gpu_server, "bert")
    goto(page, gpu_server.url, "op_profile", run, "h100")
    data = tool_json(gpu_server, "op_profile", run, "h100")
    assert check_fields(page, data) >= 4
    assert "PyTorch op types and input shapes" in page.inner_text(".cost-source")
    page.click('table[data-table="op_profile"] tbody tr[data-kind="program"] button')
    assert page.query_selector('tr[data-kind="category"][data-name="matmul"]') is not None
    assert not rec.errors
