"""Trace viewer windows as a user's page gets them from `stepscope serve`, over HTTP.

    python benchmarks/bench_trace_http.py [--copies 40 | --trace FILE] [--servers 2]
        [--windows 30] [--tree SRC ...] [--xprof-rs PATH]

Each server is ``python -m stepscope serve LOGDIR --port P -q`` on a free 127.0.0.1 port with
a fresh ``STEPSCOPE_CACHE_DIR`` (a profile nobody opened before; the profile itself is
shared, read-only). The client asks what the trace viewer page asks, with the headers
Chromium sends (``Accept-Encoding: gzip, deflate, br, zstd``) over keep-alive connections,
and decodes what it gets (gunzip when the answer is gzipped, as the browser does):

1. the structure (``/api/tool/trace_viewer``), then the first full-view window (8000 px);
2. the steps (``/api/tool/trace_viewer/steps``) on a second connection, as the page asks
   after its first window; while they are built (the store's writes, then the steps'
   child), a near-full window (the whole trace but its first k ns: computed each time, never
   the full view's memo) every 0.1 s;
3. once the steps answered, ``--windows`` more near-full windows.

Per window: the client's wall from the request to the decoded body, and the server's CPU
for it: the CPU of the server's threads at its own priority (the event loop and the request
threads; the store's background writes run at nice +10 and are left out, decision 255),
read from ``/proc/PID/task/*/stat`` around the request, and the server's minor page faults
(``/proc/PID/stat``: a heap given back and faulted in again, decision 335). p50 / p95 of
each, during the build and after, with the bytes on the wire and the load average.

The windows asked while the steps are built are also shown in parts (decision 371): each
server's first (with ``--browser`` it lays out its level of detail, 37-51 ms of server CPU
at 8000 px: the page's own first window was at its width; decision 372), those
asked before the steps' child started (the store's writes on the server's threads), those
asked while the child ran (``/proc/PID/task/*/children``), and those asked after it ended
while the server read its result and answered the steps (decision 570: counted before
the child until then); and how long after the first window the steps answered. Each phase
also says how much CPU the server's lowered threads (the store's writes, nice +10) took
while its windows were asked. ``--dump FILE`` writes every window (tree, round, phase,
seconds from the spawn, wall ms, server CPU ms, page faults, child running, the page's
decode ms, then with ``--browser`` its parts: to the first byte, the download, from its end
to the page, ms, -1 without; then the lowered threads' CPU ms, and 1 when asked after the
child ended) as JSON, for paired comparisons round by round.

``--form`` (default ``compact``): the window form the urllib client asks for (decision 327;
a tree without it ignores the parameter and answers the plain form).

``--warm``: each tree's servers share a cache directory that an unmeasured first server
filled (a profile opened before: the server reads its converted profile, index and steps
from the store). Before decision 335 such servers gave their worker threads' heaps back
after every window and faulted them in again.

``--tree`` (repeatable) names source trees to compare (``src`` folders, e.g. main's and a
branch's): their servers alternate, round after round, the order flipping each round.

``--browser``: the client is the trace viewer page itself in headless Chromium (Playwright,
``/usr/bin/chromium`` or ``$CHROMIUM``): it asks the structure, its first window and the steps
as it does for a user; the near-full windows are fetched by its own network stack in the form
its ``_trace_data.js`` asks (``fetch``, ``arrayBuffer``, then that module's ``decode``) and
timed in the page (``performance.now``), so the browser's receiving, inflating and decoding
are in the wall. (The context bypasses the page's
CSP: Playwright's ``evaluate`` needs ``eval``; the requests are the same.)

``--xprof-rs``: the peer on the same file, after the stepscope rounds: its server, its first
full view (``trace_viewer@``, resolution 8000), then ``--windows`` near-full windows
(``start_time_ms``/``end_time_ms``), each timed by the same client (wall, and the server
process' CPU per window).
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import paired
from paired import ROOT
from proc_stats import cpu_delta, has_child, minor_faults, thread_cpu

ACCEPT_ENCODING = "gzip, deflate, br, zstd"  # what Chromium sends with every fetch
RESOLUTION = 8000
# how far below the answering threads the server runs its store's writes
# (`stepscope.workers.BACKGROUND_NICE`, decision 255)
LOWERED_NICE = 10
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Client:
    """One keep-alive connection, as one of a browser's connections to the server."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def get(self, path: str) -> tuple[bytes, int, str]:
        """The decoded body, the bytes on the wire and their Content-Encoding."""
        try:
            self.conn.request("GET", path, headers={"Accept-Encoding": ACCEPT_ENCODING})
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The server closed the idle keep-alive connection: a new one, as a browser does.
            self.conn.close()
            self.conn.request("GET", path, headers={"Accept-Encoding": ACCEPT_ENCODING})
            response = self.conn.getresponse()
        wire = response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}: {wire[:300]!r}")
        encoding = response.getheader("Content-Encoding") or ""
        body = gzip.decompress(wire) if encoding == "gzip" else wire
        return body, len(wire), encoding


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def _page_parts(when: str, parts: list[list[float]], decode: list[float]) -> str:
    """p50 / p95 of each part of the page's windows (Resource Timing, then its decode)."""
    first, download, to_page = (list(p) for p in zip(*parts, strict=True))
    return (
        f"in the page {when}, p50 / p95 ms: to the first byte {_pct(first, 0.5):.1f} / "
        f"{_pct(first, 0.95):.1f}, download {_pct(download, 0.5):.1f} / "
        f"{_pct(download, 0.95):.1f}, from its end to the page {_pct(to_page, 0.5):.1f} / "
        f"{_pct(to_page, 0.95):.1f}, decode {_pct(decode, 0.5):.1f} / {_pct(decode, 0.95):.1f}"
    )


