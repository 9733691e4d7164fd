"""The SQL tables agree with the tools and `stepscope info`, to the nanosecond."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from stepscope.cli.commands.info import summarize
from stepscope.sql import Database
from stepscope.sql.tables import TABLES
from tests.support.sql import KINETO, rows


def test_event_count_is_infos(big_ctl: Database) -> None:
    (count,) = rows(big_ctl, "select count(*) from events")[0]
    profile = big_ctl.analysis.profile()
    assert count == summarize(profile, 0)["events"] == 265_916


def test_steps_are_the_overviews_to_the_ns(big_ctl: Database) -> None:
    from stepscope.stats.events import CATEGORY_NAMES

    overview = big_ctl.analysis.tool("overview_page")
    table = big_ctl.query("select * from steps order by start_ns").table.to_pylist()
    assert len(table) == len(overview.steps) == 138
    for row, step in zip(table, overview.steps, strict=True):
        assert (row["step_num"], row["step"]) == (step.step, step.name)
        assert (row["start_ns"], row["dur_ns"]) == (step.start_ns, step.duration_ns)
        assert {c: row[f"{c}_ns"] for c in CATEGORY_NAMES} == step.breakdown_ns
        assert sum(row[f"{c}_ns"] for c in CATEGORY_NAMES) == row["dur_ns"]


def test_ops_are_op_stats_rows(ctl: Database) -> None:
    data = ctl.analysis.json("op_stats")
    expected = sorted(
        (r["side"], r["type"], r["name"], r["occurrences"], round(r["self_time_us"] * 1000))
        for r in data["rows"]
    )
    got = sorted(rows(ctl, "select side, type, name, occurrences, self_ns from ops"))
    assert got == expected


def test_kernel_sums_are_kernel_stats_rows(nccl: Database) -> None:
    data = nccl.analysis.json("kernel_stats")
    expected = {
        (r["kernel_name"], r["op_name"]): (r["occurrences"], round(r["total_duration_us"] * 1000))
        for r in data["rows"]
    }
    got = {
        (k, o): (n, total)
        for k, o, n, total in rows(
            nccl, "select kernel_name, op_name, count(*), sum(dur_ns) from kernels group by 1, 2"
        )
    }
    assert got == expected


def test_kernels_are_the_traces_kernels(nccl: Database) -> None:
    """Counted from the JSON itself: every event of category kernel, by name."""
    with gzip.open(KINETO / "a100_nccl_rank0.json.gz", "rt") as f:
        trace = json.load(f)
    expected = Counter(
        e["name"] for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"
    )
    got = dict(rows(nccl, "select kernel_name, count(*) from kernels group by 1"))
    assert got == dict(expected)


def test_collectives_are_the_pod_viewers_calls(nccl: Database) -> None:
    from stepscope.tools import _analysis

    calls = _analysis.collective_calls(nccl.context(nccl.hosts[0]), nccl.hosts[0])
    got = rows(nccl, "select count(*), sum(dur_ns), min(layer) from collectives")[0]
    assert calls.n_calls > 0
    assert got == (calls.n_calls, int((calls.exit_ns - calls.arrive_ns).sum()), calls.layer)


def test_memory_rows_are_the_allocator_events(big_ctl: Database) -> None:
    data = big_ctl.analysis.json("memory_profile")
    snapshots = {m["memory_id"]: m["snapshot_count"] for m in data["memories"]}
    got = dict(rows(big_ctl, "select allocator, count(*) from memory group by 1"))
    assert got == snapshots


def test_stats_are_each_events_stats(ctl: Database) -> None:
    profile = ctl.analysis.profile()
    for event in (0, 1, 100, profile.n_events - 1):
        expected = profile.event_stats(event)
        got = rows(
            ctl,
            f"select name, value, source from stats where event_id = {event} order by source",
        )
        # metadata first, the event's own stats override (Profile.event_stats)
        merged = {name: value for name, value, _ in got}
        assert merged == {k: str(v) for k, v in expected.items()}


def test_every_table_has_its_documented_columns(kineto_run: Database) -> None:
    for spec in TABLES.values():
        table = kineto_run.table(spec.name)
        assert table.column_names == list(spec.columns()), spec.name


def test_two_hosts_and_kineto_answer_the_same_sql(
    two_hosts: Database, kineto_run: Database
) -> None:
    sql = (
        "select h.host, h.events, e.n, coalesce(s.n, 0) as steps from hosts h "
        "join (select host, count(*) as n from events group by host) e using (host) "
        "left join (select host, count(*) as n from steps group by host) s using (host) "
        "order by h.host"
    )
    xspace = rows(two_hosts, sql)
    assert [r[0] for r in xspace] == ["worker0", "worker1"]
    assert xspace[0][1:] == xspace[1][1:] and xspace[0][1] == xspace[0][2] > 0
    kineto = rows(kineto_run, sql)
    assert [r[0] for r in kineto] == ["a100_nccl_rank0", "cpu_only_gloo_rank34"]
    assert all(r[1] == r[2] > 0 for r in kineto)


def test_one_host_of_many(kineto_run: Database) -> None:
    with Database(kineto_run.analysis, "cpu_only_gloo_rank34") as db:
        assert rows(db, "select distinct host from events") == [("cpu_only_gloo_rank34",)]


def test_costly_columns_are_built_when_named(ctl: Database) -> None:
    fresh = Database(ctl.analysis)
    fresh.query("select count(*) from events")
    assert "self_time_ns" not in fresh.table("events", frozenset()).column_names
    (total,) = rows(fresh, "select sum(self_time_ns) from events")[0]
    assert total > 0
    assert "self_time_ns" in fresh.table("events", frozenset()).column_names
    assert len(fresh.query("select * from events limit 1").table.column_names) == len(
        TABLES["events"].columns()
    )


def test_python_api_returns_arrow_and_pandas(ctl: Database) -> None:
    import pyarrow as pa

    import stepscope

    table = stepscope.query(ctl.analysis, "select host, count(*) as n from events group by 1")
    assert isinstance(table, pa.Table) and table.column_names == ["host", "n"]
    pytest.importorskip("pandas")
    frame = ctl.df("select step_num, dur_ns from steps order by step_num")
    assert list(frame.columns) == ["step_num", "dur_ns"] and len(frame) == 4
