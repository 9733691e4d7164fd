"""`stepscope mcp LOGDIR`: a Model Context Protocol server over stdio for coding agents.

Its tools are stepscope's capabilities (list runs and hosts, the tools' JSON, report, diff,
SQL) over the runs under LOGDIR, read-only and bounded; see docs/agents.md. Needs the `agent`
extra (pip install 'stepscope[agent]').
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the runs under LOGDIR to a coding agent (Model Context Protocol, stdio)",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("logdir", metavar="LOGDIR", help="the log directory whose runs to serve")
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.agent.server import serve

    return serve(args.logdir, use_cache=not args.no_cache)