class Windows:
    """Each window's (wall s, server CPU s), and what came over the wire."""

    def __init__(self) -> None:
        self.during: list[tuple[float, float]] = []
        self.after: list[tuple[float, float]] = []
        self.wire: list[tuple[int, str]] = []
        self.decode: list[float] = []  # the page's decode (--browser)
        self.parts: list[list[float]] = []  # the page's resource timing parts (--browser)
        # the server's minor page faults per window, by the window's (wall, CPU) record
        self.faults: dict[int, int] = {}
        # the windows asked while the steps' child ran, by the same record (decision 371),
        # and those asked once it had ended, before the steps answered (decision 570)
        self.in_child: set[int] = set()
        self.after_child: set[int] = set()
        # the CPU of the server's lowered threads (the store's writes) while each was asked
        self.lowered: dict[int, float] = {}
        self.first: list[tuple[float, float]] = []  # each server's first window while built
        # per window, in order: s from the server's spawn, wall ms, server CPU ms, faults,
        # the child running, the page's decode ms (--dump)
        self.rows: list[list[float]] = []

    def line(self, what: str, times: list[tuple[float, float]]) -> str:
        wall, cpu = [t[0] for t in times], [t[1] for t in times]
        text = (
            f"{what}: wall p50 {_pct(wall, 0.5):.1f} / p95 {_pct(wall, 0.95):.1f} ms, "
            f"server CPU p50 {_pct(cpu, 0.5):.1f} / p95 {_pct(cpu, 0.95):.1f} ms ({len(times)})"
        )
        faults = [self.faults[id(t)] / 1000 for t in times if id(t) in self.faults]
        if faults:  # decision 335: a heap trimmed after each window is faulted in again
            text += f", page faults p50 {_pct(faults, 0.5):.0f} / p95 {_pct(faults, 0.95):.0f}"
        lowered = [self.lowered[id(t)] for t in times if id(t) in self.lowered]
        if any(lowered):  # CPU the window's threads may have waited behind (decision 570)
            text += (
                f", the store's writes' CPU meanwhile p50 {_pct(lowered, 0.5):.1f} / "
                f"p95 {_pct(lowered, 0.95):.1f} ms"
            )
        return text


