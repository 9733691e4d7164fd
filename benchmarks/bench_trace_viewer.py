"""Trace viewer: index build, window latency and memory, against XProf's `trace_viewer@`.

    python benchmarks/bench_trace_viewer.py [--sizes 1000000 10000000] [--repeat 30]
        [--xprof /tmp/xpvenv/bin/python] [--xprof-timeout 900] [--browser] [--json OUT]

Cases: the largest TensorFlow fixture (tf/remote) and synthetic XSpaces of the given sizes.
Every measurement runs in a fresh child process (peak RSS is that process's VmHWM):

- stepscope build: convert the file to the columnar model, then build the trace index and
  write it to the cache (what the first open of a trace costs);
- stepscope query: a new process opening the cached profile and index (memory-mapped), then
  window requests through the real endpoint (`trace_viewer_api.window`: level of detail,
  flows, counters, binary encoding) at 2000 pixels: full view, and 1 ms windows at random
  places;
- XProf 2.24.2 `trace_viewer@` (streaming mode, resolution 8000 as its UI asks): the first
  call converts the XSpace and writes its LevelDB-style tables ("build"), later calls with
  `use_saved_result` answer windows from them (full view; 1 ms windows via start/end_time_ms);
- server memory (largest size): a real server process answering the page's requests,
  RSS after 50 windows; with --browser, the page's frame times while panning (Playwright).
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the synthetic traces and test oracles
FIXTURE = ROOT.parent / "shared" / "fixtures" / "tf" / "remote"
XPROF_PYTHON = "/tmp/xpvenv/bin/python"


def _status_kb(field: str, pid: str = "self") -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def _pcts(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


def _run_dir(path: str) -> str:
    """A run directory holding only ``path`` (the logdir layout the store expects)."""
    run = Path(tempfile.mkdtemp(prefix="bench-tv-")) / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    try:  # a hard link: the server refuses symlinks that leave the log directory
        os.link(path, run / "host.xplane.pb")
    except OSError:
        shutil.copy(path, run / "host.xplane.pb")
    return str(run)


# ---- children -----------------------------------------------------------------------------


def child_build(path: str, cache: str) -> dict[str, Any]:
    from stepscope.model import open_run
    from stepscope.model.load import open_host
    from stepscope.stats.trace_index.index import build_trace_index, index_dir, save_index

    run = open_run(_run_dir(path))
    started = time.perf_counter()
    profile = open_host(run.hosts[0], cache_dir=Path(cache))
    converted = time.perf_counter()
    index = build_trace_index(profile)
    built = time.perf_counter()
    target = index_dir(profile, Path(cache))
    assert target is not None
    save_index(index, target)
    return {
        "events": profile.n_events,
        "convert_s": converted - started,
        "index_s": built - converted,
        "save_s": time.perf_counter() - built,
        "peak_mb": _status_kb("VmHWM") / 1024,
        "run": run.path,
    }


def child_query(run_path: str, cache: str, repeat: int) -> dict[str, Any]:
    import numpy as np

    from stepscope.model import open_run
    from stepscope.tools.context import ProfileStore, ToolContext
    from stepscope.tools.trace_viewer import api

    run = open_run(run_path)
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(cache_dir=Path(cache)))
    started = time.perf_counter()
    _, index = api.trace_of(ctx)
    opened = time.perf_counter() - started
    span = index.end_ns - index.origin_ns
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {}
    for res in (8000, 2000):  # 8000: what XProf's UI asks for; 2000: about one screen
        full, zoom, sizes = [], [], {"full": 0, "1ms": 0}
        for k in range(repeat + 2):
            t = time.perf_counter()
            body, _ = api.window(ctx, {"t0": "0", "t1": str(span), "res": str(res)})
            if k >= 2:  # the first calls warm the page cache and NumPy
                full.append(time.perf_counter() - t)
            sizes["full"] = len(body)
            a = int(rng.integers(0, max(1, span - 1_000_000)))
            t = time.perf_counter()
            body, _ = api.window(ctx, {"t0": str(a), "t1": str(a + 1_000_000), "res": str(res)})
            if k >= 2:
                zoom.append(time.perf_counter() - t)
            sizes["1ms"] = len(body)
        out[f"full@{res}"] = _pcts(full)
        out[f"zoom_1ms@{res}"] = _pcts(zoom)
        out[f"bytes@{res}"] = sizes
    return {
        "open_cached_s": opened,
        **out,
        "rss_mb": _status_kb("VmRSS") / 1024,
        "peak_mb": _status_kb("VmHWM") / 1024,
    }


XPROF_CHILD = r"""
import json, os, random, statistics, sys, time
from xprof.convert import raw_to_tool_data as r
path, repeat = sys.argv[1], int(sys.argv[2])
def peak_mb():  # VmHWM: ru_maxrss would include the parent's peak (it survives exec)
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
def call(opts):
    t = time.perf_counter()
    data, _ = r.xspace_to_tool_data([path], "trace_viewer@", {
        "trace_viewer_options": dict(opts), "use_saved_result": True, "hosts": []})
    return time.perf_counter() - t, data
