"""Running one query for `stepscope query` and its shell: the result written as asked, the row
limit stated, the hosts left out reported."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.sql import Database

DEFAULT_MAX_ROWS = 1000  # rows printed; a file (-o) gets every row unless --max-rows says


def answer(db: Database, sql: str, args: argparse.Namespace) -> int:
    """Runs ``sql`` and writes its result as asked; the exit status (3 when hosts were left
    out, as `stepscope tool`)."""
    from stepscope.cli.hosts import report_failed

    to_file = args.output is not None
    if args.format == "parquet" and not to_file and sys.stdout.isatty():
        raise StepscopeError("parquet is binary: write it to a file with -o FILE (or a pipe)")
    max_rows = (
        args.max_rows if args.max_rows is not None else (None if to_file else DEFAULT_MAX_ROWS)
    )
    result = db.query(sql, max_rows=max_rows)
    write(result.table, args.format, args.output)
    if result.truncated:
        print(
            f"stepscope: showing the first {max_rows} rows; more were left out "
            "(--max-rows N shows more; -o FILE writes them all)",
            file=sys.stderr,
        )
    return report_failed(result.failed)


def write(table: pa.Table, fmt: str, output: str | None) -> None:
    from stepscope import tmpfiles
    from stepscope.sql.render import render

    data = render(table, fmt)
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with tmpfiles.output(output, user_output=True) as out:
            out.write(data)
    except OSError as exc:
        raise StepscopeError(f"-o {output}: cannot write ({exc.strerror or exc})") from None
