"""SQL over a run: every host's events, stats, steps, ops, kernels, collectives and memory.

`stepscope.query(run, sql)` answers one query; `Database(run)` keeps the tables for many.
The tables (docs/query.md) are Arrow tables over the columns the tools already have, read by
DuckDB in place; queries are read-only and bounded (`stepscope.sql.engine`). Needs the
optional extra: ``pip install 'stepscope[sql]'`` (duckdb, pyarrow).
"""

from stepscope.sql.database import Database, QueryResult, query, table_names
from stepscope.sql.engine import Limits, SqlError

__all__ = ["Database", "Limits", "QueryResult", "SqlError", "query", "table_names"]