def _build_phases(w: Windows) -> list[str]:
    """The windows asked while the steps were built, in parts (decision 371): before the
    steps' child started (the store's writes of the converted profile and the index, on
    threads of the server), while the child ran, and after it ended until the steps answered
    (the server reads its result; decision 570); a server's first such window (which lays
    out its level) is left out of them."""
    first = {id(t) for t in (w.first or w.during[:1])}
    rest = [t for t in w.during if id(t) not in first]
    before = [t for t in rest if id(t) not in w.in_child and id(t) not in w.after_child]
    child = [t for t in rest if id(t) in w.in_child]
    ended = [t for t in rest if id(t) in w.after_child]
    lines = []
    if before:
        lines.append(w.line("before the steps' child (the store's writes)", before))
    if child:
        lines.append(w.line("while the steps' child ran", child))
    if ended:
        lines.append(w.line("after the child, before the steps answered", ended))
    return lines


def _wait_until_up(port: int, proc: subprocess.Popen[bytes]) -> None:
    while True:
        try:
            Client(port).get("/api/runs")
            return
        except (ConnectionError, OSError):
            if proc.poll() is not None:
                raise RuntimeError("the server exited") from None
            time.sleep(0.02)


# As `_trace_data.js` gets a window: its own form (none before the compact form, decision
# 327), fetch, the body, then its `decode` into the arrays it draws from (views in place for
# the plain form, widened for the compact one); like its `TraceClient`, the page keeps the
# last 8 windows and gives the arrays of the one it lets go back for reuse.
_ONE_WINDOW = """async (url) => {
  const data = await import(new URL('static/pages/_trace_data.js', location.href).href);
  const asked = data.WINDOW_FORM ? `${url}&form=${data.WINDOW_FORM}` : url;
  const t = performance.now();
  const body = await (await fetch(asked)).arrayBuffer();
  const received = performance.now();
  const decoded = data.decode(body);
  // As `TraceClient` does: the last 8 windows kept, the one it lets go given back for reuse
  // (`release`, decision 422; a tree without it drops the window).
  const kept = (globalThis.benchKept ||= []);
  kept.unshift(decoded);
  if (kept.length > 8 && data.release) data.release(kept.pop().arrays);
  kept.length = Math.min(kept.length, 8);
  const ms = performance.now() - t;
  if (!decoded.header.events) throw new Error('no events');
  const entry = performance.getEntriesByName(new URL(asked, location.href).href).pop();
  const parts = entry ? [entry.responseStart - t, entry.responseEnd - entry.responseStart,
    received - entry.responseEnd] : [0, 0, 0];
  return [ms, body.byteLength, entry ? entry.encodedBodySize : 0, performance.now() - received,
    parts];
}"""
_ANSWERED = """(part) => {
  const done = performance.getEntriesByType('resource')
    .filter((e) => e.name.includes(part) && e.responseEnd > 0);
  return done.length ? done[0].responseEnd : -1;
}"""


class BrowserPage:
    """The trace viewer page of ``where`` in headless Chromium, on the server at ``port``."""

    def __init__(self, chromium: Any, port: int, where: dict[str, str]) -> None:
        self.context = chromium.new_context(
            viewport={"width": 1400, "height": 1000}, bypass_csp=True
        )
        self.page = self.context.new_page()
        # per window: to the first byte, the body's download, from its end to the page (s)
        self.parts: list[list[float]] = []
        self.page.goto(f"http://127.0.0.1:{port}/#/trace_viewer?{urlencode(where)}")
        self.page.evaluate("performance.setResourceTimingBufferSize(1000000)")
        while self.answered("/window?") < 0:  # the page's own first window
            time.sleep(0.05)

    def answered(self, part: str) -> float:
        """When the page's first request whose URL holds ``part`` ended (ms), or -1."""
        return float(self.page.evaluate(_ANSWERED, part))

    def window(self, path: str) -> tuple[float, int, int, float]:
        """(wall s, body bytes, bytes of the body as sent, decode s) of one window the page
        fetched and decoded."""
        ms, size, sent, decode_ms, parts = self.page.evaluate(_ONE_WINDOW, path.lstrip("/"))
        self.parts.append([p / 1000 for p in parts])
        return ms / 1000, int(size), int(sent), decode_ms / 1000

    def close(self) -> None:
        self.context.close()


