"""`stepscope mcp LOGDIR`: the agent tools (`capabilities`) served over stdio with the `mcp`
package. No network listener: the client starts this process and talks on its stdin and
stdout (logs go to stderr). Every answer is bounded (`workspace.bounded`); every run is
named under LOGDIR (`workspace.Workspace`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stepscope._version import __version__
from stepscope.cli.agent import capabilities as cap
from stepscope.cli.agent.workspace import Workspace, bounded, bounded_text
from stepscope.errors import StepscopeError

EXTRA = "agent"
INSTRUCTIONS = (
    "stepscope profiles ML training steps. Start with list_runs, then overview (where each "
    "step's time goes and what bounds it), then the page its headline points at "
    "(input_pipeline, op_stats, kernel_stats, memory_profile, pod_viewer, diagnostics). "
    "query runs one read-only DuckDB SELECT over the run's tables (sql_tables lists them; "
    "times are int64 ns). An answer of 'not in this profile' means the profile lacks that "
    "data. docs/agents.md has the full method."
)


def import_mcp() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise StepscopeError(
            f"the MCP server needs the optional package mcp ({exc}): "
            f"pip install 'stepscope[{EXTRA}]'"
        ) from None
    return MCPServer


def build_server(ws: Workspace) -> Any:
    """The MCP server over ``ws``'s runs (not started)."""
    MCPServer = import_mcp()
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer(
        name="stepscope", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)

    def add(fn: Callable[..., str], name: str, description: str) -> None:
        server.add_tool(
            fn, name=name, description=description, annotations=read_only, structured_output=False
        )

    def answer(compute: Callable[[], Any]) -> str:
        try:
            data = compute()
        except StepscopeError as exc:
            raise ToolError(str(exc)) from None
        return bounded_text(data) if isinstance(data, str) else bounded(data)

    def list_runs() -> str:
        return answer(lambda: cap.list_runs(ws))

    def list_hosts(run: str) -> str:
        return answer(lambda: cap.list_hosts(ws, run))

    def sql_tables() -> str:
        return answer(lambda: cap.sql_tables(ws))

    def op_stats(run: str, host: str | None = None, top: int = cap.TOP_ROWS) -> str:
        return answer(lambda: cap.op_stats(ws, run, host, top))

    def kernel_stats(run: str, host: str | None = None, top: int = cap.TOP_ROWS) -> str:
        return answer(lambda: cap.kernel_stats(ws, run, host, top))

    def report(run: str, host: str | None = None) -> str:
        return answer(lambda: cap.report(ws, run, host))

    def diff(baseline: str, candidate: str, host: str | None = None) -> str:
        return answer(lambda: cap.diff(ws, baseline, candidate, host))

    def query(run: str, sql: str, host: str | None = None, max_rows: int = 100) -> str:
        return answer(lambda: cap.query(ws, run, sql, host, max_rows))

    add(list_runs, "list_runs", "The runs under the log directory: name, hosts, formats.")
    add(list_hosts, "list_hosts", "The hosts (profile files) of one run.")
    for page, (_, description) in cap.TOOL_PAGES.items():
        add(_page(page, answer, ws), page, description + " Args: run, optional host.")
    add(op_stats, "op_stats", "Ops by self time on the host and the devices (top N per side).")
    add(kernel_stats, "kernel_stats", "GPU kernels by total time, with their ops (top N).")
    add(report, "report", "The terminal report: headline, breakdown, top ops, advice.")
    add(diff, "diff", "Compare two runs: what changed in step time and whether it is real.")
    add(sql_tables, "sql_tables", "The tables query can read, and each column's meaning.")
    add(
        query,
        "query",
        "One read-only DuckDB SELECT over a run's tables (events, stats, steps, ops, kernels, "
        "collectives, memory, hosts, runs); at most max_rows rows come back.",
    )
    return server


def _page(
    page: str, answer: Callable[[Callable[[], Any]], str], ws: Workspace
) -> Callable[..., str]:
    def tool(run: str, host: str | None = None) -> str:
        return answer(lambda: cap.tool_page(ws, page, run, host))

    tool.__name__ = page
    return tool


def serve(logdir: str, use_cache: bool = True) -> int:
    """Serves ``logdir``'s runs on stdin/stdout until the client closes them."""
    import_mcp()
    import duckdb  # noqa: F401  (the query tool's extra is part of the agent extra)

    ws = Workspace(logdir, use_cache=use_cache)
    try:
        build_server(ws).run("stdio")
    finally:
        ws.close()
    return 0
