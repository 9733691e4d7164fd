"""`stepscope query RUN "SELECT ..."`: SQL over every host's events, steps, ops, kernels...

Without SQL: an interactive shell on a terminal, else the query read from standard input.
The tables and examples: docs/query.md. Needs the `sql` extra (duckdb, pyarrow).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stepscope.cli.query_output import DEFAULT_MAX_ROWS
from stepscope.errors import StepscopeError
from stepscope.logdir import ALL_HOSTS

if TYPE_CHECKING:
    from stepscope.sql import Limits


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "query",
        help="SQL over a run: events, stats, steps, ops, kernels, collectives, memory, hosts",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("run", metavar="RUN", help="run directory or a single profile file")
    parser.add_argument(
        "sql",
        metavar="SQL",
        nargs="?",
        help="one SELECT (tables: events, stats, steps, ops, kernels, collectives, memory, "
        "hosts, runs; docs/query.md); none: a shell on a terminal, else standard input",
    )
    parser.add_argument("--host", help=f"only this host (default: every host; {ALL_HOSTS} too)")
    parser.add_argument(
        "--format",
        choices=("table", "csv", "json", "parquet"),
        default="table",
        help="output format (default: table; parquet needs -o or a pipe)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the result to FILE")
    parser.add_argument(
        "--max-rows",
        type=int,
        metavar="N",
        help=f"most rows to print (default {DEFAULT_MAX_ROWS}; with -o: all); the output "
        "says when rows were left out",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a query after this long (default 30)",
    )
    parser.add_argument(
        "--memory-limit",
        default=None,
        metavar="SIZE",
        help="most memory a query may use, e.g. 4G (default 2G)",
    )
    parser.add_argument(
        "--step-source", default="auto", help="where steps come from (as `stepscope tool`)"
    )
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def _limits(args: argparse.Namespace) -> Limits:
    from stepscope import limits as size_limits
    from stepscope.sql import Limits

    base = Limits()
    timeout = base.timeout_s if args.timeout is None else args.timeout
    if not timeout > 0:
        raise StepscopeError(f"--timeout {args.timeout}: give a number of seconds above 0")
    memory = base.memory_bytes
    if args.memory_limit is not None:
        try:
            memory = size_limits.parse_size(args.memory_limit)
        except ValueError as exc:
            raise StepscopeError(f"--memory-limit: {exc}") from None
    return Limits(timeout_s=timeout, memory_bytes=memory)


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.progress import stderr_progress
    from stepscope.cli.query_output import answer
    from stepscope.sql import Database

    if args.max_rows is not None and args.max_rows < 0:
        raise StepscopeError(f"--max-rows {args.max_rows}: give 0 or more")
    host = None if args.host in (None, ALL_HOSTS) else args.host
    with Database(
        args.run,
        host,
        limits=_limits(args),
        step_source=args.step_source,
        use_cache=not args.no_cache,
        progress=stderr_progress(),
    ) as db:
        if args.sql is not None:
            return answer(db, args.sql, args)
        if sys.stdin.isatty():
            from stepscope.cli.query_shell import shell

            return shell(db, args)
        return answer(db, sys.stdin.read(), args)
