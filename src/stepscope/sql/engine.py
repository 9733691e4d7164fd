"""The SQL engine: DuckDB locked down to read the registered tables and nothing else.

A query may read the tables `stepscope.sql.tables` registers (Arrow tables over the profile's
columns) and compute on them; it may not touch a file or the network, load an extension,
change a setting, or outlast its limits (decision 161):

- one statement, a ``SELECT`` (``WITH``, ``FROM x SELECT``, ``DESCRIBE``, ``SUMMARIZE``,
  ``SHOW`` are SELECTs to DuckDB) or an ``EXPLAIN``: ``COPY``, ``ATTACH``, ``INSTALL``,
  ``LOAD``, ``SET``, ``PRAGMA``, ``CALL``, DDL and DML are refused before they run;
- ``enable_external_access=false`` (no file, URL or secret: ``read_csv('/etc/passwd')`` fails
  inside DuckDB even when it hides in a SELECT), no extension auto-install or auto-load, no
  unsigned or community extensions, no spilling to a temporary directory, then
  ``lock_configuration`` so no statement can undo any of it;
- a memory limit (DuckDB's buffer manager: a query that needs more fails with a message) and
  a timeout (a timer thread calls ``interrupt``; the query ends with a message).

Errors come back as `SqlError` (a `StepscopeError`: one line on the CLI, never a traceback)
with DuckDB's message and, where DuckDB gives one, the line and column of the error.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stepscope.errors import StepscopeError
from stepscope.records import record

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

EXTRA = "sql"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MEMORY_BYTES = 2 << 30
DEFAULT_THREADS = 2
# Statement types a query may be: DESCRIBE, SHOW, SUMMARIZE, WITH and FROM-first are SELECTs.
_ALLOWED = ("SELECT", "EXPLAIN")
_CARET = re.compile(r"^(LINE (\d+): )(.*)\n( *)\^", re.MULTILINE)


class SqlError(StepscopeError):
    """A query that could not run: bad SQL, a refused statement, a limit hit.

    ``kind``: "syntax", "refused", "timeout", "memory" or "error"; ``line`` / ``column``
    (1-based) where DuckDB located the problem, else None."""

    def __init__(
        self, message: str, kind: str = "error", line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.line = line
        self.column = column

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"error": str(self), "kind": self.kind}
        if self.line is not None:
            out["line"], out["column"] = self.line, self.column
        return out


@record
class Limits:
    """What one query may use: ``timeout_s`` of wall time, ``memory_bytes`` of DuckDB's
    buffer memory, ``threads`` DuckDB threads."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    threads: int = DEFAULT_THREADS


def import_duckdb() -> Any:
    """duckdb and pyarrow, or a `StepscopeError` naming the extra that installs them."""
    try:
        import duckdb
        import pyarrow  # noqa: F401  (the tables are Arrow)
    except ImportError as exc:
        raise StepscopeError(
            f"SQL queries need the optional packages duckdb and pyarrow ({exc.name} is "
            f"missing): pip install 'stepscope[{EXTRA}]'"
        ) from None
    return duckdb


