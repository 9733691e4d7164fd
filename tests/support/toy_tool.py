"""A made-up tool, declared the way CONTRIBUTING.md's "A new tool" says: one module with
``TOOL = ToolSpec(...)`` whose result is a `@record` of `out(...)` fields, named in
`stepscope.tools.registry.TOOL_MODULES` (`tests/tools/test_new_tool_recipe.py` adds it there,
as the recipe's second file). ``line_census``: each timeline's events and their total time."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from stepscope.records import record
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolOption, ToolSpec

NAME = "line_census"


@record
class LineRow:
    host: str = out("the host")
    line: str = out("the timeline (thread, stream)")
    events: int = out("events on it")
    total_ms: float = out("their summed duration", "ms", 3)


@record
class LineCensus:
    CSV_ROWS: ClassVar[str] = "lines"

    hosts: tuple[str, ...] = out("the hosts counted")
    lines: tuple[LineRow, ...] = out("one row per timeline with events, most events first")


def build(ctx: ToolContext) -> LineCensus:
    rows = []
    for host in ctx.hosts:
        profile = ctx.store.profile(ctx.run, host)
        total_ns = np.bincount(profile.line, weights=profile.dur_ns, minlength=len(profile.lines))
        for line in profile.lines:
            if line.event_count:
                ms = round(float(total_ns[line.index]) / 1e6, 3)
                rows.append(LineRow(host, line.label, line.event_count, ms))
    top = int(ctx.option("top"))
    rows.sort(key=lambda r: (-r.events, r.host, r.line))
    return LineCensus(tuple(ctx.hosts), tuple(rows[:top] if top else rows))


TOOL = ToolSpec(
    name=NAME,
    title="Line census",
    description="Each timeline's events and their total time.",
    build=build,
    formats=("json", "csv"),
    options=(ToolOption("top", "rows to keep (0: all)", "0", ("0", "5", "20")),),
    fan_out=False,  # reads each host's profile itself (a tool of per-host summaries fans out)
    order=200,
)
