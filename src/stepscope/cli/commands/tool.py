"""`stepscope tool RUN TOOL [--host H] [--json | --csv] [--option KEY=VALUE ...]`.

Prints one tool's data. Tool names, their formats and options all come from the tool
registry, so a new tool module is a new choice here with no change to this file. Without
``--host`` a run with several hosts gives ALL_HOSTS (for tools that support it).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stepscope.cli import cached_tool, sibling_answers
from stepscope.cli.hosts import (
    add_executor_arguments,
    executor_for,
    host_progress,
    report_failed,
    report_partial,
)
from stepscope.cli.output import Parser, json_text
from stepscope.errors import StepscopeError
from stepscope.logdir import ALL_HOSTS

if TYPE_CHECKING:  # the tools are imported when one runs, not for `stepscope --help`
    from stepscope.executor import Executor
    from stepscope.tools.context import ToolContext
    from stepscope.tools.registry import ToolSpec


def _tool_list() -> str:
    from stepscope.tools.registry import all_tools

    lines = ["tools:"]
    for spec in all_tools():
        formats = "/".join(spec.formats)
        lines.append(f"  {spec.name:<28} {spec.description} [{formats}]")
        for option in spec.options:
            choices = f" ({'|'.join(option.choices)})" if option.choices else ""
            lines.append(
                f"      --option {option.name}=...{choices}: {option.description}"
                f" (default {option.default})"
            )
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tool",
        help="print one tool's data (overview_page, op_stats, ...) for a run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if isinstance(parser, Parser):  # the list imports every tool: only for `tool --help`
        parser.lazy_epilog = _tool_list
    parser.add_argument(
        "run",
        metavar="RUN",
        help="run directory (.../plugins/profile/<session>) or a single profile file",
    )
    parser.add_argument(
        "tool",
        metavar="TOOL",
        help="tool name (listed below; an unknown name says which exist)",
    )
    parser.add_argument(
        "--host",
        help=f"one host, or {ALL_HOSTS} (default: the only host, or "
        f"{ALL_HOSTS} when there are several); the trace viewer also takes a "
        "comma-separated list of hosts",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="JSON output (the default)")
    output.add_argument("--csv", action="store_true", help="CSV output, for tools that have it")
    parser.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="tool option (repeatable)",
    )
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    add_executor_arguments(parser)
    parser.set_defaults(func=run)


def parse_options(spec: ToolSpec, pairs: list[str]) -> dict[str, str]:
    """``--option KEY=VALUE`` pairs, checked by the tool's spec (defaults filled in)."""
    given: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise StepscopeError(f"option {pair!r} is not KEY=VALUE")
        given[key] = value
    return spec.parse_options(given)


def context_for(
    path: str,
    spec: ToolSpec,
    host: str | None,
    options: dict[str, str],
    use_cache: bool = True,
    executor: Executor | None = None,
    also: tuple[ToolSpec, ...] = (),
) -> ToolContext:
    """The tool's context (`stepscope.Analysis.context`), with the per-host work of ALL_HOSTS
    already done on ``executor`` (--workers / --dask; the caller closes it once the tool is
    built: the build may fan out again, as the trace viewer does)."""
    from stepscope.cli.progress import stderr_progress
    from stepscope.tools.analysis import Analysis

    analysis = Analysis(
        path,
        use_cache=use_cache,
        executor=executor,
        progress=stderr_progress(),
        host_progress=host_progress(),
    )
    return analysis.context(spec, host, options, also=also)


def run(args: argparse.Namespace) -> int:
    from stepscope.tools import output
    from stepscope.tools.analysis import with_host_errors
    from stepscope.tools.registry import get_tool

    # Keyed before the work, on the files as they are now: a file changed meanwhile makes
    # the next run compute again instead of reading an answer for other bytes.
    key = None if args.no_cache else cached_tool.key_of(args)
    siblings = sibling_answers.keys_of(args) if key is not None else {}
    spec = get_tool(args.tool)
    if args.csv and "csv" not in spec.formats:
        raise StepscopeError(
            f"tool {spec.name} has no CSV output (formats: {', '.join(spec.formats)})"
        )
    host, options = args.host, parse_options(spec, args.option)
    if host and "," in host and "hosts" in options:
        # --host a,b: ALL_HOSTS narrowed to those hosts (the trace viewer's timeline)
        host, options["hosts"] = ALL_HOSTS, host
    with executor_for(args) as executor:
        ctx = context_for(
            args.run, spec, host, options, use_cache=not args.no_cache, executor=executor
        )
        # the hosts left out or read in part: ``host_errors``, ``partial_reads`` in JSON
        result = with_host_errors(ctx, spec.build(ctx))
    partial = ctx.partial_reads
    text = output.to_csv(result) if args.csv else json_text(output.to_json(result))
    sys.stdout.write(text)
    report_partial(partial)
    status = report_failed(ctx.failed, ctx.moved)
    # an answer with hosts left out or read in part is computed again next time (and says so)
    if key is not None and status == 0 and not partial:
        cached_tool.keep(key, text)
        if siblings:
            sys.stdout.flush()  # the answer asked for first; the siblings' assembly after it
            sibling_answers.keep(ctx, siblings, args.csv)
    return status
