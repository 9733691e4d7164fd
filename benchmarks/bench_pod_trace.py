"""Multi-host trace viewer: open and window latency of a synthetic pod at ALL_HOSTS.

    python benchmarks/bench_pod_trace.py [--hosts 64] [--events 200000] [--workers 2]
                                         [--keep DIR] [--json OUT]

The pod is made in code: ``--hosts`` XSpace files of ``--events`` events each at the stat
density of real TensorFlow captures (`tests.support.synthetic.real_density_xspace_bytes`:
1.5 stats per op, a different seed per host; step markers on one thread, ops on seven).

Phases, each in this process unless said otherwise:

- open (cold): the structure at ALL_HOSTS with an empty cache: every host converted and
  indexed as one task per host on a local pool of ``--workers`` processes, then memory-mapped;
- open (warm): a new store on that cache (a server restart): the hosts memory-mapped only;
- window queries as the server sees them: the window endpoint called directly (level of
  detail per host, merge, flows, counters, binary encoding), in the scenarios the page
  produces at 1400x1000 pixels (its default view with one host open, and pans in it; every
  host open while scrolling through them; panning by 2% of the view at three zooms; zooming
  in from the full view to 1/1000 of it; a script's request without `lines`: the first 64
  rows);
- end to end: the same requests over HTTP to `stepscope serve` in its own process (gzip as a
  browser asks), timed from request to the last byte received.

No peer is run: XProf's trace viewer at ALL_HOSTS converts every selected host's events for
each request in one process, and Perfetto UI loads whole traces into the browser; neither
has a multi-host window query to compare with here.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

VIEW_W, VIEW_H = 1400, 1000
PLOT_W = VIEW_W - 240  # the gutter
HOST_H, SECTION_H, TRACK_H = 24, 22, 22  # the page's band heights (one row per track here)


def pcts(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "max_ms": round(1000 * ordered[-1], 2),
    }


def ranges(values: list[int]) -> str:
    out, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(f"{values[i]}-{values[j]}" if j > i else str(values[i]))
        i = j + 1
    return ",".join(out) or "none"


def visible_lines(structure: dict[str, Any], scroll: float, open_hosts: set[int]) -> str:
    """The tracks the page asks for: a quarter screen above and below the visible part."""
    lo, hi, y, lines = scroll - VIEW_H / 4, scroll + 1.25 * VIEW_H, 0.0, []
    for k, host in enumerate(structure["hosts"]):
        y += HOST_H
        if k not in open_hosts:
            continue
        for section in host["sections"]:
            y += SECTION_H
            for track in section["tracks"]:
                if lo <= y <= hi:
                    lines.append(track["line"])
                y += TRACK_H * max(1, track["rows"])
    return ranges(sorted(lines))


def scenarios(structure: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """Window requests as the page makes them: a window 1.5 times as wide as the view around
    it, at the view's bucket width (res = 1.5 x plot width when zoomed in)."""
    span = structure["duration_ns"]
    n = len(structure["hosts"])
    every = set(range(n))
    height = sum(
        HOST_H + sum(SECTION_H + TRACK_H * len(s["tracks"]) for s in h["sections"])
        for h in structure["hosts"]
    )

    def req(t0: float, t1: float, lines: str) -> dict[str, str]:
        view = t1 - t0
        f0, f1 = max(0.0, t0 - view / 4), min(float(span), t1 + view / 4)
        res = max(1, min(16384, round((f1 - f0) / (view / PLOT_W))))
        return {"t0": str(int(f0)), "t1": str(int(f1)), "res": str(res), "lines": lines}

    first = visible_lines(structure, 0, {0})
    scrolled = [visible_lines(structure, s, every) for s in range(0, height, VIEW_H // 2)]
    middle = scrolled[min(1, len(scrolled) - 1)]
    out: dict[str, list[dict[str, str]]] = {
        "default view (one host open)": [req(0, span, first)],
        "pan in the default view at 1/10": [
            req(span / 3 + k * span * 0.002, span / 3 + k * span * 0.002 + span / 10, first)
            for k in range(40)
        ],
        "every host open, scrolling": [req(0, span, lines) for lines in scrolled],
    }
    for zoom in (10, 100, 1000):
        view = span / zoom
        out[f"pan at 1/{zoom} of the trace"] = [
            req(span / 3 + k * view * 0.02, span / 3 + k * view * 0.02 + view, middle)
            for k in range(40)
        ]
    out["zoom in, full view to 1/1000"] = [
        req(span / 2 - span / 2 / 1.2**k, span / 2 + span / 2 / 1.2**k, middle) for k in range(38)
    ]
    out["no lines (a script: the first 64 rows)"] = [
        {"t0": "0", "t1": str(span), "res": str(PLOT_W)} for _ in range(5)
    ]
    return out


def server_side(run: Path, cache: Path, workers: int) -> dict[str, Any]:
    from stepscope.executor import make_executor
    from stepscope.model import ALL_HOSTS, open_run
    from stepscope.tools import output
    from stepscope.tools._fanout import build_tool
    from stepscope.tools.context import ProfileStore, ToolContext
    from stepscope.tools.registry import get_tool

    spec = get_tool("trace_viewer")
    window = next(e.handle for e in spec.endpoints if e.name == "window")
    out: dict[str, Any] = {}
    for phase in ("open (cold)", "open (warm)"):
        executor = make_executor(workers=workers)
        store = ProfileStore(cache_dir=cache, executor=executor)
        ctx = ToolContext(open_run(str(run)), ALL_HOSTS, store)
        started = time.perf_counter()
        structure = output.to_json(build_tool(ctx, spec))
        out[phase + " s"] = round(time.perf_counter() - started, 2)
        executor.close()
        print(f"{phase}: {out[phase + ' s']} s", flush=True)
    out["events"] = structure["events"]
    out["hosts"] = len(structure["hosts"])
    for name, requests in scenarios(structure).items():
        times, events = [], []
        for params in requests:
            started = time.perf_counter()
            body, _ = window(ctx, params)
            times.append(time.perf_counter() - started)
            size = int.from_bytes(body[4:8], "little")
            events.append(json.loads(body[8 : 8 + size])["events"])
        out[name] = {**pcts(times), "events_max": max(events)}
        print(f"  server  {name}: {out[name]}", flush=True)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["structure"] = structure
    return out


def end_to_end(root: Path, cache: Path, structure: dict[str, Any]) -> dict[str, Any]:
    """The same requests to `stepscope serve` in its own process (the cache the server-side
    phase filled, so it opens warm), over HTTP with gzip as a browser asks for it."""
    import os
    import socket
    import subprocess

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "STEPSCOPE_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "stepscope.cli.main", "serve", str(root), "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out: dict[str, Any] = {}
    url = f"http://127.0.0.1:{port}/"
    try:
        with httpx.Client(base_url=url, headers={"Accept-Encoding": "gzip"}) as client:
            for _ in range(600):
                try:
                    client.get("api/runs").raise_for_status()
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            base = {"run": "pod", "host": "ALL_HOSTS"}
            started = time.perf_counter()
            client.get("api/tool/trace_viewer", params=base, timeout=600).raise_for_status()
            out["open s"] = round(time.perf_counter() - started, 2)
            print(f"  http    open (warm, new server process): {out['open s']} s", flush=True)
            for name, requests in scenarios(structure).items():
                times = []
                for params in requests:
                    started = time.perf_counter()
                    r = client.get(
                        "api/tool/trace_viewer/window", params={**base, **params}, timeout=60
                    )
                    r.raise_for_status()
                    _ = r.content
                    times.append(time.perf_counter() - started)
                out[name] = pcts(times)
                print(f"  http    {name}: {out[name]}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", help="directory for the pod files (kept between runs)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pod-trace-"))
    started = time.perf_counter()
    from bench_pod import make_pod

    run = make_pod(root, args.hosts, args.events, real_density=True)
    size = sum(p.stat().st_size for p in run.iterdir())
    print(
        f"pod: {args.hosts} hosts x {args.events:,} events, {size / 1e9:.2f} GB "
        f"(made in {time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    cache = Path(tempfile.mkdtemp(prefix="pod-trace-cache-"))
    try:
        figures = server_side(run, cache, args.workers)
        structure = figures.pop("structure")
        figures["http"] = end_to_end(root, cache, structure)
    finally:  # the converted profiles and indexes: about 20 MB per host
        shutil.rmtree(cache, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"driver peak RSS {figures['peak_rss_mb']} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
