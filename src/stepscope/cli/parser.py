"""The command line's parser (`build_parser`), imported once the command is known not to be
answered from the result cache (`stepscope.cli.cached_tool`): argparse and its regular
expressions are a third of a cached answer's start."""

from __future__ import annotations

import argparse
import importlib
import sys

from stepscope import limits
from stepscope._version import __version__
from stepscope.cli.command_names import COMMANDS
from stepscope.cli.output import Parser


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: with that command's parser alone (the command a
    user typed: the others' modules are not imported, 10-40 ms of each command's start)."""
    parser = Parser(
        prog="stepscope",
        description="Profile ML training steps and see where the time goes.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show the version and the state of each C accelerator, and exit",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or name.rstrip("_") == only:
            importlib.import_module(f"stepscope.cli.commands.{name}").register(subparsers)
    for sub in subparsers.choices.values():
        sub.add_argument(
            "--max-profile-bytes",
            type=_size,
            default=None,
            metavar="SIZE",
            help="most memory one profile may take (inflated data, decoded columns, parsed "
            "JSON), e.g. 2G; default: a quarter of physical memory "
            f"(${limits.ENV_VAR})",
        )
        sub.add_argument(
            "--quiet",
            "-q",
            action="store_true",
            help="no progress or information lines on stderr (warnings and errors only; "
            "the same as logging.getLogger('stepscope').setLevel(logging.WARNING))",
        )
    return parser


class _Version(argparse.Action):
    """``--version``: the release, then each C accelerator and whether it is used."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from stepscope import accelerators

        lines = [f"stepscope {__version__}", "C accelerators:", *accelerators.report()]
        sys.stdout.write("\n".join(lines) + "\n")  # on stdout, as argparse's version action
        parser.exit()


def _size(text: str) -> int:
    try:
        return limits.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
