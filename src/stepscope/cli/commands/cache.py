"""`stepscope cache`: where the store of converted profiles, indexes and cached answers is,
how large it is per kind, its size cap, and ``--clear`` to empty it."""

from __future__ import annotations

import argparse

from stepscope.cli.output import print_json, table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="show the cache of converted profiles and answers (location, size, cap); --clear",
    )
    parser.add_argument(
        "--clear", action="store_true", help="remove every cache entry (profiles stay intact)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.errors import StepscopeError
    from stepscope.store import budget, location

    root = location.root()
    if args.clear:
        removed = budget.clear(root)
        if args.json:
            print_json({"path": str(root), "removed": removed.count, "bytes": removed.size_bytes})
        else:
            size = budget.binary_size(removed.size_bytes)
            print(f"removed {removed.count} entries ({size}) from {root}")
        return 0
    found = budget.scan(root)
    total = sum(e.size_bytes for e in found)
    try:
        cap = budget.max_bytes(root, total)
    except ValueError as exc:
        raise StepscopeError(str(exc)) from None
    kinds = {kind: [e.size_bytes for e in found if e.kind == kind] for kind in budget.KINDS}
    if args.json:
        print_json(
            {
                "path": str(root),
                "max_bytes": cap,
                "entries": len(found),
                "bytes": total,
                "kinds": {k: {"entries": len(v), "bytes": sum(v)} for k, v in kinds.items()},
            }
        )
        return 0
    source = (
        f"${budget.ENV_VAR}"
        if budget.configured_max_bytes() is not None
        else f"10 GiB or a quarter of the disk space it can use; set ${budget.ENV_VAR}"
    )
    print(f"cache: {root}")
    print(f"cap:   {'unbounded' if cap == 0 else budget.binary_size(cap)} ({source})")
    rows = [[k, str(len(v)), budget.binary_size(sum(v))] for k, v in kinds.items()]
    rows.append(["total", str(len(found)), budget.binary_size(total)])
    print(table(rows, ["kind", "entries", "size"]))
    return 0
