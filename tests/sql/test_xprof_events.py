"""`events` against XProf 2.24.2's own events database of the same file: every one of XProf's
31 column names is there, the columns docs/query.md says mean the same hold the same values
(event by event), and the queries of XProf's documentation run unchanged."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.sql import Database
from stepscope.sql.render import plain
from tests.support.fixtures import FIXTURES, tf_xplane

pytestmark = [pytest.mark.integration, pytest.mark.untimed]  # runs XProf's converter
xprof = pytest.importorskip("xprof")
duckdb = pytest.importorskip("duckdb")

SAME = (
    "device",
    "category",
    "thread_id",
    "thread_name",
    "stream_id",
    "correlation_id",
    "kernel_name",
    "kernel_details",
    "hlo_op",
    "hlo_module",
    "tf_op_name",
    "tf_op_type",
    "start_ns",
    "end_ns",
    "flops",
    "memory_accessed",
    "flow",
    "source_line",
)
FILES = {
    "tf_ctl": tf_xplane("ctl"),
    "jax_gpu": FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb",
}


def xprof_database(xplane: Path, out: Path) -> Path:
    """XProf's events database of ``xplane``, made in a child process (XProf's library and
    pyarrow in one process crash: both bring their own Arrow)."""
    code = (
        "from xprof.convert.events_db.python import pywrap_events_db_c_api as e; "
        f"e.xspace_to_parquet(input_path={str(xplane)!r}, output_path={str(out)!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300)
    return out


def documented_queries() -> list[str]:
    doc = Path(xprof.__file__).parent / "skills" / "xprof" / "references" / "events_db.md"
    return re.findall(r'--query="\n(.*?)\n"', doc.read_text(), re.DOTALL)


@pytest.mark.parametrize("name", list(FILES))
def test_events_hold_xprofs_values(name: str, tmp_path: Path) -> None:
    theirs = xprof_database(FILES[name], tmp_path / "events.parquet")
    with Database(FILES[name]) as db:
        ours = plain(db.query("select * from events").table)
    con = duckdb.connect()
    con.register("ours", ours)
    con.execute(f"create view theirs as select * from read_parquet('{theirs}')")
    names = [r[0] for r in con.sql("describe theirs").fetchall()]
    assert len(names) == 31 and set(names) <= set(ours.column_names)
    assert con.sql("select count(*) from theirs").fetchall() == [(ours.num_rows,)]
    for column in SAME:
        keyed = f"start_ns, end_ns, kernel_name, {column}::varchar"
        missing = con.sql(
            f"select count(*) from (select {keyed} from theirs except all select {keyed} from ours)"
        ).fetchall()[0][0]
        assert missing == 0, column


def test_xprofs_documented_queries_run_unchanged(tmp_path: Path) -> None:
    queries = documented_queries()
    assert len(queries) == 4
    with Database(FILES["jax_gpu"]) as db:
        for sql in queries:
            db.query(sql)
    with Database(FILES["tf_ctl"]) as db:
        per_step = db.query(queries[1]).table.to_pylist()
    assert {r["step"] for r in per_step} >= {"train 6", "train 7"}
