"""`stepscope` console entry point.

Sub-commands live in `stepscope.cli.commands`, one module each, listed in `COMMANDS`: a module
defines ``register(subparsers)`` which adds its parser and sets ``func(args) -> int``, and
imports what its command needs when it runs, so ``stepscope --help`` stays fast.
User errors (`StepscopeError`) print one line and exit 2; no traceback.
"""

from __future__ import annotations

import gc
import os
import sys

from stepscope.cli.blas import ANALYSIS_COMMANDS, single_threaded_blas
from stepscope.cli.command_names import COMMANDS

TYPE_CHECKING = False  # not typing's: a cached answer never imports typing (2 ms)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

_NAMES = frozenset(name.rstrip("_") for name in COMMANDS)
# Commands that end once their answer is printed: they may tune the process's malloc
# (`stepscope.cli.malloc`, decision 68); `serve` does, bounded (decision 335). Never server,
# capture or demo (long-lived or running the user's code).
ONE_SHOT = frozenset({"diff", "export", "import", "info", "query", "report", "summary", "tool"})
# One-shot commands whose own process ends without the interpreter's teardown once the answer
# is out (`stepscope.cli.quick_exit`, decisions 232 and 256): they print (or write with
# `tmpfiles`, synchronously) and keep nothing that a finalizer would have to flush.
QUICK_EXIT = frozenset({"diff", "info", "report", "summary", "tool"})


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser (`stepscope.cli.parser.build_parser`)."""
    from stepscope.cli import parser

    return parser.build_parser(only)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Without ``argv`` (the console script, ``python -m``), the process is
    the command's own: an analysis command asks for one OpenBLAS thread and a one-shot
    command may tune its malloc; with ``argv`` (tests, a script calling it) the caller's
    process is left as it is."""
    own_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if own_process and argv[:1] and argv[0] in ANALYSIS_COMMANDS:
        single_threaded_blas()  # before anything loads numpy
    quick = own_process and argv[:1] and argv[0] in QUICK_EXIT
    if quick:
        # No cyclic garbage collection in a process that ends with its answer: its
        # collections found a few hundred objects in cycles and cost 3% of a first
        # overview's CPU, nearly all of it while modules were imported (decision 297).
        gc.disable()
    try:
        if argv[:1] == ["tool"]:
            from stepscope.cli.cached_tool import answer

            try:
                answered = answer(argv[1:])
            except BrokenPipeError:  # `stepscope tool ... | head`
                return 0
            if answered:
                status = 0
                if quick:  # no teardown for a kept answer either: a tenth of its CPU
                    _exit_now(status)
                return status
        status = _run(argv, own_process)
        if quick:
            _exit_now(status)
        return status
    finally:
        if quick:  # reached only where the process did not end above (a test replaces exit_now)
            gc.enable()


def _exit_now(status: int) -> None:
    from stepscope.cli.quick_exit import exit_now

    exit_now(status)


def _run(argv: list[str], own_process: bool) -> int:
    from stepscope import limits
    from stepscope.errors import StepscopeError

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
    elif own_process and args.command == "serve":
        # bounded: a server lives long (decision 335)
        from stepscope.cli import malloc

        malloc.keep_freed_memory(
            malloc.SERVE_MMAP_BYTES, malloc.SERVE_TRIM_BYTES, False, malloc.SERVE_ARENAS
        )
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
