"""Pod scale: ALL_HOSTS overview + pod viewer of a synthetic pod, on each executor.

    python benchmarks/bench_pod.py [--hosts 256] [--events 200000] [--cases w1,w2,dask,cache]
                                   [--keep DIR]

The pod is made in code: ``--hosts`` XSpace files of ``--events`` events each
(`tests.support.synthetic.synthetic_xspace_bytes`, a different seed per host: step markers
on one thread, ops on seven). Each case runs in a fresh driver process, which prints its own
peak RSS (``ru_maxrss`` of that process alone: the workers are other processes) and the time
from the start of the analysis to both results in hand:

- ``w1`` / ``w2``: local pool of 1 / 2 worker processes, empty cache;
- ``dask``: a Dask ``LocalCluster`` of 2 worker processes (1 thread each) started by this
  script; the driver connects with ``--dask``-style address; empty cache;
- ``cache``: ``w2`` again on the cache the ``w2`` case left (every host summary read back).

Peers are not run here: HTA's process pool returns whole DataFrames to its parent (its own
issue reports 950 GB of RAM for 200 GB of traces), which this machine (24 GB) cannot host at
this size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the synthetic traces and test oracles

DRIVER = r"""
import json, resource, sys, time
from stepscope.executor import make_executor
from stepscope.model import ALL_HOSTS, open_run
from stepscope.tools._fanout import build_tool
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.output import to_json
from stepscope.tools.registry import get_tool

run_dir, cache_dir, workers, dask = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
executor = make_executor(workers=workers, dask=dask or None)
started = time.perf_counter()
store = ProfileStore(cache_dir=__import__("pathlib").Path(cache_dir), executor=executor)
ctx = ToolContext(open_run(run_dir), ALL_HOSTS, store)
from stepscope.tools._fanout import prepare
prepare(ctx, get_tool("overview_page"), get_tool("pod_viewer"))
overview = to_json(build_tool(ctx, get_tool("overview_page")))
pod = to_json(build_tool(ctx, get_tool("pod_viewer")))
seconds = time.perf_counter() - started
executor.close()
print(json.dumps({
    "seconds": seconds,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "hosts": len(ctx.hosts),
    "failed": len(ctx.failed),
    "steps": len(pod["steps"]),
    "opened_in_driver": len(store._profiles),
}))
"""


def make_pod(root: Path, hosts: int, events: int, real_density: bool = False) -> Path:
    """``hosts`` synthetic XSpaces (seed = host index) in a run directory under ``root``;
    files already there are kept. ``real_density``: 1.5 stats per op, as TensorFlow's."""
    from tests.support.synthetic import real_density_xspace_bytes, synthetic_xspace_bytes

    make = real_density_xspace_bytes if real_density else synthetic_xspace_bytes
    run = root / "plugins" / "profile" / "pod"
    run.mkdir(parents=True, exist_ok=True)
    for i in range(hosts):
        path = run / f"host{i:04d}.xplane.pb"
        if not path.exists():
            path.write_bytes(make(events, seed=i))
    return run


def drive(run: Path, cache: Path, workers: int, dask: str = "") -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, str(run), str(cache), str(workers), dask],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"driver failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=256)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--cases", default="w1,w2,dask,cache")
    parser.add_argument("--keep", help="directory for the pod files (kept between runs)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pod-bench-"))
    started = time.perf_counter()
    run = make_pod(root, args.hosts, args.events)
    size = sum(p.stat().st_size for p in run.iterdir())
    print(
        f"pod: {args.hosts} hosts x {args.events:,} events, {size / 1e9:.2f} GB "
        f"(made in {time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    rows = []
    caches = Path(tempfile.mkdtemp(prefix="pod-bench-cache-"))
    try:
        for case in args.cases.split(","):
            cache = caches / ("w2" if case == "cache" else case)
            if case == "dask":
                from distributed import LocalCluster

                with LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster:
                    result = drive(run, cache, 0, cluster.scheduler_address)
            else:
                result = drive(run, cache, 1 if case == "w1" else 2)
            rows.append((case, result))
            print(
                f"{case:>6}: {result['seconds']:8.1f} s"
                f"  driver peak {result['peak_rss_mb']:6.0f} MB"
                f"  hosts {result['hosts']:.0f}  steps {result['steps']:.0f}"
                f"  profiles opened in the driver {result['opened_in_driver']:.0f}",
                flush=True,
            )
    finally:
        shutil.rmtree(caches, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    times = dict((case, r["seconds"]) for case, r in rows)
    if "w1" in times and "w2" in times:
        print(f"speed-up 1 -> 2 local workers: {times['w1'] / times['w2']:.2f}x")
    if "w2" in times and "cache" in times:
        print(f"second run from cache: {times['w2'] / times['cache']:.1f}x faster")


if __name__ == "__main__":
    main()
