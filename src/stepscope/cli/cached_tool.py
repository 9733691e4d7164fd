"""`stepscope tool` answered from `stepscope.result_cache` before anything heavy is imported.

`main` calls `answer` first for ``stepscope tool ...``: when the same command was answered
before for the run as it is now, its output is printed and nothing else runs (no NumPy, no
tools, no sub-command parsers). Anything unusual (help, an unknown flag, ``--no-cache``, a
URL) falls through to the full command, which gives the real errors and writes the entry.
"""

from __future__ import annotations

import sys

from stepscope import result_cache

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 15 ms
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


def command_of(args: argparse.Namespace | _Args) -> tuple[str, ...]:
    """What the answer depends on besides the files: the same for both ways of parsing."""
    fmt = "csv" if args.csv else "json"
    return ("tool", args.tool, args.host or "", fmt, *args.option)


class _Args:
    """The parts of a ``stepscope tool`` command line its answer depends on."""

    def __init__(self, run: str, tool: str, host: str | None, csv: bool, option: list[str]):
        self.run, self.tool, self.host, self.csv, self.option = run, tool, host, csv, option


_FLAGS = frozenset({"--json", "--csv", "--quiet", "-q"})  # a kept answer has no progress
# Where the work would run and the memory bound change how an answer is computed, not the
# answer: their values are read and left.
_VALUED = frozenset(
    {
        "--host",
        "--option",
        "-o",
        "--workers",
        "--dask",
        "--dask-scheduler-file",
        "--dask-timeout",
        "--max-profile-bytes",
    }
)


_EXCLUSIVE = ({"--json", "--csv"}, {"--dask", "--dask-scheduler-file"})


def _parse(argv: Sequence[str]) -> _Args | None:
    """The command line in its plain forms (``--name value``, ``--name=value``, flags spelled
    out), without argparse, whose import (with its regular expressions) was a third of a
    kept answer's start; anything else (an abbreviation, ``-oX``, ``--no-cache``, ``--``, a
    bad line) is None, and the full parser then reads the line and says what is wrong."""
    positional: list[str] = []
    flags: set[str] = set()
    host: str | None = None
    options: list[str] = []
    tokens = list(argv)
    k = 0
    while k < len(tokens):
        token = tokens[k]
        k += 1
        if not token.startswith("-"):
            positional.append(token)
            continue
        name, equals, value = token.partition("=")
        if name in _FLAGS and not equals:
            flags.add(name)
            continue
        if name not in _VALUED:
            return None
        if not equals:
            if k == len(tokens) or tokens[k].startswith("-"):
                return None
            value, k = tokens[k], k + 1
        if name == "--host":
            host = value
        elif name in ("--option", "-o"):
            options.append(value)
        else:
            flags.add(name)
    # one of each mutually exclusive pair, as the full parser has it
    if len(positional) != 2 or any(pair <= flags for pair in _EXCLUSIVE):
        return None
    return _Args(positional[0], positional[1], host, "--csv" in flags, options)


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


def key_of(args: argparse.Namespace | _Args) -> str | None:
    """The result-cache key of the full command's ``args`` (None: not kept)."""
    return result_cache.result_key(args.run, command_of(args))


def keep(key: str, text: str) -> None:
    """Keeps ``text``, the full output of a command that exited 0, under ``key``."""
    result_cache.write(key, text.encode("utf-8"))
