"""Helpers of the SQL tests (tests/sql): fixture paths and rows as tuples."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.support.fixtures import FIXTURES

if TYPE_CHECKING:
    from stepscope.sql import Database

BIG_CTL = FIXTURES / "tf" / "big_ctl"
KINETO = FIXTURES / "kineto"


def rows(db: Database, sql: str) -> list[tuple]:
    """The query's rows as tuples."""
    table = db.query(sql).table
    return [tuple(r.values()) for r in table.to_pylist()]
