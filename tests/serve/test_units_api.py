"""Every number's unit is declared once, with the tool's output field, and served to the web UI
(its one formatter, util.fmtUnit, writes each value in its field's unit)."""

from __future__ import annotations

import re

import httpx

from stepscope.serve.routes import STATIC_DIR
from stepscope.tools.field_docs import field_units


def test_declared_units_are_served_by_json_path(client: httpx.Client) -> None:
    response = client.get("/api/units")
    assert response.status_code == 200
    units = response.json()["tools"]
    assert units == field_units()
    assert units["kernel_stats"]["rows[].total_duration_us"] == "us"
    assert units["hlo_stats"]["rows[].flop_rate_gflops"] == "GFLOP/s"
    assert units["memory_viewer"]["peak_mib"] == "MiB"
    # a dict field's known keys (a device's plane stats) carry their own units
    assert units["overview_page"]["run_environment.devices[].memory_size"] == "bytes"
    assert units["overview_page"]["run_environment.devices[].clock_rate"] == "kHz"


def test_every_served_unit_has_a_format_in_the_ui() -> None:
    """A unit the UI cannot write is a number shown without one: each declared unit (but the
    compound ones naming several quantities) has its entry in util.js's table of formats."""
    util = (STATIC_DIR / "util.js").read_text()
    table = util[util.index("const BY_UNIT = {") : util.index("};", util.index("const BY_UNIT"))]
    known = set(re.findall(r"^\s*'?([\w/%]+)'?:", table, flags=re.M))
    declared = {u for tool in field_units().values() for u in tool.values()}
    simple = {u for u in declared if re.fullmatch(r"[\w/%]+", u)}
    assert simple <= known, sorted(simple - known)
