"""Every example question of docs/query.md runs, and its answer is checked against the tools or
against the trace read without stepscope (the raw JSON, XProf-independent counts)."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest

from stepscope.sql import Database
from tests.support.fixtures import FIXTURES, REPO

DOC = REPO / "docs" / "query.md"
_EXAMPLE = re.compile(
    r"^### (\d+)\. (.+?)\n\nRun: `([^`]+)`\n\n```sql\n(.*?)```", re.MULTILINE | re.DOTALL
)
# three fixtures, one a 216k-event Kineto trace
pytestmark = [pytest.mark.integration, pytest.mark.untimed]


def examples() -> list[tuple[int, str, str, str]]:
    found = [(int(n), q, run, sql) for n, q, run, sql in _EXAMPLE.findall(DOC.read_text())]
    return found


@cache
def database(run: str) -> Database:
    return Database(FIXTURES / run)


@cache
def raw_kineto(name: str) -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / "kineto" / name, "rt") as f:
        return json.load(f)["traceEvents"]


def _steps_of_overview(db: Database) -> list[Any]:
    return list(db.analysis.tool("overview_page").steps)


def check_1(db: Database, rows: list[dict[str, Any]]) -> None:
    steps = sorted(_steps_of_overview(db), key=lambda s: s.step)[:5]
    assert [r["step_num"] for r in rows] == [s.step for s in steps]
    for row, step in zip(rows, steps, strict=True):
        assert row["step_ms"] == step.duration_ns / 1e6
        assert row["input_ms"] == step.breakdown_ns["input"] / 1e6
        assert row["other_ms"] == step.breakdown_ns["other"] / 1e6


def check_2(db: Database, rows: list[dict[str, Any]]) -> None:
    steps = sorted(_steps_of_overview(db), key=lambda s: -s.duration_ns)[:5]
    assert [r["step_num"] for r in rows] == [s.step for s in steps]
    for row, step in zip(rows, steps, strict=True):
        assert row["input_pct"] == round(100 * step.breakdown_ns["input"] / step.duration_ns, 1)


def check_3(db: Database, rows: list[dict[str, Any]]) -> None:
    # every wait is a GetNext of the input pipeline, inside the step it is counted in
    spans = {s.step: (s.start_ns, s.start_ns + s.duration_ns) for s in _steps_of_overview(db)}
    waits = db.query(
        "select name, step_num, start_ns from events where event_type = 'host_wait_input'"
    ).table.to_pylist()
    assert rows and waits
    for wait in waits:
        assert "GetNext" in wait["name"] or wait["name"].startswith("Iterator::")
        if wait["step_num"] is not None:
            lo, hi = spans[wait["step_num"]]
            assert lo <= wait["start_ns"] < hi
    assert rows[0]["wait_ms"] >= rows[-1]["wait_ms"] > 0


def check_4(db: Database, rows: list[dict[str, Any]]) -> None:
    expected = [r for r in db.analysis.json("op_stats")["rows"] if r["side"] == "host"][:10]
    assert [(r["type"], r["name"]) for r in rows] == [(r["type"], r["name"]) for r in expected]
    assert [round(r["self_ms"] * 1e3, 3) for r in rows] == [
        round(r["self_time_us"], 3) for r in expected
    ]


def check_5(db: Database, rows: list[dict[str, Any]]) -> None:
    profile = db.analysis.profile()
    spans = sorted((s.start_ns, s.start_ns + s.duration_ns) for s in _steps_of_overview(db))
    starts = np.array([a for a, _ in spans])
    ends = np.array([b for _, b in spans])
    k = np.searchsorted(starts, profile.start_ns, side="right") - 1
    inside = (k >= 0) & (profile.start_ns < ends[np.maximum(k, 0)])
    assert sum(r["num_events"] for r in rows) == int(inside.sum())
    assert {r["step"] for r in rows} == {s.name for s in _steps_of_overview(db)}
    assert {r["device"] for r in rows} == {"cpu:0"}


def check_6(db: Database, rows: list[dict[str, Any]]) -> None:
    events = raw_kineto("v100_training_with_memory.json.gz")
    spans = sorted(
        (e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1]))
        for e in events
        if e.get("name", "").startswith("ProfilerStep#")
    )
    times: dict[str, dict[bool, list[float]]] = {}
    for e in events:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        step = next((n for lo, hi, n in spans if lo <= e["ts"] < hi), None)
        if step is not None:
            times.setdefault(e["name"], {True: [], False: []})[step <= 3].append(e["dur"] * 1e3)
    ranked = sorted(
        (
            (np.mean(t[False]) - np.mean(t[True]), name, np.mean(t[True]), np.mean(t[False]))
            for name, t in times.items()
            if t[True] and t[False]
        ),
        reverse=True,
    )[:5]
    assert [r["kernel_name"] for r in rows] == [name for _, name, _, _ in ranked]
    for row, (_, _, before, after) in zip(rows, ranked, strict=True):
        assert row["before_ns"] == pytest.approx(before) and row["after_ns"] == pytest.approx(after)


def check_7(db: Database, rows: list[dict[str, Any]]) -> None:
    from stepscope.tools import _analysis

    host = db.hosts[0]
    calls = _analysis.collective_calls(db.context(host), host)
    step_db = _analysis.step_db(db.context(host), host)
    counted = Counter(int(step_db.step_num[s]) for s in calls.step.tolist() if s >= 0)
    assert {r["step_num"]: r["calls"] for r in rows} == dict(counted)
    assert all(r["collective_ms"] > 0 for r in rows)


def check_8(db: Database, rows: list[dict[str, Any]]) -> None:
    peaks = db.analysis.json("memory_profile")["host_peaks"]
    assert {r["allocator"]: r["peak_bytes"] for r in rows} == {
        p["memory_id"]: p["peak_bytes"] for p in peaks
    }


def check_9(db: Database, rows: list[dict[str, Any]]) -> None:
    profile = db.analysis.profile()
    counts: Counter[str] = Counter()
    for event in range(profile.n_events):
        counts.update(profile.event_stats(event).keys())
    expected = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [(r["name"], r["events"]) for r in rows] == expected


def check_10(db: Database, rows: list[dict[str, Any]]) -> None:
    profile = db.analysis.profile()
    by_thread: Counter[str] = Counter()
    for line in profile.lines:
        if not profile.planes[line.plane].is_device:
            by_thread[line.label] += line.event_count
    assert {r["thread_name"]: r["events"] for r in rows} == dict(by_thread)
    assert sum(r["self_ms"] for r in rows) * 1e6 <= float(profile.dur_ns.sum())


CHECKS: dict[int, Callable[[Database, list[dict[str, Any]]], None]] = {
    n: globals()[f"check_{n}"] for n in range(1, 11)
}


def test_the_doc_has_ten_examples() -> None:
    assert [n for n, *_ in examples()] == list(range(1, 11))


@pytest.mark.parametrize(
    ("number", "question", "run", "sql"), examples(), ids=lambda x: str(x)[:30]
)
def test_example(number: int, question: str, run: str, sql: str) -> None:
    assert (FIXTURES / run).exists(), run
    db = database(run)
    rows = db.query(sql).table.to_pylist()
    assert rows, question
    CHECKS[number](db, rows)


def test_every_column_is_documented() -> None:
    from stepscope.sql.tables import TABLES

    text = DOC.read_text()
    for spec in TABLES.values():
        section = text.split(f"### `{spec.name}`", 1)[1].split("\n### ", 1)[0]
        for column in spec.columns():
            assert f"| `{column}` |" in section, (spec.name, column)
