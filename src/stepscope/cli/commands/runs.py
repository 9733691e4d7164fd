"""`stepscope runs LOGDIR`: the runs under a log directory, with hosts, sizes and formats."""

from __future__ import annotations

import argparse

from stepscope.cli.output import human_bytes, print_json, table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("runs", help="list runs and hosts under a log directory")
    parser.add_argument("logdir", help="log directory (local path or fsspec URL)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.model import discover_runs

    runs = discover_runs(args.logdir)
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
    print(f"\n{len(runs)} run(s)")
    return 0
