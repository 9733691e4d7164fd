"""Helpers shared by commands: JSON output, human-readable sizes and durations, and text fitted
to the terminal's width."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from typing import Any


def json_text(data: Any) -> str:
    """What `print_json` prints."""
    return json.dumps(data, indent=2, default=str) + "\n"


def print_json(data: Any) -> None:
    sys.stdout.write(json_text(data))


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def human_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table (numbers right-aligned)."""
    widths = (
        [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
        if rows
        else [len(h) for h in header]
    )

    def fmt(row: list[str]) -> str:
        cells = []
        for value, width in zip(row, widths, strict=True):
            text = str(value)
            numeric = (
                text.replace(".", "", 1)
                .replace("%", "")
                .replace(",", "")
                .strip()
                .lstrip("-+")
                .isdigit()
            )
            cells.append(text.rjust(width) if numeric else text.ljust(width))
        return "  ".join(cells).rstrip()

    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)])


class Parser(argparse.ArgumentParser):
    """The CLI's parser: its epilog may be computed only when help is shown (``lazy_epilog``),
    so building every sub-command for ``stepscope --help`` imports nothing heavy."""

    lazy_epilog: Callable[[], str] | None = None

    def format_help(self) -> str:
        if self.lazy_epilog is not None:
            self.epilog, self.lazy_epilog = self.lazy_epilog(), None
        return super().format_help()


def terminal_width() -> int:
    """Columns to fill: $COLUMNS, else the terminal's width, else 80 (a pipe or a file)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return max(40, int(env))
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((80, 24)).columns)
    return 80


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """``text`` wrapped to ``width`` columns (long words are broken, never run over)."""
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=rest or " " * len(first)
    ) or [first.rstrip()]


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535. `stepscope serve --port -5`
    printed a Python traceback ("OverflowError: bind(): port must be 0-65535")."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give 0 (any free port) to 65535")
    return value


def count(text: str) -> int:
    """An argparse type: a number of rows to show, 1 or more (`--top -3` left out the last
    three rows, as a Python slice does)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: give 1 or more")
    return value
