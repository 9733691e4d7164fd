"""The interactive shell of `stepscope query RUN` (no SQL given, on a terminal).

A query ends with ``;`` (it may span lines); ``.tables`` lists the tables, ``.schema TABLE``
its columns and their meaning, ``.help`` these commands, ``.quit`` (or Ctrl-D) leaves. Each
answer is printed as `stepscope query` prints it; an error is printed and the shell goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING

from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    from stepscope.sql import Database

HELP = """\
End a query with ';' (it may span lines). Tables: .tables; columns: .schema TABLE.
Examples:
  select host, step_num, dur_ns / 1e6 as ms from steps order by dur_ns desc limit 5;
  select name, sum(dur_ns) / 1e6 as ms from events group by name order by ms desc limit 10;
.quit or Ctrl-D leaves."""


def _command(db: Database, line: str) -> bool:
    """Runs a dot command; False for .quit."""
    from stepscope.sql.tables import TABLES

    word, _, rest = line.strip().partition(" ")
    if word in (".quit", ".exit", ".q"):
        return False
    if word == ".tables":
        for spec in TABLES.values():
            print(f"  {spec.name:<12} {spec.row}")
    elif word == ".schema":
        found = TABLES.get(rest.strip().lower())
        if found is None:
            print(f"give a table: .schema {{{'|'.join(TABLES)}}}")
        else:
            for name, meaning in found.columns().items():
                print(f"  {name:<26} {meaning}")
    else:
        print(HELP)
    return True


def shell(db: Database, args: argparse.Namespace) -> int:
    from stepscope.cli.query_output import answer

    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())
    print(f"stepscope query on {db.analysis.run.name} ({len(db.hosts)} host(s)); .help for help")
    buffer: list[str] = []
    while True:
        try:
            line = input("... " if buffer else "sql> ")
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            buffer.clear()
            continue
        if not buffer and line.strip().startswith("."):
            if not _command(db, line):
                return 0
            continue
        buffer.append(line)
        if not line.rstrip().endswith(";"):
            continue
        sql = "\n".join(buffer)
        buffer.clear()
        try:
            answer(db, sql, args)
        except StepscopeError as exc:
            print(f"error: {exc}", file=sys.stderr)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
