"""`stepscope summary RUN -o base.json`: a small JSON baseline for `stepscope diff`, so a CI
job can keep the figures of a good run without keeping its profile."""

from __future__ import annotations

import argparse
import json
import os
import sys

from stepscope import tmpfiles
from stepscope.errors import StepscopeError
from stepscope.stats.steps.sources import SOURCES
from stepscope.words import counted


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "summary",
        help="save a run's comparable figures as a small JSON baseline for `stepscope diff`",
    )
    parser.add_argument("run", metavar="RUN", help="run directory or profile file")
    parser.add_argument("--host", help="one host (default: the only host, or all hosts)")
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the summary here (default: stdout)"
    )
    parser.add_argument(
        "--step-source", choices=("auto", *SOURCES), default="auto", help="where steps come from"
    )
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.compare_inputs import load_summary
    from stepscope.stats.compare.summary_file import summary_file
    from stepscope.tools import output

    summary = load_summary(args.run, args.host, args.step_source, not args.no_cache)
    data = output.to_json(summary_file(summary))
    text = json.dumps(data, separators=(",", ":")) + "\n"
    if not args.output or args.output == "-":
        sys.stdout.write(text)
        return 0
    if os.path.isdir(args.output):
        raise StepscopeError(
            f"-o {args.output}: is a directory; give a file name such as base.json"
        )
    try:  # never a half-written baseline; a symlink followed, a FIFO streamed into
        tmpfiles.write_bytes(args.output, text.encode("utf-8"), user_output=True)
    except OSError as exc:
        raise StepscopeError(f"-o {args.output}: cannot write ({exc.strerror})") from None
    warm = ","
    if summary.warmup_steps:  # what `stepscope diff` will compare
        from stepscope.cli.diff_render import warmup_text

        warm = (
            f"; warm-up: {warmup_text(summary)}, diff compares the "
            f"{summary.n_steps - summary.warmup_steps} steps after it;"
        )
    print(
        f"wrote {args.output}: {counted(summary.n_steps)} of {summary.run} ({summary.host}){warm} "
        f"{len(text) // 1024 + 1} KB",
        file=sys.stderr,
    )
    return 0
