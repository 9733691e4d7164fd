"""`Database`: a run's tables, built when a query first reads them, and the queries on them.

    import stepscope.sql

    db = stepscope.sql.Database("logs/plugins/profile/2026_01_01_12_00_00")
    table = db.query("select host, step_num, dur_ns from steps").table   # a pyarrow.Table
    frame = db.df("select name, sum(dur_ns) from events group by name")  # pandas

Tables come from `stepscope.Analysis` (one per database, or the caller's, shared with its
tools): the profiles it opens and the intermediates it caches (step database, op metrics,
kernels, collective calls) are the tools' own, so a table and a tool page agree to the
nanosecond, and a query after a tool (or a tool after a query) computes nothing twice.
A table is built for the hosts asked for (all by default, a ``host`` column telling them
apart) the first time a query names it, then kept: the first query pays for the tables it
reads, the next ones only for the SQL.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stepscope.errors import StepscopeError
from stepscope.records import record
from stepscope.sql import engine
from stepscope.sql.engine import Limits, SqlError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from stepscope.model import Run
    from stepscope.tools.analysis import Analysis
    from stepscope.tools.context import ToolContext

# Words that make a query read every column of the tables it names (a star, a natural join,
# a column pattern, a table description): the costly event columns are then all built.
_ALL_COLUMNS = re.compile(
    r"\*|\b(columns|natural|describe|summarize|show|pivot|unpivot|exclude|replace)\b",
    re.IGNORECASE,
)
_COUNT_STAR = re.compile(r"count\s*\(\s*\*\s*\)", re.IGNORECASE)


@record
class QueryResult:
    """What a query returned: ``table`` (pyarrow), whether rows beyond the limit were left
    out (``truncated``), and the hosts that could not be read (host -> why; left out of every
    table)."""

    table: Any  # pyarrow.Table
    truncated: bool
    failed: dict[str, str]

    def df(self) -> Any:
        """The result as a pandas DataFrame (pandas must be installed)."""
        return to_pandas(self.table)


def to_pandas(table: pa.Table) -> Any:
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise StepscopeError(
            "DataFrames need pandas (pip install pandas); the Arrow table needs nothing more"
        ) from None
    return table.to_pandas()


def table_names() -> tuple[str, ...]:
    from stepscope.sql.tables import TABLES

    return tuple(TABLES)


class Database:
    """A run's SQL tables (docs/query.md lists them) and the queries on them.

    ``run``: a run directory, a log directory holding one run, a profile file, a `Run` or a
    `stepscope.Analysis` (its profiles and intermediates are then shared); ``host``: one host
    (default: every host); ``limits``: each query's time and memory (`engine.Limits`);
    ``step_source``: where steps come from, as the tools' option.
    """

    def __init__(
        self,
        run: str | os.PathLike[str] | Run | Analysis,
        host: str | None = None,
        *,
        limits: Limits | None = None,
        step_source: str = "auto",
        use_cache: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        engine.import_duckdb()  # the missing extra is said before any work
        from stepscope.tools.analysis import Analysis

        self.analysis = (
            run
            if isinstance(run, Analysis)
            else Analysis(run, use_cache=use_cache, progress=progress)
        )
        self.hosts = (
            [self.analysis.run.host(host).host] if host is not None else list(self.analysis.hosts)
        )
        self.limits = limits or Limits()
        self.step_source = step_source
        self._tables: dict[str, tuple[frozenset[str] | None, pa.Table]] = {}
        self._registered: dict[str, pa.Table] = {}
        self._con: duckdb.DuckDBPyConnection | None = None

    def __repr__(self) -> str:
        return f"Database({self.analysis.run.name!r}, hosts={self.hosts!r})"

    # ---- tables ----------------------------------------------------------------------
    def context(self, host: str) -> ToolContext:
        """The host's context for the tools' shared intermediates."""
        return self.analysis.host_context(host, step_source=self.step_source)

    @property
    def failed(self) -> dict[str, str]:
        """Host -> why it could not be read (those hosts are in no table)."""
        failed = self.analysis.failed()
        return {h: failed[h] for h in self.hosts if h in failed}

    def readable_hosts(self) -> list[str]:
        return [h for h in self.hosts if h not in self.failed]

    def table(self, name: str, columns: frozenset[str] | None = None) -> pa.Table:
        """Table ``name`` as a pyarrow table; ``columns``: the costly event columns needed
        (None: all of them; other tables are always whole)."""
        from stepscope.sql.tables import TABLES, build_table

        if name not in TABLES:
            raise StepscopeError(f"no table {name!r}; tables: {', '.join(TABLES)}")
        found = self._tables.get(name)
        if found is not None:
            have, table = found
            if have is None or (columns is not None and columns <= have):
                return table
            if columns is not None:
                columns = columns | have
        table = build_table(self, name, columns)
        self._tables[name] = (columns, table)
        return table

    # ---- queries ---------------------------------------------------------------------
    def needs(self, sql: str) -> dict[str, frozenset[str] | None]:
        """The tables a query may read, each with the costly columns it may need (an
        over-estimate: a table or column name anywhere in the text counts)."""
        from stepscope.sql.events import COSTLY
        from stepscope.sql.tables import TABLES

        words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
        every = bool(_ALL_COLUMNS.search(_COUNT_STAR.sub("", sql)))
        columns = None if every else frozenset(COSTLY & words)
        return {name: columns for name in TABLES if name in words}

    def query(self, sql: str, max_rows: int | None = None) -> QueryResult:
        """Runs one read-only SELECT; ``max_rows``: at most this many rows come back
        (``truncated`` says whether more were left out). `SqlError` for bad SQL, a refused
        statement or a limit hit."""
        engine.check_statement(sql)
        for name, columns in self.needs(sql).items():
            self._register(name, self.table(name, columns))
        con = self._connection()
        table, truncated = engine.execute(con, sql, self.limits, max_rows)
        return QueryResult(table, truncated, self.failed)

    def df(self, sql: str) -> Any:
        """`query`'s result as a pandas DataFrame."""
        return self.query(sql).df()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = engine.connect(self.limits, {})
        return self._con

    def _register(self, name: str, table: pa.Table) -> None:
        if self._registered.get(name) is table:
            return
        self._connection().register(name, table)
        self._registered[name] = table

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
            self._registered.clear()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def query(
    run: str | os.PathLike[str] | Run | Analysis,
    sql: str,
    host: str | None = None,
    *,
    limits: Limits | None = None,
) -> pa.Table:
    """One SELECT over a run's tables (docs/query.md), as a pyarrow Table (``.to_pandas()``
    for pandas; `Database.df` too). For several queries on one run, a `Database` builds each
    table once."""
    with Database(run, host, limits=limits) as db:
        return db.query(sql).table


__all__ = ["Database", "Limits", "QueryResult", "SqlError", "query", "table_names"]