def stepscope_round(
    tree: Path,
    logdir: Path,
    workdir: Path,
    windows: int,
    chromium: Any = None,
    form: str = "compact",
    kept_cache: Path | None = None,
) -> dict[str, object]:
    cache = kept_cache or Path(tempfile.mkdtemp(dir=workdir))
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(tree), "STEPSCOPE_CACHE_DIR": str(cache)}
    argv = [sys.executable, "-m", "stepscope", "serve", str(logdir), "--port", str(port), "-q"]
    spawned = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    try:
        _wait_until_up(port, proc)
        nice = os.getpriority(os.PRIO_PROCESS, proc.pid)
        page, steps_conn = Client(port), Client(port)
        runs = json.loads(page.get("/api/runs")[0])["runs"]
        where = {"run": runs[0]["run"], "host": runs[0]["hosts"][0]}
        browser = BrowserPage(chromium, port, where) if chromium is not None else None
        structure = json.loads(page.get(f"/api/tool/trace_viewer?{urlencode(where)}")[0])
        # what the urllib client asks (a tree before the compact form ignores the parameter)
        also = f"&form={form}" if form != "plain" else ""
        span = int(structure["duration_ns"])

        def window(t0: int) -> tuple[float, float]:
            path = "/api/tool/trace_viewer/window?"
            path += urlencode({**where, "t0": t0, "t1": span, "res": RESOLUTION})
            faults = minor_faults(proc.pid)
            child = has_child(proc.pid)
            lowered = thread_cpu(proc.pid, nice + LOWERED_NICE)
            before, started = thread_cpu(proc.pid, nice), time.perf_counter()
            if browser is not None:
                wall, size, wire, decode = browser.window(path)
                encoding = "identity" if wire == size else "compressed"
                result.decode.append(decode)
            else:
                body, wire, encoding = page.get(path + also)
                wall, size = time.perf_counter() - started, len(body)
                if body[:4] != b"STV1":
                    size = 0
            if size < 1000:
                raise RuntimeError(f"not a window: {size} bytes")
            result.wire.append((wire, encoding))
            timed = (wall, cpu_delta(before, thread_cpu(proc.pid, nice)))
            result.faults[id(timed)] = minor_faults(proc.pid) - faults
            lowered_ms = 1000 * cpu_delta(lowered, thread_cpu(proc.pid, nice + LOWERED_NICE))
            result.lowered[id(timed)] = lowered_ms / 1000
            if child or has_child(proc.pid):
                result.in_child.add(id(timed))
            elif result.in_child:  # the child has come and gone: the server reads its result
                result.after_child.add(id(timed))
            result.rows.append(
                [
                    round(started - spawned, 3),
                    round(timed[0] * 1000, 2),
                    round(timed[1] * 1000, 2),
                    result.faults[id(timed)],
                    int(id(timed) in result.in_child),
                    round(result.decode[-1] * 1000, 2) if browser is not None else -1,
                    # the page's parts: to the first byte, the download, from its end to the page
                    *([round(p * 1000, 2) for p in browser.parts[-1]] if browser else [-1] * 3),
                    round(lowered_ms, 2),
                    int(id(timed) in result.after_child),
                ]
            )
            return timed

        result = Windows()
        # The page asked its first window (ms after it opened) and asks the steps itself.
        first = browser.answered("/window?") / 1000 if browser is not None else window(0)[0]
        result.rows.clear()  # the first window is the full view, not a near-full one
        first_s = time.perf_counter() - spawned
        answered: list[float] = []

        def steps() -> None:
            if browser is not None:
                return
            body = steps_conn.get(f"/api/tool/trace_viewer/steps?{urlencode(where)}")[0]
            answered.append(time.perf_counter() - spawned)
            answered.append(len(json.loads(body)["number"]))

        asker = threading.Thread(target=steps)
        asker.start()
        k = 0
        while asker.is_alive() or (browser is not None and browser.answered("/steps?") < 0):
            k += 1
            result.during.append(window(k))
            time.sleep(0.1)
        asker.join()
        if browser is not None:
            answered += [time.perf_counter() - spawned, -1]
            browser_steps = json.loads(
                page.get(f"/api/tool/trace_viewer/steps?{urlencode(where)}")[0]
            )
            answered[1] = len(browser_steps["number"])
        if len(answered) != 2:
            raise RuntimeError("the steps endpoint did not answer")
        for _ in range(windows):
            k += 1
            result.after.append(window(k))
        if browser is not None:
            result.parts = browser.parts
            browser.close()
        if kept_cache is not None:
            _settled(cache)
        return {
            "windows": result,
            "first_s": first_s,
            "first_wall_ms": first * 1000,
            "first_what": "after the page opened" if browser is not None else "its request",
            "steps_s": answered[0],
            "steps": answered[1],
        }
    finally:
        proc.terminate()
        proc.wait(30)
        if kept_cache is None:
            shutil.rmtree(cache, ignore_errors=True)


