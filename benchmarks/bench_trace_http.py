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
read from ``/proc/PID/task/*/stat`` around the request. p50 / p95 of both, during the build
and after, with the bytes on the wire and the load average.

``--tree`` (repeatable) names source trees to compare (``src`` folders, e.g. main's and a
branch's): their servers alternate, round after round, the order flipping each round.

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
from urllib.parse import urlencode

import paired
from paired import ROOT

ACCEPT_ENCODING = "gzip, deflate, br, zstd"  # what Chromium sends with every fetch
RESOLUTION = 8000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _thread_cpu(pid: int, nice: int | None) -> dict[int, float]:
    """CPU seconds of each of ``pid``'s threads (those at priority ``nice`` only), to the
    nanosecond (schedstat's time on a core; stat's ticks are 10 ms, a window's whole CPU)."""
    out: dict[int, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as sched:
                on_cpu_ns = int(sched.read().split()[0])
        except (OSError, IndexError, ValueError):  # the thread ended meanwhile
            continue
        # After the ')' of comm: state is field 0, nice 16.
        if nice is None or int(fields[16]) == nice:
            out[int(tid)] = on_cpu_ns / 1e9
    return out


def _cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    # A thread that ended between the two reads takes its CPU with it: never below zero.
    return max(0.0, sum(after.values()) - sum(before.get(t, 0.0) for t in after))


class Client:
    """One keep-alive connection, as one of a browser's connections to the server."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def get(self, path: str) -> tuple[bytes, int, str]:
        """The decoded body, the bytes on the wire and their Content-Encoding."""
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


class Windows:
    """Each window's (wall s, server CPU s), and what came over the wire."""

    def __init__(self) -> None:
        self.during: list[tuple[float, float]] = []
        self.after: list[tuple[float, float]] = []
        self.wire: list[tuple[int, str]] = []

    def line(self, what: str, times: list[tuple[float, float]]) -> str:
        wall, cpu = [t[0] for t in times], [t[1] for t in times]
        return (
            f"{what}: wall p50 {_pct(wall, 0.5):.1f} / p95 {_pct(wall, 0.95):.1f} ms, "
            f"server CPU p50 {_pct(cpu, 0.5):.1f} / p95 {_pct(cpu, 0.95):.1f} ms ({len(times)})"
        )


def _wait_until_up(port: int, proc: subprocess.Popen[bytes]) -> None:
    while True:
        try:
            Client(port).get("/api/runs")
            return
        except (ConnectionError, OSError):
            if proc.poll() is not None:
                raise RuntimeError("the server exited") from None
            time.sleep(0.02)


def stepscope_round(tree: Path, logdir: Path, workdir: Path, windows: int) -> dict[str, object]:
    cache = Path(tempfile.mkdtemp(dir=workdir))
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
        structure = json.loads(page.get(f"/api/tool/trace_viewer?{urlencode(where)}")[0])
        span = int(structure["duration_ns"])

        def window(t0: int) -> tuple[float, float]:
            params = urlencode({**where, "t0": t0, "t1": span, "res": RESOLUTION})
            before, started = _thread_cpu(proc.pid, nice), time.perf_counter()
            body, wire, encoding = page.get(f"/api/tool/trace_viewer/window?{params}")
            wall = time.perf_counter() - started
            if body[:4] != b"STV1" or len(body) < 1000:
                raise RuntimeError(f"not a window: {len(body)} bytes")
            result.wire.append((wire, encoding))
            return wall, _cpu_delta(before, _thread_cpu(proc.pid, nice))

        result = Windows()
        first = window(0)[0]
        first_s = time.perf_counter() - spawned
        answered: list[float] = []

        def steps() -> None:
            body = steps_conn.get(f"/api/tool/trace_viewer/steps?{urlencode(where)}")[0]
            answered.append(time.perf_counter() - spawned)
            answered.append(len(json.loads(body)["number"]))

        asker = threading.Thread(target=steps)
        asker.start()
        k = 0
        while asker.is_alive():
            k += 1
            result.during.append(window(k))
            time.sleep(0.1)
        asker.join()
        if len(answered) != 2:
            raise RuntimeError("the steps endpoint did not answer")
        for _ in range(windows):
            k += 1
            result.after.append(window(k))
        return {
            "windows": result,
            "first_s": first_s,
            "first_wall_ms": first * 1000,
            "steps_s": answered[0],
            "steps": answered[1],
        }
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(cache, ignore_errors=True)


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
            before, started = _thread_cpu(proc.pid, None), time.perf_counter()
            _, wire, encoding = client.get(query)
            wall = time.perf_counter() - started
            result.after.append((wall, _cpu_delta(before, _thread_cpu(proc.pid, None))))
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
    args = parser.parse_args()
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
        for k in range(args.servers):
            order = trees if k % 2 == 0 else trees[::-1]
            for tree in order:
                load = paired.load()
                got = stepscope_round(tree, logdir, workdir, args.windows)
                w = got["windows"]
                assert isinstance(w, Windows)
                sizes = sorted(size for size, _ in w.wire)
                encodings = sorted({e or "identity" for _, e in w.wire})
                print(
                    f"{tree} round {k}: load {load} -> {paired.load()}; first window "
                    f"{got['first_s']:.1f} s from spawn ({got['first_wall_ms']:.0f} ms); steps "
                    f"({got['steps']}) {got['steps_s']:.1f} s from spawn; window "
                    f"{sizes[len(sizes) // 2]:,} bytes on the wire ({', '.join(encodings)})"
                )
                print("  " + w.line("near-full windows while the steps are built", w.during))
                print("  " + w.line("near-full windows after", w.after))
                pooled[tree].during += w.during
                pooled[tree].after += w.after
        for tree, w in pooled.items() if args.servers else ():
            print(f"{tree}, all {args.servers} servers:")
            print("  " + w.line("near-full windows while the steps are built", w.during))
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


if __name__ == "__main__":
    main()
