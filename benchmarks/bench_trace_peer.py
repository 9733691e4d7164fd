"""Trace viewer, spawn to first window, against xprof-rs: a profile nobody opened before.

    python benchmarks/bench_trace_peer.py [--events 10000000 | --copies 40 | --trace FILE]
        [--repeat 3] [--windows 30] [--xprof-rs PATH] [--one-thread]

Each measurement is a new process on a fresh copy of the file with no cache, timed from spawn
to the last byte of the full-view window at 8000 px (the resolution XProf's UI asks for):

- stepscope: what the page asks for, in process: the trace viewer's structure (`tool.build`:
  convert and build the trace index with an empty cache directory), then the full-view
  `api.window`. The wall clock stops when the window's bytes exist (the process prints the
  time); the steps (the step database), the search index and both store entries come after
  it (`stepscope.store.background`), and the CPU time and peak, read at the process' exit,
  include them. ``steps`` is the wall clock to the answer of the steps endpoint (the page
  asks for it after the first window), ``exit`` to the process' end;
  ``2t``: with ``STEPSCOPE_THREADS=2`` (the steps started on a second thread at once);
- xprof-rs 0.1.3: its server on a fresh log directory, then ``trace_viewer@`` over HTTP, with
  one thread (``taskset -c 0``, ``RAYON_NUM_THREADS=1``) and with its default threads.
  stepscope's one-thread side runs on core 0 too (``taskset -c 0``) up to its first window,
  then on every core for the steps and the windows after (the page's later requests).

Input: `real_density_xspace_bytes` (1.5 stats per event, as the real TensorFlow fixtures),
or with ``--copies K`` the real TensorFlow capture ``tf/big_ctl`` repeated K times along time
with its producer/consumer flows (``../shared/tools/tf_rep.py``; 40 copies: 10.6M events).
Medians of ``--repeat`` (wall s / CPU s, peak MB); within each pair the side that runs first
alternates from repeat to repeat, and
the median of the per-pair ratios xprof-rs / stepscope (one thread each side, and two
threads against its default) is printed with the load average.

Then the same process times full-view windows at 8000 px: one every 0.1 s for as long as
the steps endpoint builds the step database on another thread (as the page asks for the
steps right after its first window; the whole build: the store's writes of the converted
profile and the index, then the steps' child process, 10-60 s here), and ``--windows`` once
it is done (p50 / p95 ms of wall, of the asking thread's CPU and of its wait for a core,
from Linux's schedstat: what is left of the wall is the GIL and the rest; the index in
memory, as a server holds it). The full view is the index's memo after its first answer
(decision 230), so each is paired with a window of the whole trace but its first k
nanoseconds, which is computed every time: what any other wide window costs (from the
index's laid-out level, decision 240). The stepscope process keeps its freed heap, so that
windows timed on its main thread cost what the server's worker threads pay (decision 241).
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

import bench_xspace_peer
import paired
from bench_xspace_peer import ROOT, Sample, _fresh_copy, _median, _spawn

_STEPSCOPE = """
import sys
import time
from pathlib import Path
from stepscope.model import open_run
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.trace_viewer import api, tool
run = open_run(sys.argv[1])
ctx = ToolContext(run, run.hosts[0].host, ProfileStore(cache_dir=Path(sys.argv[2])))
structure = tool.build(ctx)
full = {"t0": "0", "t1": str(structure.duration_ns), "res": "8000"}
body, _ = api.window(ctx, full)
print(len(body), time.time(), time.process_time(), flush=True)
# The windows below are timed on this main thread, whose glibc heap gives its freed top
# back and faults it in again (2,000-5,000 faults a window); `stepscope serve` answers on
# worker threads, which measured no faults: from here on keep the heap as they do
# (decision 241; after the first window, so the spawn-to-window time is as before).
import ctypes
try:
    ctypes.CDLL(None).mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    ctypes.CDLL(None).mallopt(-1, 128 << 20)  # M_TRIM_THRESHOLD
except (OSError, AttributeError):
    pass
import os
os.sched_setaffinity(0, range(os.cpu_count() or 1))  # pinned to one core up to here (1t)
import threading
found = []
def steps():
    found.append(api.steps(ctx, {})[0])
    found.append(time.time())
