"""`stepscope` console entry point.

Sub-commands live in `stepscope.cli.commands`, one module each, listed in `COMMANDS`: a module
defines ``register(subparsers)`` which adds its parser and sets ``func(args) -> int``, and
imports what its command needs when it runs, so ``stepscope --help`` stays fast.
User errors (`StepscopeError`) print one line and exit 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from stepscope import limits
from stepscope._version import __version__
from stepscope.cli.blas import ANALYSIS_COMMANDS, single_threaded_blas
from stepscope.cli.output import Parser
from stepscope.errors import StepscopeError

COMMANDS = (
    "cache",
    "capture",
    "demo",
    "diff",
    "doctor",
    "export",
    "import_",
    "info",
    "mcp",
    "query",
    "report",
    "runs",
    "serve",
    "server",
    "summary",
    "tool",
)
_NAMES = frozenset(name.rstrip("_") for name in COMMANDS)
# Commands that end once their answer is printed: they may tune the process's malloc
# (`stepscope.cli.malloc`, decision 68). Never serve, server, capture or demo (long-lived or
# running the user's code).
ONE_SHOT = frozenset({"diff", "export", "import", "info", "query", "report", "summary", "tool"})


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


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Without ``argv`` (the console script, ``python -m``), the process is
    the command's own: an analysis command asks for one OpenBLAS thread and a one-shot
    command may tune its malloc; with ``argv`` (tests, a script calling it) the caller's
    process is left as it is."""
    own_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if own_process and argv[:1] and argv[0] in ANALYSIS_COMMANDS:
        single_threaded_blas()  # before anything loads numpy
    if argv[:1] == ["tool"]:
        from stepscope.cli.cached_tool import answer

        try:
            if answer(argv[1:]):
                return 0
        except BrokenPipeError:  # `stepscope tool ... | head`
            return 0
    typed = argv[0] if argv and argv[0] in _NAMES else None
    parser = build_parser(typed)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    if own_process and args.command in ONE_SHOT:
        from stepscope.cli.malloc import keep_freed_memory

        keep_freed_memory()
    if getattr(args, "max_profile_bytes", None) is not None:
        limits.configure(args.max_profile_bytes)
    else:
        env = os.environ.get(limits.ENV_VAR)
        if env:
            try:
                limits.parse_size(env)
            except ValueError as exc:
                print(f"stepscope: error: ${limits.ENV_VAR}: {exc}", file=sys.stderr)
                return 2
    from stepscope.cli.progress import quiet

    try:
        with quiet(bool(getattr(args, "quiet", False))):
            return int(func(args) or 0)
    except StepscopeError as exc:
        print(f"stepscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stepscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `stepscope ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
