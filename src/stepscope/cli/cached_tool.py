"""`stepscope tool` answered from `stepscope.result_cache` before anything heavy is imported.

`main` calls `answer` first for ``stepscope tool ...``: when the same command was answered
before for the run as it is now, its output is printed and nothing else runs (no NumPy, no
tools, no sub-command parsers). Anything unusual (help, an unknown flag, ``--no-cache``, a
URL) falls through to the full command, which gives the real errors and writes the entry.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from stepscope import result_cache

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 15 ms
if TYPE_CHECKING:
    from typing import NoReturn


def command_of(args: argparse.Namespace) -> tuple[str, ...]:
    """What the answer depends on besides the files: the same for both ways of parsing."""
    fmt = "csv" if args.csv else "json"
    return ("tool", args.tool, args.host or "", fmt, *args.option)


class _Quiet(argparse.ArgumentParser):
    """Says nothing on a bad command line: the full parser will say it."""

    def error(self, message: str) -> NoReturn:
        raise argparse.ArgumentError(None, message)


def _parse(argv: Sequence[str]) -> argparse.Namespace | None:
    parser = _Quiet(add_help=False, exit_on_error=False)
    parser.add_argument("run")
    parser.add_argument("tool")
    parser.add_argument("--host")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--csv", action="store_true")
    parser.add_argument("--option", "-o", action="append", default=[])
    parser.add_argument("--no-cache", action="store_true")
    # Where the work would run and the memory bound change how an answer is computed, not
    # the answer.
    parser.add_argument("--workers")
    parser.add_argument("--dask")
    parser.add_argument("--dask-scheduler-file")
    parser.add_argument("--dask-timeout")
    parser.add_argument("--max-profile-bytes")
    parser.add_argument("--quiet", "-q", action="store_true")  # a kept answer has no progress
    try:
        args, unknown = parser.parse_known_args(list(argv))
    except (argparse.ArgumentError, SystemExit):
        return None
    if unknown or args.no_cache or (args.json and args.csv) or args.tool.startswith("-"):
        return None
    return args


def answer(argv: Sequence[str]) -> bool:
    """Prints the kept answer of ``stepscope tool <argv>`` and returns True, or returns False
    (nothing printed) when there is none."""
    args = _parse(argv)
    if args is None:
        return False
    key = key_of(args)
    data = result_cache.read(key) if key else None
    if data is None:
        return False
    sys.stdout.write(data.decode("utf-8"))  # as the full command writes it (same encoding)
    return True


def key_of(args: argparse.Namespace) -> str | None:
    """The result-cache key of the full command's ``args`` (None: not kept)."""
    return result_cache.result_key(args.run, command_of(args))


def keep(key: str, text: str) -> None:
    """Keeps ``text``, the full output of a command that exited 0, under ``key``."""
    result_cache.write(key, text.encode("utf-8"))
