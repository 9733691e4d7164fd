"""The tables a query can read: each declared once, with its meaning and its columns.

A table is built host by host (the hosts of the `Database`), each host's part tagged with a
``host`` column, and the parts joined without copying (a chunked Arrow table). A host that
cannot be read or analyzed is left out of every table and listed by `Database.failed`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from stepscope.errors import StepscopeError
from stepscope.records import record
from stepscope.sql import analyses, arrow, events, stat_values, steps

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.tools.analysis import Analysis
    from stepscope.tools.context import ToolContext


class Database(Protocol):
    """What the tables read of `stepscope.sql.database.Database` (which imports this module:
    a protocol here keeps the two from importing each other, even for type checking)."""

    analysis: Analysis
    hosts: list[str]

    @property
    def failed(self) -> dict[str, str]: ...

    def readable_hosts(self) -> list[str]: ...

    def context(self, host: str) -> ToolContext: ...

    def table(self, name: str, columns: frozenset[str] | None = None) -> pa.Table: ...


_RANK = re.compile(r"(?:^|[._-])rank(\d+)$")


@record
class TableSpec:
    """One table: what a row is, its columns (name -> meaning), and how one host's part of it
    is built (None: the table is built for the whole run at once)."""

    name: str
    row: str
    columns: Callable[[], dict[str, str]]
    per_host: Callable[[Database, str, frozenset[str] | None], pa.Table] | None
    whole: Callable[[Database], pa.Table] | None = None


def _events(db: Database, host: str, columns: frozenset[str] | None) -> pa.Table:
    from stepscope.tools import _analysis

    ctx = db.context(host)
    profile = ctx.store.profile(ctx.run, host)
    return events.events_table(host, profile, lambda: _analysis.step_db(ctx, host), columns)


def _stats(db: Database, host: str, _columns: frozenset[str] | None) -> pa.Table:
    ctx = db.context(host)
    return stat_values.stats_table(host, ctx.store.profile(ctx.run, host))


def _steps(db: Database, host: str, _columns: frozenset[str] | None) -> pa.Table:
    from stepscope.tools import _analysis

    return steps.steps_table(host, _analysis.step_db(db.context(host), host))


def _ops(db: Database, host: str, _columns: frozenset[str] | None) -> pa.Table:
    from stepscope.tools import _analysis

    return analyses.ops_table(host, _analysis.op_metrics(db.context(host), host))


def _kernels(db: Database, host: str, _columns: frozenset[str] | None) -> pa.Table:
    from stepscope.tools import _analysis

    ctx = db.context(host)
    profile = ctx.store.profile(ctx.run, host)
    return analyses.kernels_table(host, profile, _analysis.step_db(ctx, host))


def _collectives(db: Database, host: str, _columns: frozenset[str] | None) -> pa.Table:
    from stepscope.tools import _analysis

    ctx = db.context(host)
    return analyses.collectives_table(
        host, _analysis.collective_calls(ctx, host), _analysis.step_db(ctx, host)
    )


def _memory(db: Database, host: str, _columns: frozenset[str] | None) -> pa.Table:
    from stepscope.tools import _analysis

    ctx = db.context(host)
    profile = ctx.store.profile(ctx.run, host)
    return analyses.memory_table(host, profile, _analysis.step_db(ctx, host))


HOSTS_COLUMNS = {
    "host": "the host (profile file)",
    "path": "its file",
    "format": "`xspace` or `kineto`",
    "size_bytes": "the file's size (bytes)",
    "rank": "the rank its name says (`.rank3`, `_rank3`), else NULL",
    "events": "events in its profile (`stepscope info`'s count)",
    "first_ns": "its first event's start (ns, its profile clock)",
    "last_ns": "its last event's end (ns)",
    "device_planes": "device planes with events",
    "steps": "steps found (`steps` rows)",
    "step_source": "where its steps come from",
    "error": "why the host could not be read (its rows are then in no table), else NULL",
}
RUNS_COLUMNS = {
    "run": "the run's name",
    "path": "its directory (or file)",
    "hosts": "hosts in the run",
    "formats": "the formats of its files",
    "size_bytes": "the files' total size (bytes)",
    "events": "events of the hosts read",
    "failed_hosts": "hosts that could not be read",
}


def _hosts(db: Database) -> pa.Table:

    from stepscope.tools import _analysis

    rows: dict[str, list[object]] = {name: [] for name in HOSTS_COLUMNS}
    run = db.analysis.run
    for name in db.hosts:
        host = run.host(name)
        ctx = db.context(name)
        found = _RANK.search(name)
        profile = None
        error = db.failed.get(name)
        if error is None:
            try:
                profile = ctx.store.profile(run, name)
                step_db = _analysis.step_db(ctx, name)
            except StepscopeError as exc:
                error = str(exc)
                ctx.store.fail(host.path, error)
        first, last = profile.time_span_ns() if profile is not None else (None, None)
        values = {
            "host": name,
            "path": host.path,
            "format": host.format,
            "size_bytes": host.size_bytes,
            "rank": int(found.group(1)) if found else None,
            "events": profile.n_events if profile is not None else None,
            "first_ns": first,
            "last_ns": last,
            "device_planes": (
                sum(1 for p in profile.planes if p.is_device and p.line_count)
                if profile is not None
                else None
            ),
            "steps": step_db.n_steps if profile is not None else None,
            "step_source": step_db.source if profile is not None else None,
            "error": error,
        }
        for key, value in values.items():
            rows[key].append(value)
    texts = ("host", "path", "format", "step_source", "error")
    return arrow.table(
        {k: arrow.utf8(v) if k in texts else _ints(v) for k, v in rows.items()}  # type: ignore[arg-type]
    )


def _ints(values: list[object]) -> pa.Array:
    present = np.array([v is not None for v in values], dtype=bool)
    numbers = np.array([v if v is not None else 0 for v in values], dtype=np.int64)
    return arrow.numbers(numbers, present)


def _runs(db: Database) -> pa.Table:
    hosts = db.table("hosts")
    run = db.analysis.run
    events_count = hosts.column("events").to_numpy(zero_copy_only=False)
    failed = hosts.column("error").is_valid().to_numpy(zero_copy_only=False)
    mine = [run.host(h) for h in db.hosts]
    return arrow.table(
        {
            "run": arrow.utf8([run.name]),
            "path": arrow.utf8([run.path]),
            "hosts": _ints([len(db.hosts)]),
            "formats": arrow.utf8([", ".join(sorted({h.format for h in mine}))]),
            "size_bytes": _ints([sum(h.size_bytes for h in mine)]),
            "events": _ints([int(np.nansum(events_count.astype(float)))]),
            "failed_hosts": _ints([int(failed.sum())]),
        }
    )


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec("events", "one event of one host", lambda: events.COLUMNS, _events),
        TableSpec("stats", "one stat of one event", lambda: stat_values.COLUMNS, _stats),
        TableSpec(
            "steps",
            "one step of one host, with its breakdown",
            steps.columns,
            _steps,
        ),
        TableSpec(
            "ops", "one op (name, type) of one side of one host", lambda: analyses.OPS_COLUMNS, _ops
        ),
        TableSpec(
            "kernels", "one GPU kernel execution", lambda: analyses.KERNELS_COLUMNS, _kernels
        ),
        TableSpec(
            "collectives",
            "one collective call of one rank",
            analyses.collective_columns,
            _collectives,
        ),
        TableSpec("memory", "one allocator event", lambda: analyses.MEMORY_COLUMNS, _memory),
        TableSpec("hosts", "one host of the run", lambda: HOSTS_COLUMNS, None, _hosts),
        TableSpec("runs", "the run", lambda: RUNS_COLUMNS, None, _runs),
    )
}


def build_table(db: Database, name: str, columns: frozenset[str] | None) -> pa.Table:
    """Table ``name`` over the database's hosts (see the module docstring)."""
    import pyarrow as pa

    spec = TABLES[name]
    if spec.whole is not None:
        return spec.whole(db)
    assert spec.per_host is not None
    parts = []
    for host in db.readable_hosts():
        try:
            parts.append(spec.per_host(db, host, columns))
        except StepscopeError as exc:
            db.context(host).store.fail(db.analysis.run.host(host).path, str(exc))
    if not parts:
        failed = "; ".join(f"{h}: {e}" for h, e in db.failed.items())
        raise StepscopeError(
            f"no host of run {db.analysis.run.name!r} could be read for table {name}"
            + (f" ({failed})" if failed else "")
        )
    if len(parts) == 1:
        return parts[0]
    return pa.concat_tables(parts, promote_options="permissive")


__all__ = ["TABLES", "TableSpec", "arrow", "build_table"]
