"""`stepscope report RUN`: a terminal report of where the step time goes and what to do.

Built from the overview_page and input_pipeline_analyzer tools (one shared store, so the
profile is read and analysed once): summary, step-time breakdown with bars, top ops, the
input pipeline when it matters, and the recommendation.
"""

from __future__ import annotations

import argparse

from stepscope.cli.hosts import (
    add_executor_arguments,
    executor_for,
    report_failed,
)
from stepscope.cli.output import count, terminal_width

# The report's text is made in stepscope.cli.report_render (shared with the MCP server).
from stepscope.cli.report_render import bar, input_verdict, render
from stepscope.stats.steps.sources import SOURCES

__all__ = ["bar", "input_verdict", "register", "render", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="human-readable performance report of a run")
    parser.add_argument("run", metavar="RUN", help="run directory or profile file")
    parser.add_argument("--host", help="one host (default: all hosts of the run)")
    parser.add_argument(
        "--step-source",
        choices=("auto", *SOURCES),
        default="auto",
        help="where steps come from (default: auto)",
    )
    parser.add_argument("--top", type=count, default=10, help="number of top ops (default 10)")
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    add_executor_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.commands.tool import context_for
    from stepscope.model.runs import saved_by
    from stepscope.tools.input_pipeline_analyzer import InputPipelineAnalysis
    from stepscope.tools.overview_page import OverviewPage
    from stepscope.tools.registry import get_tool

    options = get_tool("overview_page").parse_options({"step_source": args.step_source})
    with executor_for(args) as executor:
        ctx = context_for(
            args.run,
            get_tool("overview_page"),
            args.host,
            options,
            use_cache=not args.no_cache,
            executor=executor,
            also=(get_tool("input_pipeline_analyzer"),),
        )
        overview = get_tool("overview_page").build(ctx)
        pipeline = get_tool("input_pipeline_analyzer").build(ctx)
    assert isinstance(overview, OverviewPage) and isinstance(pipeline, InputPipelineAnalysis)
    saved = saved_by(ctx.run)
    print(render(overview, pipeline, args.top, terminal_width(), ctx.partial_reads, saved))
    return report_failed(ctx.failed, ctx.moved)
