"""SQL over a profile: stepscope's `query` against XProf 2.24.2's events database, paired.

    flock /tmp/stepscope-bench.lock python benchmarks/bench_query.py [--repeat 5] [--file X]

On one XSpace file (default ``tf/big_ctl``, 266k events), each query of `QUERIES` (XProf's
count and its documented per-step query, run unchanged by both), timed as a user meets it:

- **cold**, in a fresh process, from spawn to exit (imports and the answer's output included):
  stepscope ``stepscope query FILE SQL --no-cache`` (the profile read from the file, no cache
  anywhere); stepscope "converted" the same with the converted profile in the cache (what a
  second command, or a query after ``stepscope tool``, finds); XProf ``xprof
  create_events_db FILE --bypass_cache`` then ``xprof query_events_db FILE --query=SQL
  --bypass_cache`` (its documented way: build the database, then query it), the two
  processes added;
- **warm**, a query once the tables exist: stepscope in one process (a `Database` that has
  answered a first query answers the next), median over ``--warm`` queries; XProf ``xprof
  query_events_db`` in a fresh process on its existing database (each XProf query is a
  command), and XProf's Parquet read by DuckDB in one process (its best case: no CLI).

Rounds are paired (stepscope and XProf in the same round, order alternating) and the medians
of ``--repeat`` rounds are printed with the ratio XProf / stepscope (above 1: stepscope is
faster), for wall time and CPU time (user + system of the process, the figure a loaded
machine moves least), with the load average before and after. Goals (issue #31): cold <= 1 s,
warm <= 0.2 s. XProf's library and pyarrow crash in one process (each brings its own Arrow),
so XProf always runs in its own processes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
BIG_CTL = next((FIXTURES / "tf" / "big_ctl").rglob("*.xplane.pb"), None)
QUERIES = {
    "count": "SELECT COUNT(*) AS total_events FROM Events",
    "per-step": (
        "SELECT device, step, (MAX(end_ns) - MIN(start_ns)) / 1e6 AS step_span_ms, "
        "COUNT(*) AS num_events FROM Events WHERE step IS NOT NULL "
        "GROUP BY device, step ORDER BY device, step"
    ),
}
BIN = Path(sys.executable).parent
_WARM = """
import sys, time
from stepscope.sql import Database
db = Database(sys.argv[1])
sql, n = sys.argv[2], int(sys.argv[3])
db.query(sql)  # the first query builds the tables
walls, cpus = [], []
for _ in range(n):
    w, c = time.perf_counter(), time.process_time()
    db.query(sql)
    walls.append(time.perf_counter() - w)
    cpus.append(time.process_time() - c)
walls.sort(); cpus.sort()
print(walls[n // 2], cpus[n // 2])
"""
_XPROF_PARQUET = """
import sys, time, duckdb
con = duckdb.connect()
con.execute(f"CREATE VIEW Events AS SELECT * FROM read_parquet('{sys.argv[1]}')")
sql, n = sys.argv[2], int(sys.argv[3])
con.sql(sql).fetchall()
walls, cpus = [], []
for _ in range(n):
    w, c = time.perf_counter(), time.process_time()
    con.sql(sql).fetchall()
    walls.append(time.perf_counter() - w)
    cpus.append(time.process_time() - c)
walls.sort(); cpus.sort()
print(walls[n // 2], cpus[n // 2])
"""


def spawn(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout): spawn to exit."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode})")
    return wall, usage.ru_utime + usage.ru_stime, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--file", type=Path, default=BIG_CTL)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warm", type=int, default=9, help="warm queries per measure")
    args = parser.parse_args()
    if args.file is None or not args.file.is_file():
        raise SystemExit(
            "no input file: give --file (the default is ../shared/fixtures/tf/big_ctl)"
        )
    work = Path(tempfile.mkdtemp(prefix="bench-query-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    profile = work / "run" / "vm.xplane.pb"
    profile.parent.mkdir()
    shutil.copy(args.file, profile)
    base = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENBLAS_NUM_THREADS": "1"}
    ours_env = {**base, "STEPSCOPE_CACHE_DIR": str(work / "stepscope-cache")}
    xprof_env = {**base, "XDG_CACHE_HOME": str(work / "xprof-cache"), "HOME": str(work)}
    stepscope = [str(BIN / "stepscope"), "query", str(profile)]
    xprof = [str(BIN / "xprof")]
    spawn([*stepscope, "SELECT 1", "-q"], ours_env)  # fills the converted-profile cache
    print(f"input: {args.file} ({args.file.stat().st_size / 1e6:.1f} MB)")
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name, sql in QUERIES.items():
        got = results[name] = {}
        for r in range(args.repeat):
            order = [0, 1] if r % 2 == 0 else [1, 0]
            for side in order:
                if side == 0:
                    wall, cpu, _ = spawn([*stepscope, sql, "--no-cache", "-q"], ours_env)
                    got.setdefault("stepscope cold", []).append((wall, cpu))
                    wall, cpu, _ = spawn([*stepscope, sql, "-q"], ours_env)
                    got.setdefault("stepscope cold, converted", []).append((wall, cpu))
                    out = spawn(
                        [sys.executable, "-c", _WARM, str(profile), sql, str(args.warm)], ours_env
                    )[2]
                    w, c = map(float, out.split())
                    got.setdefault("stepscope warm", []).append((w, c))
                else:
                    w1, c1, made = spawn(
                        [*xprof, "create_events_db", str(profile), "--bypass_cache"], xprof_env
                    )
                    w2, c2, _ = spawn(
                        [*xprof, "query_events_db", str(profile), f"--query={sql}",
                         "--bypass_cache"], xprof_env,
                    )  # fmt: skip
                    got.setdefault("xprof cold (create + query)", []).append((w1 + w2, c1 + c2))
                    got.setdefault("xprof warm (query_events_db)", []).append((w2, c2))
                    parquet = json.loads(made)["path"]  # where XProf put its database
                    out = spawn(
                        [sys.executable, "-c", _XPROF_PARQUET, parquet, sql, str(args.warm)],
                        base,
                    )[2]
                    w, c = map(float, out.split())
                    got.setdefault("xprof warm (parquet in process)", []).append((w, c))
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print(f"medians of {args.repeat} paired rounds; ratio = XProf / stepscope (above 1: faster)")
    for name, got in results.items():
        print(f"\nquery {name}: {QUERIES[name]}")
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in got.items()}  # fmt: skip
        for k, (w, c) in med.items():
            print(f"  {k:<34} wall {w:7.3f} s   CPU {c:7.3f} s")
        for ours, theirs in (
            ("stepscope cold", "xprof cold (create + query)"),
            ("stepscope cold, converted", "xprof cold (create + query)"),
            ("stepscope warm", "xprof warm (query_events_db)"),
            ("stepscope warm", "xprof warm (parquet in process)"),
        ):
            (ow, oc), (tw, tc) = med[ours], med[theirs]
            print(f"  {theirs} / {ours}: wall {tw / ow:6.1f}x   CPU {tc / max(oc, 1e-6):6.1f}x")


if __name__ == "__main__":
    main()
