"""`stepscope serve LOGDIR`: the web UI for the runs under a log directory."""

from __future__ import annotations

import argparse
import os

from stepscope.cli.hosts import add_executor_arguments, executor_from
from stepscope.cli.output import port_number


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="web UI for the runs under a log directory",
        description="Serve the web UI (overview, input pipeline, op stats, ...) for LOGDIR. "
        "Listens on 127.0.0.1 unless --host says otherwise; new runs appear without "
        "a restart.",
    )
    parser.add_argument("logdir", help="log directory (local path or fsspec URL)")
    parser.add_argument(
        "--port", type=port_number, default=6006, help="port (default 6006; 0 = any free port)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (default 127.0.0.1; 0.0.0.0 exposes the "
        "profiles to the network)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host header is NAME (a reverse proxy's public name; "
        "repeatable; '*' for any). IP addresses, localhost and the --host name always work",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("STEPSCOPE_TOKEN") or None,
        help="the token browsers and API clients must present (default: a new random one, "
        "printed in the URL; $STEPSCOPE_TOKEN). Needed to start captures, and for every "
        "request when --host is not a loopback address",
    )
    parser.add_argument("--open", action="store_true", help="open the UI in a web browser")
    parser.add_argument(
        "--compress-local",
        action="store_true",
        help="gzip large answers to this machine's clients too (by default a page on this "
        "machine gets them uncompressed, which is faster there); for a browser that reaches "
        "the server through an SSH tunnel or a forwarded port, whose bytes cross a network",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="convert profiles again instead of reading the on-disk cache",
    )
    add_executor_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: the web stack is only needed by this command.
    from stepscope.serve.app import serve

    serve(
        args.logdir,
        host=args.host,
        port=args.port,
        open_browser=args.open,
        use_cache=not args.no_cache,
        executor=executor_from(args),
        allow_hosts=args.allow_host,
        token=args.token,
        compress_local=args.compress_local,
        say=lambda line: print(line, flush=True),  # the address goes to stdout, as always
    )
    return 0
