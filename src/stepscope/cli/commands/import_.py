"""`stepscope import PATH... --logdir L [--run NAME] [--json]`: existing traces -> a run.

PyTorch profiler (Kineto) traces, one per rank, become one host per rank (``rank<N>`` from
``distributedInfo``); ``.xplane.pb`` files are copied under their host name; a directory
stands for the traces under it. The run directory created is printed alone on stdout (so
``RUN=$(stepscope import ...)`` works); what was imported goes to stderr. Files that cannot be
read are reported and skipped (exit status 1); if none can, nothing is written (status 2).
"""

from __future__ import annotations

import argparse
import sys

from stepscope.cli.output import print_json, table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import",
        help="turn PyTorch (Kineto) traces or .xplane.pb files into a run, one host per rank",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="trace files or directories")
    parser.add_argument("--logdir", required=True, help="log directory to create the run in")
    parser.add_argument("--run", help="run name (default: the local time, YYYY_MM_DD_HH_MM_SS)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.capture.bridges.traces import import_traces
    from stepscope.model.load import stderr_progress

    result = import_traces(args.paths, args.logdir, args.run, progress=stderr_progress())
    if args.json:
        print_json(
            {
                "run_dir": str(result.run_dir),
                "hosts": [
                    {"host": h.host, "source": h.source, "events": h.events, "rank": h.rank}
                    for h in result.hosts
                ],
                "warnings": result.warnings,
                "failures": result.failures,
            }
        )
    else:
        rows = [[h.host, f"{h.events:,}", h.source] for h in result.hosts]
        print(table(rows, ["host", "events", "source"]), file=sys.stderr)
        for line in result.warnings:
            print(f"stepscope: warning: {line}", file=sys.stderr)
        print(result.run_dir)
    for line in result.failures:
        print(f"stepscope: error: not imported: {line}", file=sys.stderr)
    return 1 if result.failures else 0
