"""Queries are read-only and bounded: files, network, extensions, settings and changes are
refused; memory and time are limited; each with a clear message, never a traceback."""

from __future__ import annotations

import pytest

from stepscope.sql import Database, Limits, SqlError
from tests.support.sql import rows

SMALL = Limits(timeout_s=30.0, memory_bytes=64 << 20, threads=1)


@pytest.fixture(scope="module")
def bounded(ctl: Database) -> Database:
    return Database(ctl.analysis, limits=SMALL)


@pytest.mark.parametrize(
    "sql",
    [
        "select * from read_csv('/etc/passwd')",
        "select * from read_text('/etc/passwd')",
        "select * from glob('/*')",
        "select * from read_parquet('https://example.com/x.parquet')",
        "select count(*) from events where name in (select column0 from read_csv('/etc/hosts'))",
    ],
)
def test_no_file_or_network_access(bounded: Database, sql: str) -> None:
    with pytest.raises(SqlError) as err:
        bounded.query(sql)
    assert err.value.kind == "refused"
    assert "no files, network or extensions" in str(err.value)


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("copy events to '/tmp/stepscope-redteam.csv'", "COPY"),
        ("copy (select 1) to '/tmp/stepscope-redteam.csv' (format csv)", "COPY"),
        ("install httpfs", "LOAD"),
        ("load httpfs", "LOAD"),
        ("attach '/tmp/stepscope-redteam.duckdb' as x", "ATTACH"),
        ("set enable_external_access = true", "SET"),
        ("pragma enable_profiling", "PRAGMA"),
        ("call duckdb_settings()", "CALL"),
        ("create table t as select 1", "CREATE"),
        ("drop view events", "DROP"),
        ("export database '/tmp/stepscope-redteam'", "EXPORT"),
    ],
)
def test_statements_other_than_select_are_refused(bounded: Database, sql: str, kind: str) -> None:
    with pytest.raises(SqlError) as err:
        bounded.query(sql)
    assert err.value.kind == "refused"
    assert str(err.value).startswith(f"{kind} statements are not allowed")
    assert rows(bounded, "select count(*) from events")[0][0] > 0  # the tables are intact


def test_a_file_named_as_a_table_is_no_table(bounded: Database) -> None:
    with pytest.raises(SqlError, match=r"Table with name /etc/passwd does not exist"):
        bounded.query("select * from '/etc/passwd'")


def test_two_statements_are_refused(bounded: Database) -> None:
    with pytest.raises(SqlError, match="2 statements"):
        bounded.query("select 1; drop view events")


def test_a_cross_join_that_would_exhaust_memory_is_bounded(bounded: Database) -> None:
    with pytest.raises(SqlError) as err:
        bounded.query(
            "select a.event_id, b.event_id from events a, events b "
            "order by a.start_ns * b.dur_ns desc"
        )
    assert err.value.kind == "memory"
    assert "memory limit of 64 MiB" in str(err.value)


def test_a_query_that_would_run_forever_is_stopped(ctl: Database) -> None:
    db = Database(ctl.analysis, limits=Limits(timeout_s=0.5))
    with pytest.raises(SqlError) as err:  # a trillion rows, streamed: hours, in no memory
        db.query("select sum(e.dur_ns * r.range) from events e, range(100000000) r")
    assert err.value.kind == "timeout"
    assert "time limit of 0.5 s" in str(err.value)
    assert rows(db, "select 1") == [(1,)]  # the connection still answers


@pytest.mark.parametrize(
    ("sql", "line", "column"),
    [
        ("select name frm events", 1, 17),  # at "events"
        ("select name\nfrom events\nwhere nope > 1", 3, 7),
    ],
)
def test_bad_sql_says_what_and_where(bounded: Database, sql: str, line: int, column: int) -> None:
    with pytest.raises(SqlError) as err:
        bounded.query(sql)
    assert (err.value.line, err.value.column) == (line, column)
    assert f"(line {line}, column {column})" in str(err.value)
    assert "\n" not in str(err.value)


def test_an_unknown_table_is_named(bounded: Database) -> None:
    with pytest.raises(SqlError, match="kernel_stats"):
        bounded.query("select * from kernel_stats")