def _settled(cache: Path, limit_s: float = 300.0) -> None:
    """Wait until the store's background writes to ``cache`` are done (its size unchanged for
    2 s): a server ended before them leaves the next one a profile to index again."""

    def size() -> int:
        return sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())

    seen, still, ends = -1, 0, time.perf_counter() + limit_s
    while still < 4 and time.perf_counter() < ends:
        time.sleep(0.5)
        now = size()
        still = still + 1 if now == seen else 0
        seen = now


def xprof_rs_round(binary: str, logdir: Path, windows: int) -> dict[str, object]:
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--logdir", str(logdir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = Client(port)
        base = "/data/plugin/profile/data?run=run&host=host&tag=trace_viewer@"
        while True:
            try:
                body = client.get(f"{base}&resolution={RESOLUTION}")[0]
                break
            except (ConnectionError, OSError):
                if proc.poll() is not None:
                    raise RuntimeError("xprof-rs exited") from None
                client = Client(port)
                time.sleep(0.05)
        events = json.loads(body).get("traceEvents", [])
        ends = [e["ts"] + e.get("dur", 0) for e in events if "ts" in e]
        span_ms = (max(ends) - min(e["ts"] for e in events if "ts" in e)) / 1000
        start_ms = min(e["ts"] for e in events if "ts" in e) / 1000
        result = Windows()
        for k in range(1, windows + 1):
            t0, t1 = start_ms + k * 1e-6, start_ms + span_ms
            query = f"{base}&resolution={RESOLUTION}&start_time_ms={t0}&end_time_ms={t1}"
            before, started = thread_cpu(proc.pid, None), time.perf_counter()
            _, wire, encoding = client.get(query)
            wall = time.perf_counter() - started
            result.after.append((wall, cpu_delta(before, thread_cpu(proc.pid, None))))
            result.wire.append((wire, encoding))
        return {"windows": result}
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40, help="tf/big_ctl repeated K times")
    parser.add_argument("--trace", default="", help="an .xplane.pb to use as it is")
    parser.add_argument("--servers", type=int, default=2, help="rounds (servers per tree)")
    parser.add_argument("--windows", type=int, default=30, help="windows after the steps")
    parser.add_argument("--tree", action="append", default=[], help="a src folder to compare")
    parser.add_argument("--xprof-rs", default="", help="the peer's binary")
    parser.add_argument("--browser", action="store_true", help="the page in headless Chromium")
    parser.add_argument(
        "--form",
        choices=("compact", "plain"),
        default="compact",
        help="the window form the urllib client asks (the page asks its own)",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="each tree's servers share a cache filled by an unmeasured first server (a "
        "profile opened before: no conversion, the steps from the store)",
    )
    parser.add_argument(
        "--dump",
        default="",
        help="write each window (tree, round, phase, s from spawn, wall ms, server CPU ms, "
        "faults, child running, decode ms, then the page's to the first byte, download and "
        "from its end to the page, ms) to this JSON file",
    )
    args = parser.parse_args()
    chromium, playwright = None, None
    if args.browser:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        executable = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
    trees = [Path(t).resolve() for t in args.tree] or [ROOT / "src"]
    for tree in trees:
        paired.compile_bytecode(tree)
    workdir = Path(tempfile.mkdtemp(prefix="bench_trace_http_"))
    try:
        target = workdir / "logdir" / "plugins" / "profile" / "run" / "host.xplane.pb"
        target.parent.mkdir(parents=True)
        source = Path(args.trace) if args.trace else paired.repeated_trace(args.copies, workdir)
        try:  # the profile is only read: a link when it can be one
            os.link(source, target)
        except OSError:
            shutil.copy(source, target)
        logdir = target.parents[3]
        print(f"load {paired.load()} at the start; {target.stat().st_size:,} bytes of profile")
        pooled = {tree: Windows() for tree in trees}
        dumped: list[list[object]] = []
        kept: dict[Path, Path | None] = {tree: None for tree in trees}
        for tree in trees if args.warm else ():
            kept[tree] = Path(tempfile.mkdtemp(dir=workdir))
            stepscope_round(tree, logdir, workdir, 1, None, args.form, kept[tree])
        for k in range(args.servers):
            order = trees if k % 2 == 0 else trees[::-1]
            for tree in order:
                load = paired.load()
                got = stepscope_round(
                    tree, logdir, workdir, args.windows, chromium, args.form, kept[tree]
                )
                w = got["windows"]
                assert isinstance(w, Windows)
                sizes = sorted(size for size, _ in w.wire)
                encodings = sorted({e or "identity" for _, e in w.wire})
                print(
                    f"{tree} round {k}: load {load} -> {paired.load()}; first window "
                    f"{got['first_s']:.1f} s from spawn ({got['first_wall_ms']:.0f} ms "
                    f"{got['first_what']}); steps "
                    f"({got['steps']}) {got['steps_s']:.1f} s from spawn; window "
                    f"{sizes[len(sizes) // 2]:,} bytes on the wire ({', '.join(encodings)})"
                )
                print("  " + w.line("near-full windows while the steps are built", w.during))
                for line in _build_phases(w):
                    print("    " + line)
                if w.during:
                    first_wall, first_cpu = w.during[0]
                    print(
                        f"    the first of them {first_wall * 1000:.1f} ms, server CPU "
                        f"{first_cpu * 1000:.1f} ms"
                    )
                print("  " + w.line("near-full windows after", w.after))
                print(f"  the steps {got['steps_s'] - got['first_s']:.1f} s after the first window")
                split = len(w.during)  # the page's windows in order: during, then after
                kid = [i for i, t in enumerate(w.during) if id(t) in w.in_child and w.parts]
                for when, parts, decode in (
                    ("while built", w.parts[:split], w.decode[:split]),
                    ("while the child ran", [w.parts[i] for i in kid], [w.decode[i] for i in kid]),
                    ("after", w.parts[split:], w.decode[split:]),
                ):
                    if parts:
                        print("  " + _page_parts(when, parts, decode))
                pooled[tree].during += w.during
                pooled[tree].after += w.after
                pooled[tree].faults.update(w.faults)
                pooled[tree].in_child.update(w.in_child)
                pooled[tree].after_child.update(w.after_child)
                pooled[tree].lowered.update(w.lowered)
                pooled[tree].first += w.during[:1]
                dumped += [
                    [str(tree), k, "during" if i < len(w.during) else "after", *row]
                    for i, row in enumerate(w.rows)
                ]
        if args.dump:
            Path(args.dump).write_text(json.dumps(dumped))
        for tree, w in pooled.items() if args.servers else ():
            print(f"{tree}, all {args.servers} servers:")
            print("  " + w.line("near-full windows while the steps are built", w.during))
            for line in _build_phases(w):
                print("    " + line)
            print("  " + w.line("near-full windows after", w.after))
        if args.xprof_rs:
            load = paired.load()
            got = xprof_rs_round(args.xprof_rs, logdir, args.windows)
            w = got["windows"]
            assert isinstance(w, Windows)
            sizes = sorted(size for size, _ in w.wire)
            print(
                f"xprof-rs: load {load} -> {paired.load()}; window {sizes[len(sizes) // 2]:,} "
                f"bytes on the wire ({', '.join(sorted({e or 'identity' for _, e in w.wire}))})"
            )
            print("  " + w.line("near-full windows (start_time_ms/end_time_ms)", w.after))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if chromium is not None and playwright is not None:
            chromium.close()
            playwright.stop()


if __name__ == "__main__":
    main()
