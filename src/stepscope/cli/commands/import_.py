"""`stepscope import PATH... --logdir L [--run NAME] [--json]`: existing traces -> a run.

PyTorch profiler (Kineto) traces, one per rank, become one host per rank (``rank<N>`` from
``distributedInfo``); ``.xplane.pb`` files are copied under their host name; a directory
stands for the traces under it. The run directory created is printed alone on stdout (so
``RUN=$(stepscope import ...)`` works); what was imported goes to stderr. Files that cannot be
read are reported and skipped (exit status 1); if none can, nothing is written (status 2).
Several files are converted by worker processes (``--workers N``; a local pool by default for
64 MB of traces or more) or on a Dask cluster (``--dask ADDRESS``), each writing its own file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from stepscope.cli.hosts import add_executor_arguments, executor_from, host_progress
from stepscope.cli.output import print_json, table

if TYPE_CHECKING:  # imported when the command runs, not for `stepscope --help`
    from stepscope.capture.bridges.traces import ConvertAll, Converted
    from stepscope.executor import HostTask


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
    add_executor_arguments(parser)
    parser.set_defaults(func=run)


def _convert_task(task: HostTask) -> Converted:
    """One file's conversion on a worker (it writes the staged file itself)."""
    from stepscope.capture.bridges.traces import convert_to

    return convert_to(task.host.path, task.args)


def _on_executor(args: argparse.Namespace) -> ConvertAll:
    """Converts the files on the executor the options name (by default a local pool for 64 MB
    of traces or more, else one after the other in this process)."""
    from stepscope.executor import HostTask, make_executor
    from stepscope.executor.choose import POOL_MIN_BYTES
    from stepscope.model.runs import HostFile
    from stepscope.xspace.formats import of_local_file

    chosen = executor_from(args)

    def convert_all(files: list[Path], staged: list[str]) -> list[Converted | str]:
        sizes = [f.stat().st_size for f in files]
        executor = chosen
        if executor is None:
            executor = make_executor(workers=None if sum(sizes) >= POOL_MIN_BYTES else 0)
        tasks = []
        for f, size, target in zip(files, sizes, staged, strict=True):
            found = of_local_file(f)  # None: the task says why it cannot be converted
            name = found.name if found is not None else ""
            tasks.append(HostTask(HostFile(f.name, str(f), name, size), target))
        out: list[Converted | str] = [""] * len(files)
        try:
            for i, outcome in executor.map(_convert_task, tasks, host_progress()):
                out[i] = outcome.value if outcome.ok else outcome.error
        finally:
            executor.close()
        return out

    return convert_all


def run(args: argparse.Namespace) -> int:
    from stepscope.capture.bridges.traces import import_traces
    from stepscope.cli.progress import stderr_progress

    result = import_traces(
        args.paths,
        args.logdir,
        args.run,
        progress=stderr_progress(),
        convert_all=_on_executor(args),
    )
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