def queued():  # this thread's time waiting for a core, s (Linux's schedstat; 0 elsewhere)
    try:
        with open("/proc/thread-self/schedstat") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0
def timed(params):
    t, c, q = time.perf_counter(), time.thread_time(), queued()
    api.window(ctx, params)
    return f"{time.perf_counter() - t:.5f}:{time.thread_time() - c:.5f}:{queued() - q:.5f}"
def near(k):  # the whole trace but its first k ns: computed each time, never the memo
    return {**full, "t0": str(k)}
worker = threading.Thread(target=steps)
worker.start()
during, during_near = [], []
while worker.is_alive():  # the whole build: the store's writes, then the steps' child
    during.append(timed(full)); during_near.append(timed(near(len(during))))
    time.sleep(0.1)  # as a page asks: spread over the build
worker.join()
after = [timed(full) for _ in range(int(sys.argv[3]))]
after_near = [timed(near(k + 1)) for k in range(int(sys.argv[3]))]
print(len(found[0]), found[1])
for values in (during, after, during_near, after_near):
    print(" ".join(values))
"""


cpu_first: list[float] = []  # stepscope's CPU time up to its first window (s)
exits: list[float] = []  # stepscope's process exits (wall s), the store writes included
steps_ready: list[float] = []  # the steps endpoint's answer (wall s from spawn)
# (wall s, CPU s of the asking thread, its wait for a core s) per window: the full view while
# the steps were built
# and once they were (the memo's answer after the first), and a window of the whole trace but
# its first nanoseconds (computed every time) during and after
WINDOW_TIMES: dict[str, list[tuple[float, ...]]] = {
    "full view while the steps are built": [],
    "full view after": [],
    "computed near-full view while the steps are built": [],
    "computed near-full view after": [],
}
WINDOWS = [30]


def stepscope(path: str, workdir: Path, threads: int = 1) -> Sample:
    target = _fresh_copy(path, workdir)
    cache = tempfile.mkdtemp(dir=workdir)
    env = {"PYTHONPATH": str(ROOT / "src"), "STEPSCOPE_THREADS": str(threads)}
    # One thread: on core 0 up to the first window, as xprof-rs 1t is for its whole run.
    pin = ["taskset", "-c", "0"] if threads == 1 else []
    spawned = time.time()
    (exit_s, cpu, peak), out = _spawn(
        [*pin, sys.executable, "-c", _STEPSCOPE, str(target.parent), cache, str(WINDOWS[0])],
        env,
    )
    lines = out.splitlines()[-6:]  # not stripped: with --windows 0 the last two are empty
    (size, answered, first_cpu), (steps_size, stepped) = lines[0].split(), lines[1].split()
    if threads == 1:
        cpu_first.append(float(first_cpu))
    if int(size) < 1000 or int(steps_size) < 50:
        raise RuntimeError("stepscope answered an empty window or no steps")
    shutil.rmtree(target.parents[3], ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    if threads == 1:
        exits.append(exit_s)
        steps_ready.append(float(stepped) - spawned)
        for values, line in zip(WINDOW_TIMES.values(), lines[2:], strict=True):
            values.extend(tuple(map(float, x.split(":"))) for x in line.split())
    return float(answered) - spawned, cpu, peak


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def xprof_rs(binary: str, path: str, workdir: Path, one_thread: bool) -> Sample:
    return bench_xspace_peer.xprof_rs(
        binary, path, workdir, one_thread, tags=("trace_viewer@&resolution=8000",)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=0, help="tf/big_ctl repeated, not synthetic")
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--xprof-rs", default="")
    parser.add_argument("--trace", default="", help="an .xplane.pb to use as it is (no copies)")
    parser.add_argument(
        "--one-thread", action="store_true", help="only the one-thread pairs (half the time)"
    )
    args = parser.parse_args()
    WINDOWS[0] = args.windows
    binary = (
        args.xprof_rs or shutil.which("xprof-rs") or str(Path(sys.executable).with_name("xprof-rs"))
    )
    paired.compile_bytecode()
    load_before = paired.load()
    workdir = Path(tempfile.mkdtemp(prefix="bench_trace_peer_"))
    if args.trace:
        made = Path(args.trace)
    elif args.copies:
        made = paired.repeated_trace(args.copies, workdir)
    else:
        made = workdir / "synthetic.xplane.pb"
        make = "import sys; from tests.support.synthetic import real_density_xspace_bytes as f"
        make += "; open(sys.argv[1], 'wb').write(f(int(sys.argv[2])))"
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
        subprocess.run(
            [sys.executable, "-c", make, str(made), str(args.events)], check=True, env=env
        )
    samples: dict[str, list[Sample]] = {
        "stepscope": [],
        "stepscope 2t": [],
        "xprof-rs 1t": [],
        "xprof-rs": [],
    }
    runs = {
        "stepscope": lambda: stepscope(str(made), workdir),
        "stepscope 2t": lambda: stepscope(str(made), workdir, threads=2),
        "xprof-rs 1t": lambda: xprof_rs(binary, str(made), workdir, True),
        "xprof-rs": lambda: xprof_rs(binary, str(made), workdir, False),
    }
    pairs = [("stepscope", "xprof-rs 1t")]
    if args.one_thread:
        del samples["stepscope 2t"], samples["xprof-rs"]
    else:
        pairs.append(("stepscope 2t", "xprof-rs"))
    for k in range(args.repeat):
        for ours, theirs in pairs:  # the side that runs first alternates from pair to pair
            for name in (ours, theirs) if k % 2 == 0 else (theirs, ours):
                samples[name].append(runs[name]())
    shutil.rmtree(workdir, ignore_errors=True)
    result = {name: _median(values) for name, values in samples.items()}
    print(json.dumps({"events": args.events, "copies": args.copies, **result}))
    for ours, theirs in pairs:
        wall = [t[0] / o[0] for o, t in zip(samples[ours], samples[theirs], strict=True)]
        cpu = [t[1] / o[1] for o, t in zip(samples[ours], samples[theirs], strict=True)]
        print(
            f"{theirs} / {ours}, median of {len(wall)} pairs: wall {statistics.median(wall):.2f}x "
            f"({min(wall):.2f}-{max(wall):.2f}), CPU to the exit {statistics.median(cpu):.2f}x"
        )
    for k, (o, t) in enumerate(zip(samples["stepscope"], samples["xprof-rs 1t"], strict=True)):
        print(
            f"pair {k}: stepscope {o[0]:.2f} s wall, {cpu_first[k]:.2f} s CPU to the window; "
            f"xprof-rs 1t {t[0]:.2f} s wall, {t[1]:.2f} s CPU"
        )
    first = [t[1] / c for c, t in zip(cpu_first, samples["xprof-rs 1t"], strict=True)]
    print(
        f"xprof-rs 1t CPU to its exit / stepscope CPU to the first window: median "
        f"{statistics.median(first):.2f}x ({min(first):.2f}-{max(first):.2f}); stepscope "
        f"{statistics.median(cpu_first):.2f} s"
    )
    for what, times in WINDOW_TIMES.items():
        wall, cpu, queue = ([t[k] for t in times] for k in range(3))
        print(
            f"{what}, 8000 px: wall p50 {_pct(wall, 0.5):.1f} / p95 {_pct(wall, 0.95):.1f} ms, "
            f"CPU p50 {_pct(cpu, 0.5):.1f} / p95 {_pct(cpu, 0.95):.1f} ms, waiting for a core "
            f"p50 {_pct(queue, 0.5):.1f} / p95 {_pct(queue, 0.95):.1f} ms ({len(times)})"
        )
    print(f"load {load_before} -> {paired.load()}")
    for name, (wall, cpu, peak) in result.items():
        print(f"{name:<12} {wall:8.2f} s  CPU {cpu:8.2f} s  peak {peak:8,.0f} MB")
    print(f"stepscope steps {sorted(steps_ready)[len(steps_ready) // 2]:8.2f} s (steps endpoint)")
    print(f"stepscope exit {sorted(exits)[len(exits) // 2]:8.2f} s (store entries written)")
    ours = result["stepscope"][0]
    print(f"medians: xprof-rs 1t / stepscope: {result['xprof-rs 1t'][0] / ours:.2f}x")


if __name__ == "__main__":
    main()
