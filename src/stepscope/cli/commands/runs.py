"""`stepscope runs LOGDIR`: the runs under a log directory, with hosts, sizes and formats."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stepscope.cli.output import human_bytes, print_json, table
from stepscope.errors import empty_file
from stepscope.words import counted

if TYPE_CHECKING:
    from stepscope.model import Run


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("runs", help="list runs and hosts under a log directory")
    parser.add_argument("logdir", help="log directory (local path or fsspec URL)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def _with_data(runs: list[Run]) -> tuple[list[Run], list[str]]:
    """The runs with their host files of no bytes left out (a capture that failed: every
    command reading one stops at it), and a line for each such file. A run of only such
    files is no run: `report RUN` would answer "file is empty"."""
    from stepscope.model import Run, fs

    kept, empty = [], []
    for r in runs:
        # a remote file's size may be unknown (0): only a local one is known empty
        none = [h for h in r.hosts if h.size_bytes <= 0 and not fs.is_url(h.path)]
        empty += [str(empty_file(h.path)) for h in none]
        hosts = tuple(h for h in r.hosts if h not in none)
        if hosts:
            kept.append(Run(r.name, r.path, hosts, r.recorder_markers) if none else r)
    return kept, empty


def run(args: argparse.Namespace) -> int:
    from stepscope.model import discover_runs

    found = discover_runs(args.logdir)
    runs, empty = _with_data(found)
    if not runs and len(found) == 1 and found[0].path == found[0].hosts[0].path:
        raise empty_file(found[0].path)  # the file named is the one (`single_file_run`)
    for line in empty:  # beside the list (on stderr, so the JSON stays one document)
        print(f"left out: {line}", file=sys.stderr)
    if args.json:
        print_json(
            [
                {
                    "run": r.name,
                    "path": r.path,
                    "size_bytes": r.size_bytes,
                    "hosts": [
                        {
                            "host": h.host,
                            "path": h.path,
                            "format": h.format,
                            "size_bytes": h.size_bytes,
                        }
                        for h in r.hosts
                    ],
                }
                for r in runs
            ]
        )
        return 0
    if not runs:
        print(f"no runs found under {args.logdir}")
        return 0
    rows = [
        [
            r.name,
            ", ".join(r.host_names),
            human_bytes(r.size_bytes),
            ", ".join(sorted({h.format for h in r.hosts})),
        ]
        for r in runs
    ]
    print(table(rows, ["run", "hosts", "size", "source"]))
    print(f"\n{counted(len(runs), 'run')}")
    return 0
