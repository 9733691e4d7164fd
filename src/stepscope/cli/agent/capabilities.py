"""The agent's tools: stepscope's existing capabilities, each a function of a `Workspace`.

Every function reads (nothing here writes but the analysis cache) and returns JSON-ready
data or text; `server` sends each answer through `workspace.bounded`. A tool that has
nothing to show for a run answers ``{"answer": "not in this profile", "why": ...}`` rather
than failing: for an agent that is an answer, not an error. Errors a user can cause (an
unknown run or host, bad SQL, a refused statement) raise `StepscopeError` with a message
saying what to do.
"""

from __future__ import annotations

from typing import Any

from stepscope.cli.agent.workspace import Workspace
from stepscope.errors import StepscopeError

NOT_IN_PROFILE = "not in this profile"
TOP_ROWS = 20
MAX_QUERY_ROWS = 200
QUERY_TIMEOUT_S = 20.0
QUERY_MEMORY_BYTES = 1 << 30
# MCP tool name -> (stepscope tool, what the agent reads it for)
TOOL_PAGES = {
    "overview": (
        "overview_page",
        "Where step time goes: steps with their breakdown (input, host compute, device "
        "compute, collectives, all others...), what bounds the steps, top ops, advice.",
    ),
    "input_pipeline": (
        "input_pipeline_analyzer",
        "Input pipeline: how long steps wait for input, input ops by self time, the "
        "bottleneck stage.",
    ),
    "memory_profile": (
        "memory_profile",
        "Allocator memory over time: peak, fragmentation, the allocations live at the peak.",
    ),
    "pod_viewer": (
        "pod_viewer",
        "Several hosts (ranks): per-rank step breakdowns, collective waits, stragglers.",
    ),
    "diagnostics": (
        "diagnostics",
        "Every rule-based finding (input bound, launch bound, small kernels, stragglers...), "
        "most severe first, with evidence and what to do.",
    ),
}


def not_in_profile(why: str) -> dict[str, str]:
    return {"answer": NOT_IN_PROFILE, "why": why}


def list_runs(ws: Workspace) -> dict[str, Any]:
    runs = ws.runs()
    return {
        "runs": [
            {
                "run": name,
                "hosts": run.host_names,
                "formats": sorted({h.format for h in run.hosts}),
                "size_bytes": run.size_bytes,
            }
            for name, run in sorted(runs.items())
        ]
    }


def list_hosts(ws: Workspace, run: str) -> dict[str, Any]:
    found = ws.run(run)
    return {
        "run": run,
        "hosts": [
            {
                "host": h.host,
                "file": ws.relative(h.path),
                "format": h.format,
                "size_bytes": h.size_bytes,
            }
            for h in found.hosts
        ],
    }


def tool_page(ws: Workspace, page: str, run: str, host: str | None = None) -> Any:
    """The JSON of one of `TOOL_PAGES` (as `stepscope tool RUN NAME` prints it)."""
    return tool_json(ws, TOOL_PAGES[page][0], run, host)


def op_stats(ws: Workspace, run: str, host: str | None = None, top: int = TOP_ROWS) -> Any:
    """op_stats: the ``top`` ops of each side (host, device) by self time."""
    data = tool_json(ws, "op_stats", run, host)
    if "rows" in data:
        top = max(1, min(int(top), 500))
        rows = data.pop("rows")
        data.pop("pie_charts", None)
        for side in ("device", "host"):
            mine = [r for r in rows if r.get("side") == side]
            data[f"{side}_ops"] = mine[:top]
            data[f"{side}_ops_left_out"] = max(0, len(mine) - top)
    return data


def kernel_stats(ws: Workspace, run: str, host: str | None = None, top: int = TOP_ROWS) -> Any:
    """kernel_stats: the ``top`` (kernel, op) pairs by total time."""
    data = tool_json(ws, "kernel_stats", run, host)
    if "rows" in data:
        top = max(1, min(int(top), 500))
        rows = data["rows"]
        data["rows"] = rows[:top]
        data["rows_left_out_here"] = max(0, len(rows) - top)
    return data