build, data = call({"resolution": 8000})
doc = json.loads(data)
starts = [e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X"]
first_ms, last_ms = min(starts) / 1000, max(starts) / 1000
full = [call({"resolution": 8000})[0] for _ in range(repeat)]
rnd = random.Random(0)
zoom = []
for _ in range(repeat):
    a = first_ms + rnd.random() * max(0.0, last_ms - first_ms - 1)
    zoom.append(call({"resolution": 8000, "start_time_ms": repr(a), "end_time_ms": repr(a + 1)})[0])
def q(s):
    p95 = sorted(s)[min(len(s) - 1, int(0.95 * len(s)))]
    return {"p50_ms": 1000 * statistics.median(s), "p95_ms": 1000 * p95}
print(json.dumps({"build_s": build, "full": q(full), "zoom_1ms": q(zoom),
                  "returned_full": doc.get("returnedEventsSize"),
                  "peak_mb": peak_mb()}))
"""


def run_xprof(python: str, path: str, repeat: int, timeout: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-xprof-"))
    target = work / "host.xplane.pb"
    shutil.copy(path, target)  # XProf writes its tables next to the file
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "GLOG_minloglevel": "3"}
    try:
        out = subprocess.run(
            [python, "-c", XPROF_CHILD, str(target), str(repeat)],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    except subprocess.CalledProcessError as exc:
        return {"error": (exc.stderr or "").strip().splitlines()[-1:] or ["failed"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _child(args: list[str], timeout: float = 3600) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


SERVER_CHILD = r"""
import sys, time
from pathlib import Path
from stepscope.serve.app import start_server
from stepscope.serve.state import ServerState
state = ServerState(sys.argv[1], cache_dir=Path(sys.argv[2]))
server = start_server(state.logdir, state=state)
print(server.url, flush=True)
sys.stdin.read()
server.stop()
"""


def serve_and_measure(run_path: str, cache: str, browser: bool) -> dict[str, Any]:
    import httpx

    logdir = str(Path(run_path).parents[2])
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER_CHILD, logdir, cache],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        client = httpx.Client(base_url=url, timeout=600, headers={"Accept-Encoding": "gzip"})
        run = client.get("api/runs").json()["runs"][0]["run"]
        started = time.perf_counter()
        tool = client.get("api/tool/trace_viewer", params={"run": run}).json()
        first = time.perf_counter() - started
        span = tool["duration_ns"]
        times = []
        for k in range(50):
            a = (k * span // 50) if k % 2 else 0
            b = a + (1_000_000 if k % 2 else span)
            t = time.perf_counter()
            response = client.get(
                "api/tool/trace_viewer/window",
                params={"run": run, "t0": a, "t1": min(b, span), "res": 2000},
            )
            response.raise_for_status()
            times.append(time.perf_counter() - t)
        out = {
            "first_open_s": first,
            "http_window": _pcts(times),
            "rss_mb": _status_kb("VmRSS", str(proc.pid)) / 1024,
            "peak_mb": _status_kb("VmHWM", str(proc.pid)) / 1024,
        }
        if browser:
            out["browser"] = browser_frames(url, run)
        return out
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)


def browser_frames(url: str, run: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}#/trace_viewer?run={run}")
        ready = '.tool-page[data-tool="trace_viewer"][data-loading="0"][data-draw-count]'
        page.wait_for_selector(ready, timeout=600_000)
        page.evaluate("() => window.stepscopeTrace.setView(2e8, 3e8)")
        page.wait_for_timeout(500)
        result = page.evaluate("() => window.stepscopeTrace.measurePan(180, 0.01)")
        browser.close()
    draws, intervals = result["draws"], result["intervals"]
    return {
        "draw_ms_median": statistics.median(draws),
        "draw_ms_p95": sorted(draws)[int(0.95 * len(draws))],
        "frame_interval_ms_median": statistics.median(intervals),
    }


# ---- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--xprof", default=XPROF_PYTHON, help="python with xprof 2.24.2 ('' = skip)"
    )
    parser.add_argument("--xprof-repeat", type=int, default=10)
    parser.add_argument("--xprof-timeout", type=float, default=1800)
    parser.add_argument("--browser", action="store_true", help="also measure the page's frames")
    parser.add_argument("--json", help="write all figures to this file")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        result = (
            child_build(*rest) if kind == "build" else child_query(rest[0], rest[1], int(rest[2]))
        )
        print(json.dumps(result))
        return
    from tests.support.synthetic import synthetic_xspace_bytes

    tmp = Path(tempfile.mkdtemp(prefix="bench-tv-data-"))
    cases = [("tf/remote fixture", str(next(FIXTURE.rglob("*.xplane.pb"))))]
    for size in args.sizes:
        path = tmp / f"synthetic_{size}.xplane.pb"
        path.write_bytes(synthetic_xspace_bytes(size))
        cases.append((f"synthetic {size / 1e6:g}M", str(path)))
    results: dict[str, Any] = {"cpus": os.cpu_count()}
    cleanup: list[Path] = []  # the run directories the build children made
    for label, path in cases:
        cache = tempfile.mkdtemp(prefix="bench-tv-cache-")
        build = _child(["build", path, cache])
        query = _child(["query", build["run"], cache, str(args.repeat)])
        xprof = (
            run_xprof(args.xprof, path, args.xprof_repeat, args.xprof_timeout)
            if args.xprof and Path(args.xprof).exists()
            else {"error": "not run"}
        )
        results[label] = {"build": build, "query": query, "xprof": xprof}
        cleanup.append(Path(build["run"]).parents[2])
        print(label, json.dumps(results[label]), flush=True)
        if label == cases[-1][0]:
            results["server"] = serve_and_measure(build["run"], cache, args.browser)
            print("server", json.dumps(results["server"]), flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    for path in [tmp, *cleanup]:
        shutil.rmtree(path, ignore_errors=True)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


def print_table(results: dict[str, Any]) -> None:
    def ms(d: Any) -> str:
        if not isinstance(d, dict) or "p50_ms" not in d:
            return "–"
        return f"{d['p50_ms']:.1f} / {d['p95_ms']:.1f}"

    print(
        "\n| case | events | stepscope convert + index s | XProf build s | "
        "full view p50/p95 ms | XProf | 1 ms p50/p95 ms | XProf | peak MB (build) | XProf peak MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        if not isinstance(r, dict) or "build" not in r:
            continue
        b, q, xp = r["build"], r["query"], r["xprof"]
        xb = f"{xp['build_s']:.2f}" if "build_s" in xp else xp.get("error", "–")
        xpeak = f"{xp['peak_mb']:.0f}" if "peak_mb" in xp else "–"
        print(
            f"| {label} | {b['events']:,} | {b['convert_s']:.2f} + {b['index_s']:.2f} | {xb} | "
            f"{ms(q['full@8000'])} | {ms(xp.get('full'))} | {ms(q['zoom_1ms@8000'])} | "
            f"{ms(xp.get('zoom_1ms'))} | {b['peak_mb']:.0f} | {xpeak} |"
        )


if __name__ == "__main__":
    main()
