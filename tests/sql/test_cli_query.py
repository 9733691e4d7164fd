"""`stepscope query`: formats, files, the row limit, errors as one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stepscope.cli.main import main
from tests.support.fixtures import tf_xplane

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

CTL = str(tf_xplane("ctl"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["query", CTL, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_csv_json(capsys: pytest.CaptureFixture[str]) -> None:
    sql = "select step_num, dur_ns from steps order by step_num"
    code, out, _ = run(capsys, sql)
    assert code == 0 and out.splitlines()[0].split() == ["step_num", "dur_ns"]
    assert len(out.splitlines()) == 2 + 4
    code, out, _ = run(capsys, sql, "--format", "csv")
    assert out.splitlines()[0] == '"step_num","dur_ns"' and len(out.splitlines()) == 5
    code, out, _ = run(capsys, sql, "--format", "json")
    data = json.loads(out)
    assert [sorted(r) for r in data] == [["dur_ns", "step_num"]] * 4


def test_parquet_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    target = tmp_path / "out" / "steps.parquet"
    code, out, _ = run(capsys, "select * from events", "--format", "parquet", "-o", str(target))
    assert code == 0 and out == ""
    assert pq.read_table(target).num_rows == 10246  # every row: a file has no row limit


def test_the_row_limit_is_stated(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "select event_id from events", "--max-rows", "3")
    assert code == 0 and len(out.splitlines()) == 2 + 3
    assert "showing the first 3 rows; more were left out" in err


def test_bad_sql_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "select * frm events")
    assert code == 2 and out == ""
    assert err.startswith("stepscope: error: SQL syntax error") and err.count("\n") == 1
    assert "Traceback" not in err


def test_query_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("select count(*) as n from steps"))
    code, out, _ = run(capsys)
    assert code == 0 and out.split()[-1] == "4"


def test_the_missing_extra_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    code, _, err = run(capsys, "select 1")
    assert code == 2
    assert "pip install 'stepscope[sql]'" in err and "duckdb" in err


@pytest.mark.integration  # a fresh interpreter
def test_a_query_imports_no_pandas() -> None:
    """pyarrow imports pandas from pa.array/pa.scalar when it is installed (0.8 s, more than
    the whole cold query): the tables are built from buffers (`stepscope.sql.arrow`)."""
    import subprocess

    code = (
        "import sys, stepscope\n"
        f"t = stepscope.query({CTL!r}, 'select * from events e join stats s using (host, "
        "event_id) join steps using (host, step_num) limit 5')\n"
        "from stepscope.sql.render import render\n"
        "render(t, 'csv'); render(t, 'json'); render(t, 'table')\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_shell(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from stepscope.cli.commands.query import register
    from stepscope.cli.query_shell import shell
    from stepscope.sql import Database

    typed = iter(
        [".tables", ".schema steps", "select count(*)", "as n from steps;", "selec;", ".q"]
    )
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(typed))
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["query", CTL])
    with Database(CTL) as db:
        assert shell(db, args) == 0
    out, err = capsys.readouterr()
    assert "collectives" in out and "staged_input_ns" in out  # .tables, .schema
    assert out.rstrip().splitlines()[-1].strip() == "4"  # the two-line query
    assert "error: SQL syntax error" in err  # reported, and the shell went on


def test_one_host_of_a_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    for host in ("a", "b"):
        shutil.copy(CTL, run / f"{host}.xplane.pb")
    assert main(["query", str(run), "select distinct host from events", "--host", "b"]) == 0
    assert capsys.readouterr().out.split()[2:] == ["b"]
    assert main(["query", str(run), "select 1", "--host", "c"]) == 2
    assert "has no host 'c'" in capsys.readouterr().err