def connect(limits: Limits, tables: Mapping[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with ``tables`` registered (scanned in place, not copied) and every
    door closed (see the module docstring)."""
    duckdb = import_duckdb()
    threads = max(1, min(limits.threads, os.cpu_count() or 1))
    config = {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        "memory_limit": f"{max(limits.memory_bytes >> 20, 16)}MiB",
        "max_memory": f"{max(limits.memory_bytes >> 20, 16)}MiB",
        "temp_directory": "",
        "threads": threads,
    }
    con = duckdb.connect(":memory:", config=config)
    for name, table in tables.items():
        con.register(name, table)
    con.execute("SET lock_configuration = true")
    return con


def check_statement(sql: str) -> str:
    """``sql`` as one allowed statement (see the module docstring), or `SqlError`."""
    duckdb = import_duckdb()
    if not sql.strip():
        raise SqlError("the query is empty: give one SELECT statement", "syntax")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise _error(exc, sql) from None
    if not statements:
        raise SqlError("the query holds no statement (only comments?): give one SELECT", "syntax")
    if len(statements) > 1:
        raise SqlError(
            f"the query holds {len(statements)} statements: give one SELECT (no ';' between "
            "statements)",
            "refused",
        )
    kind = statements[0].type.name
    if kind not in _ALLOWED:
        raise SqlError(
            f"{kind} statements are not allowed: queries are read-only, one SELECT (or "
            "EXPLAIN) over stepscope's tables; no files, settings, extensions or changes",
            "refused",
        )
    return sql


@contextmanager
def _deadline(con: duckdb.DuckDBPyConnection, timeout_s: float) -> Iterator[threading.Event]:
    """Interrupts ``con`` when ``timeout_s`` passes before the block ends; the event says
    whether it fired."""
    fired = threading.Event()
    done = threading.Event()

    def watch() -> None:
        if not done.wait(timeout_s):
            fired.set()
            con.interrupt()

    timer = threading.Thread(target=watch, name="stepscope-sql-timeout", daemon=True)
    timer.start()
    try:
        yield fired
    finally:
        done.set()
        timer.join()


def execute(
    con: duckdb.DuckDBPyConnection, sql: str, limits: Limits, max_rows: int | None = None
) -> tuple[pa.Table, bool]:
    """(the result, whether rows beyond ``max_rows`` were left out). The timeout covers the
    query and the reading of its rows."""
    duckdb = import_duckdb()
    import pyarrow as pa

    check_statement(sql)
    with _deadline(con, limits.timeout_s) as fired:
        try:
            relation = con.sql(sql)
            if relation is None:  # not a query after all (check_statement lets none through)
                raise SqlError("the statement returned no rows: give one SELECT", "refused")
            if max_rows is None:
                return relation.to_arrow_table(), False
            reader = relation.to_arrow_reader(min(max(max_rows + 1, 1), 1 << 16))
            batches, rows = [], 0
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                if rows > max_rows:
                    break
            table = pa.Table.from_batches(batches, schema=reader.schema)
        except duckdb.Error as exc:
            if fired.is_set() or isinstance(exc, duckdb.InterruptException):
                raise SqlError(
                    f"the query ran past its time limit of {limits.timeout_s:g} s and was "
                    "stopped (--timeout raises it; a LIMIT or a WHERE makes it smaller)",
                    "timeout",
                ) from None
            raise _error(exc, sql, limits) from None
    truncated = table.num_rows > max_rows
    return (table.slice(0, max_rows) if truncated else table), truncated


def _located(text: str, sql: str) -> tuple[str, int | None, int | None]:
    """DuckDB's message without its echo of the query, and the 1-based line and column its
    caret points at (None when it gives none). A long line is echoed in part, behind "...":
    the column is found by locating the echoed part in the query."""
    found = _CARET.search(text)
    if not found:
        return (text, *_named_at(text, sql))
    line = int(found.group(2))
    echoed = found.group(3)
    column: int | None = len(found.group(4)) - len(found.group(1)) + 1
    if echoed.startswith("...") and column is not None:
        lines = sql.splitlines() or [""]
        part = echoed[3:].removesuffix("...")
        at = lines[line - 1].find(part) if 1 <= line <= len(lines) else -1
        column = column - 3 + at if at >= 0 else None
    return text[: found.start()].rstrip(), line, column


# What DuckDB's binder names without saying where (views over Arrow tables give no caret).
_NAMED = re.compile(
    r'column "([^"]+)" not found|with name "?([^"\s!]+)"? does not exist|column "([^"]+)"'
)


def _named_at(text: str, sql: str) -> tuple[int | None, int | None]:
    """The line and column of the first word of ``sql`` that the message names."""
    found = _NAMED.search(text)
    if not found:
        return None, None
    name = next(g for g in found.groups() if g)
    at = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", sql, re.IGNORECASE)
    if at is None:
        return None, None
    before = sql[: at.start()]
    return before.count("\n") + 1, at.start() - (before.rfind("\n") + 1) + 1


def _error(exc: Exception, sql: str, limits: Limits | None = None) -> SqlError:
    """DuckDB's error as a `SqlError`: its message on one line, and where it is."""
    import duckdb

    text, line, column = _located(str(exc).strip(), sql)
    head = " ".join(text.split())
    if line is not None:
        head += f" (line {line}" + (f", column {column})" if column is not None else ")")
    if isinstance(exc, duckdb.OutOfMemoryException):
        head = text.splitlines()[0]  # not DuckDB's advice: its settings are locked here
        limit = f" of {limits.memory_bytes >> 20} MiB" if limits else ""
        return SqlError(
            f"the query needs more than its memory limit{limit} (--memory-limit raises it; "
            f"aggregate, filter or LIMIT to need less): {head}",
            "memory",
        )
    if isinstance(exc, duckdb.ParserException):
        return SqlError(f"SQL syntax error: {head}", "syntax", line, column)
    if isinstance(exc, duckdb.PermissionException):
        return SqlError(
            "not allowed: queries read stepscope's tables only, no files, network or "
            f"extensions ({head})",
            "refused",
            line,
            column,
        )
    return SqlError(head, "error", line, column)