def tool_json(ws: Workspace, tool: str, run: str, host: str | None) -> Any:
    """A tool's JSON, or `not_in_profile` when the run lacks what the tool shows."""
    from stepscope.tools.registry import get_tool

    analysis = ws.analysis(run)
    check_host(ws, run, host)
    spec = get_tool(tool)
    if not analysis.available(spec, host):
        # what the profile lacks, as the CLI says it: the description ("Every GPU kernel
        # per op: ...") read as the reason in the agent's "why"
        return not_in_profile(
            f"{spec.title} has nothing to show for run {run}: {analysis.lacking(spec, host)}"
        )
    return analysis.json(spec, host)


def report(ws: Workspace, run: str, host: str | None = None) -> str:
    """`stepscope report RUN`'s text."""
    from stepscope.cli.report_render import render
    from stepscope.model.runs import saved_by
    from stepscope.tools.input_pipeline_analyzer import InputPipelineAnalysis
    from stepscope.tools.overview_page import OverviewPage

    analysis = ws.analysis(run)
    ctx = analysis.context("overview_page", host, also=("input_pipeline_analyzer",))
    overview = analysis.tool("overview_page", host)
    pipeline = analysis.tool("input_pipeline_analyzer", host)
    assert isinstance(overview, OverviewPage) and isinstance(pipeline, InputPipelineAnalysis)
    return render(overview, pipeline, 10, 100, ctx.partial_reads, saved_by(ctx.run))


def diff(ws: Workspace, baseline: str, candidate: str, host: str | None = None) -> str:
    """`stepscope diff BASELINE CANDIDATE`'s text: what changed and whether it is real."""
    from stepscope.cli.compare_inputs import pick_host
    from stepscope.cli.diff_render import render_text
    from stepscope.stats.compare import diff_runs

    sides = []
    for name in (baseline, candidate):
        analysis = ws.analysis(name)
        sides.append(analysis.summary(pick_host(analysis.run, host)))
    return render_text(diff_runs(sides[0], sides[1]), [])


def query(
    ws: Workspace, run: str, sql: str, host: str | None = None, max_rows: int = 100
) -> dict[str, Any]:
    """One read-only SELECT over the run's tables (docs/query.md): columns, rows (at most
    ``max_rows``), whether rows were left out."""
    from stepscope.sql import Limits
    from stepscope.sql.render import plain, rows

    max_rows = max(0, min(int(max_rows), MAX_QUERY_ROWS))
    limits = Limits(timeout_s=QUERY_TIMEOUT_S, memory_bytes=QUERY_MEMORY_BYTES)
    db = ws.database(run, host, limits)
    result = db.query(sql, max_rows=max_rows)
    out: dict[str, Any] = {
        "columns": result.table.column_names,
        "rows": [list(r.values()) for r in rows(plain(result.table))],
        "truncated": result.truncated,
    }
    if result.truncated:
        out["note"] = f"only the first {max_rows} rows; aggregate or add a LIMIT"
    if result.failed:
        out["hosts_left_out"] = result.failed
    return out


def sql_tables(ws: Workspace) -> dict[str, Any]:
    """The tables `query` reads: what a row is and each column's meaning."""
    from stepscope.sql.tables import TABLES

    return {
        "tables": {
            spec.name: {"row": spec.row, "columns": spec.columns()} for spec in TABLES.values()
        },
        "dialect": "DuckDB SQL, one read-only SELECT; times are int64 nanoseconds (_ns)",
    }


def check_host(ws: Workspace, run: str, host: str | None) -> None:
    if host is not None:
        ws.run(run).host(host)


__all__ = ["NOT_IN_PROFILE", "TOOL_PAGES", "StepscopeError", "Workspace"]
