"""Trace viewer, spawn to first window, against xprof-rs: a profile nobody opened before.

    python benchmarks/bench_trace_peer.py [--events 10000000] [--repeat 3]

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

Input: `real_density_xspace_bytes` (1.5 stats per event, as the real TensorFlow fixtures).
Medians of ``--repeat`` (wall s / CPU s, peak MB); sides alternate within each repeat.
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

import bench_xspace_peer
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
body, _ = api.window(ctx, {"t0": "0", "t1": str(structure.duration_ns), "res": "8000"})
print(len(body), time.time(), flush=True)
steps, _ = api.steps(ctx, {})
print(len(steps), time.time())
"""


exits: list[float] = []  # stepscope's process exits (wall s), the store writes included
steps_ready: list[float] = []  # the steps endpoint's answer (wall s from spawn)


def stepscope(path: str, workdir: Path, threads: int = 1) -> Sample:
    target = _fresh_copy(path, workdir)
    cache = tempfile.mkdtemp(dir=workdir)
    env = {"PYTHONPATH": str(ROOT / "src"), "STEPSCOPE_THREADS": str(threads)}
    spawned = time.time()
    (exit_s, cpu, peak), out = _spawn(
        [sys.executable, "-c", _STEPSCOPE, str(target.parent), cache], env
    )
    (size, answered), (steps_size, stepped) = (ln.split() for ln in out.strip().splitlines()[-2:])
    if int(size) < 1000 or int(steps_size) < 50:
        raise RuntimeError("stepscope answered an empty window or no steps")
    shutil.rmtree(target.parents[3], ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    if threads == 1:
        exits.append(exit_s)
        steps_ready.append(float(stepped) - spawned)
    return float(answered) - spawned, cpu, peak


def xprof_rs(binary: str, path: str, workdir: Path, one_thread: bool) -> Sample:
    return bench_xspace_peer.xprof_rs(
        binary, path, workdir, one_thread, tags=("trace_viewer@&resolution=8000",)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    binary = shutil.which("xprof-rs") or str(Path(sys.executable).with_name("xprof-rs"))
    workdir = Path(tempfile.mkdtemp(prefix="bench_trace_peer_"))
    made = workdir / "synthetic.xplane.pb"
    make = "import sys; from tests.support.synthetic import real_density_xspace_bytes as f"
    make += "; open(sys.argv[1], 'wb').write(f(int(sys.argv[2])))"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    subprocess.run([sys.executable, "-c", make, str(made), str(args.events)], check=True, env=env)
    samples: dict[str, list[Sample]] = {
        "stepscope": [],
        "stepscope 2t": [],
        "xprof-rs 1t": [],
        "xprof-rs": [],
    }
    for _ in range(args.repeat):
        samples["stepscope"].append(stepscope(str(made), workdir))
        samples["stepscope 2t"].append(stepscope(str(made), workdir, threads=2))
        samples["xprof-rs 1t"].append(xprof_rs(binary, str(made), workdir, True))
        samples["xprof-rs"].append(xprof_rs(binary, str(made), workdir, False))
    shutil.rmtree(workdir, ignore_errors=True)
    result = {name: _median(values) for name, values in samples.items()}
    print(json.dumps({"events": args.events, **result}))
    for name, (wall, cpu, peak) in result.items():
        print(f"{name:<12} {wall:8.2f} s  CPU {cpu:8.2f} s  peak {peak:8,.0f} MB")
    print(f"stepscope steps {sorted(steps_ready)[len(steps_ready) // 2]:8.2f} s (steps endpoint)")
    print(f"stepscope exit {sorted(exits)[len(exits) // 2]:8.2f} s (store entries written)")
    ours = result["stepscope"][0]
    print(
        f"xprof-rs 1t / stepscope: {result['xprof-rs 1t'][0] / ours:.2f}x; "
        f"xprof-rs / stepscope: {result['xprof-rs'][0] / ours:.2f}x"
    )


if __name__ == "__main__":
    main()
