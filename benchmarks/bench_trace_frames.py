"""Trace viewer frame times in headless Chromium while panning and zooming.

    python benchmarks/bench_trace_frames.py [--events 10000000] [--frames 240] [--json OUT]
        [--width 1400 --height 900]

Cases: the 266k-event TensorFlow fixture ``tf/big_ctl`` and, with ``--events N``, a synthetic
XSpace of N events. A real ``stepscope serve`` process (its own CPU, its own cache) serves a log
directory holding them; Playwright drives Debian's Chromium (headless, as the browser tests do)
at the given viewport. For each case the page is opened at the full view, then:

- pan full view: the whole trace, panned by 1% of the view per frame (direction flips every
  40 frames), windows fetched as they are needed;
- pan 100 ms: the same on a 100 ms view in the middle of the trace;
- zoom: zoom in 4% per frame around the middle for half the frames, then back out, from the
  full view (crossing every level of detail);

each frame moved and drawn from a requestAnimationFrame callback, as a wheel or key input
would (`TraceView.measure`). Figures: the interval between frames (what the user sees; 16.7 ms
is the display's refresh) and the time spent drawing each frame, median and p95.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the synthetic traces and test oracles
FIXTURES = ROOT.parent / "shared" / "fixtures"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
PAGE = '.tool-page[data-tool="trace_viewer"]'
READY = f'{PAGE}[data-loading="0"][data-draw-count]'


def _pcts(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
    }


def _place(logdir: Path, name: str, source: Path | None, data: bytes | None = None) -> None:
    run = logdir / name / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    target = run / "host.xplane.pb"
    if data is not None:
        target.write_bytes(data)
        return
    assert source is not None
    try:  # a hard link: the server refuses symlinks leaving the log directory
        os.link(source, target)
    except OSError:
        shutil.copy(source, target)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(logdir: Path, cache: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "STEPSCOPE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "stepscope.cli.main", "serve", str(logdir), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    for _ in range(200):
        try:
            httpx.get(url + "api/runs", timeout=2).raise_for_status()
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


SCENARIOS = {
    "pan full view": (
        "() => window.stepscopeTrace.setView(0, window.stepscopeTrace.duration)",
        "(n) => window.stepscopeTrace.measurePan(n, 0.01)",
    ),
    "pan 100 ms": (
        "() => { const v = window.stepscopeTrace; const m = v.duration / 2;"
        " v.setView(m - 5e7, m + 5e7); }",
        "(n) => window.stepscopeTrace.measurePan(n, 0.01)",
    ),
    "zoom": (
        "() => window.stepscopeTrace.setView(0, window.stepscopeTrace.duration)",
        "(n) => window.stepscopeTrace.measureZoom(n, 1.04)",
    ),
}


def measure_case(
    browser: Any, url: str, run: str, frames: int, size: tuple[int, int]
) -> dict[str, Any]:
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    started = time.perf_counter()
    page.goto(f"{url}#/trace_viewer?run={run}")
    page.wait_for_selector(READY, timeout=900_000)
    out: dict[str, Any] = {
        "open_s": round(time.perf_counter() - started, 2),
        "events": page.evaluate("window.stepscopeTrace.structure.events"),
    }
    for name, (setup, run_js) in SCENARIOS.items():
        page.evaluate(setup)
        page.wait_for_timeout(300)
        page.wait_for_selector(READY, timeout=120_000)
        result = page.evaluate(run_js, frames)
        out[name] = {
            "interval": _pcts(result["intervals"]),
            "draw": _pcts(result["draws"]),
            "events_drawn": int(result["drawn"] or 0),
        }
    page.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=0, help="also a synthetic trace of N events")
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="bench-frames-"))
    logdir = work / "logs"
    _place(logdir, "big_ctl", next((FIXTURES / "tf" / "big_ctl").rglob("*.xplane.pb")))
    runs = {"tf/big_ctl (fixture)": "big_ctl/run"}
    if args.events:
        sys.path.insert(0, str(ROOT / "src"))
        from tests.support.synthetic import synthetic_xspace_bytes

        _place(logdir, "synthetic", None, synthetic_xspace_bytes(args.events))
        runs[f"synthetic {args.events:,}"] = "synthetic/run"
    proc, url = _serve(logdir, work / "cache")
    results: dict[str, Any] = {
        "viewport": [args.width, args.height],
        "frames": args.frames,
        "load_avg_start": os.getloadavg()[0],
    }
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            for label, run in runs.items():
                results[label] = measure_case(
                    browser, url, run, args.frames, (args.width, args.height)
                )
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    results["load_avg_end"] = os.getloadavg()[0]
    print("| case | events | scenario | frame interval median / p95 ms | draw median / p95 ms |")
    print("|---|---:|---|---:|---:|")
    for label in runs:
        r = results[label]
        for name in SCENARIOS:
            s = r[name]
            print(
                f"| {label} | {r['events']:,} | {name} | {s['interval']['median_ms']} / "
                f"{s['interval']['p95_ms']} | {s['draw']['median_ms']} / {s['draw']['p95_ms']} |"
            )
    print(f"load average {results['load_avg_start']:.1f} -> {results['load_avg_end']:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
