"""Does each C accelerator earn its place? The user's path with each extension on and off.

    python benchmarks/bench_native.py [--scale 20] [--copies 9] [--repeat 3] [--cases a,b]
                                      [--inputs DIR]

The rule (docs/decisions.md, "native code"): C only where it makes the user's path at least
3x faster at the target size, or keeps a measured lead over a peer. So each case is a command
a user runs, timed whole in a fresh process, with every extension on ("C") and with one
switched off (``STEPSCOPE_PURE_PYTHON=<name>``, see `stepscope.accelerators`):

- ``xspace_*``: ``stepscope tool RUN TOOL --no-cache`` and ``stepscope export`` on the
  ``tf/big_ctl`` fixture repeated ``--scale`` times along time by
  ``../shared/tools/tf_rep.py`` (20: 5.3M events at the real file's stat and flow density);
  ``xspace_trace`` opens the trace viewer (its index) and asks 40 windows at every zoom, as
  panning does;
- ``xspace_decode_small``: the same at scale 2 (0.53M events): without the C decoder,
  protobuf holds about 48 bytes per file byte, more than this machine can give at scale 20;
- ``kineto_*``: the same on ``kineto/v100_training_with_memory.json.gz`` written ``--copies``
  times (`bench_kineto.make_trace`; 9: 1.94M events);
- ``pytracer``: a call-heavy loop (bench_capture's workload) under the Python tracer
  (``python_tracer_level=1``): the tracer's cost over the bare loop, with and without C, and
  cProfile's in the same process.

Each measurement is the child's CPU time (user + system, from ``os.wait4``: less sensitive
than wall time to other jobs on a shared machine) and its peak RSS (the highest of the runs).
The "C" and "off" runs alternate, pair by pair, so load drifting over the run hits both; the
ratio is median(off) / median(C). The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stepscope import accelerators

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BIG_CTL = SHARED / "fixtures" / "tf" / "big_ctl" / "plugins" / "profile" / "2026_11_23_18_55_47"
TF_REP = SHARED / "tools" / "tf_rep.py"
STEPSCOPE = [sys.executable, "-m", "stepscope.cli.main"]

# The trace viewer as the web page drives it: structure, steps, then windows at every zoom.
TRACE_DRIVER = """
import sys
from stepscope.cli.commands.tool import context_for
from stepscope.tools.registry import get_tool
from stepscope.tools.trace_viewer import api
spec = get_tool("trace_viewer")
ctx = context_for(sys.argv[1], spec, None, spec.parse_options({}), use_cache=False)
spec.build(ctx)
_, index = api.trace_of(ctx)
api.steps(ctx, {})
span = int(index.end_ns - index.origin_ns)
for k in range(40):
    width = max(span >> (k % 20), 1000)
    t0 = (span - width) * ((k * 7919) % 101) // 100
    api.window(ctx, {"t0": str(t0), "t1": str(t0 + width), "res": "2000"})
"""

PYTRACER_DRIVER = """
import cProfile, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
import stepscope
from bench_capture import workload
def cpu(begin, end):  # the loop alone while the tracer runs (start and stop not counted)
    handle = begin(); t = time.process_time(); workload(); t = time.process_time() - t
    end(handle); return t
def stepscope_begin(pure):
    def begin():
        os.environ["STEPSCOPE_PURE_PYTHON"] = "_pytracer" if pure else "0"
        stepscope.start(tempfile.mkdtemp(), stepscope.ProfilerOptions(
            python_tracer_level=1, max_events=10_000_000))
    return begin
def cprofile_begin():
    p = cProfile.Profile(); p.enable(); return p
nothing = lambda *_: None
rows = {"bare": [], "C": [], "off": [], "cProfile": []}
for _ in range(int(sys.argv[2])):
    rows["bare"].append(cpu(nothing, nothing))
    rows["C"].append(cpu(stepscope_begin(False), lambda _: stepscope.stop(save=False)))
    rows["off"].append(cpu(stepscope_begin(True), lambda _: stepscope.stop(save=False)))
    rows["cProfile"].append(cpu(cprofile_begin, lambda p: p.disable()))
print(" ".join(f"{k}={min(v):.4f}" for k, v in rows.items()))
"""


def cases(inputs: Path) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    """name -> (command, the extensions it may use)."""
    x, k, small = inputs / "x_big", inputs / "kineto.json", inputs / "x_small"
    out = inputs / "out"
    tool = [*STEPSCOPE, "tool"]
    export = [*STEPSCOPE, "export"]
    return {
        "xspace_overview": (
            [*tool, str(x), "overview_page", "--no-cache", "-q"],
            ("_sweeps", "_enclosing", "_nesting"),
        ),
        "xspace_op_stats": (
            [*tool, str(x), "op_stats", "--no-cache", "-q"],
            ("_sweeps", "_nesting"),
        ),
        "xspace_trace": (
            [sys.executable, "-c", TRACE_DRIVER, str(x)],
            ("_segsearch", "_sweeps", "_lod"),
        ),
        "xspace_chrome": (
            [*export, str(x), "--format", "chrome-trace", "-o", f"{out}.json", "--no-cache", "-q"],
            ("_jsonfmt", "_segsearch"),
        ),
        "xspace_perfetto": (
            [*export, str(x), "--format", "perfetto", "-o", f"{out}.pftrace", "--no-cache", "-q"],
            ("_pbpack", "_segsearch"),
        ),
        "xspace_decode_small": (
            [*tool, str(small), "overview_page", "--no-cache", "-q"],
            ("_fastwire",),
        ),
        "kineto_overview": (
            [*tool, str(k), "overview_page", "--no-cache", "-q"],
            ("_kscan", "_sweeps", "_enclosing"),
        ),
        "kineto_kernel_stats": (
            [*tool, str(k), "kernel_stats", "--no-cache", "-q"],
            ("_kscan", "_enclosing"),
        ),
    }


def make_inputs(inputs: Path, scale: int, copies: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_kineto import make_trace

    for name, k in (("x_big", scale), ("x_small", 2)):
        target = inputs / name / "plugins" / "profile" / "run"
        if not (target / "vm.xplane.pb").exists():
            target.mkdir(parents=True, exist_ok=True)
            source = BIG_CTL / "vm.xplane.pb"
            subprocess.run(
                [sys.executable, str(TF_REP), str(source), str(k), str(target / "vm.xplane.pb")],
                check=True,
                capture_output=True,
            )
    if not (inputs / "kineto.json").exists():
        make_trace(copies, inputs / "kineto.json")


def cpu_seconds(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """User + system CPU seconds of one run of ``command``, and its peak RSS in MB."""
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(name: str, command: list[str], ext: str, repeat: int, cache: str) -> None:
    base = {**os.environ, "STEPSCOPE_CACHE_DIR": cache, "STEPSCOPE_PURE_PYTHON": "0"}
    on, off = [], []
    for _ in range(repeat):
        on.append(cpu_seconds(command, base))
        off.append(cpu_seconds(command, {**base, "STEPSCOPE_PURE_PYTHON": ext}))
    c, p = (statistics.median(t for t, _ in runs) for runs in (on, off))
    c_mb, p_mb = (max(mb for _, mb in runs) for runs in (on, off))
    print(
        f"{name:<20} {ext:<11} C {c:6.2f} s {c_mb:5.0f} MB   off {p:6.2f} s {p_mb:5.0f} MB   "
        f"{p / c:5.2f}x   (C {' '.join(f'{t:.2f}' for t, _ in on)} | "
        f"off {' '.join(f'{t:.2f}' for t, _ in off)})",
        flush=True,
    )


def pytracer(repeat: int) -> None:
    command = [sys.executable, "-c", PYTRACER_DRIVER, str(ROOT / "benchmarks"), str(repeat)]
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    best = {k: float(v) for k, v in (item.split("=") for item in text.split())}
    cost = {k: best[k] - best["bare"] for k in ("C", "off", "cProfile")}
    print(
        f"{'pytracer':<22} {'_pytracer':<11} bare loop {best['bare']:.3f} s; tracer's cost: "
        f"C {cost['C']:.3f} s, off {cost['off']:.3f} s ({cost['off'] / cost['C']:.2f}x), "
        f"cProfile {cost['cProfile']:.3f} s ({cost['cProfile'] / cost['C']:.2f}x of C)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=20)
    parser.add_argument("--copies", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default="", help="comma-separated case names (default all)")
    parser.add_argument("--ext", default="", help="only these extensions (comma-separated)")
    parser.add_argument("--inputs", type=Path, help="a folder to keep the inputs in")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inputs = args.inputs or Path(tmp)
        inputs.mkdir(parents=True, exist_ok=True)
        make_inputs(inputs, args.scale, args.copies)
        print(f"load average before: {os.getloadavg()}; CPUs: {os.cpu_count()}")
        print(f"{'case':<20} {'switched off':<11} CPU seconds (median of {args.repeat}), peak RSS")
        started = time.monotonic()
        wanted = set(filter(None, args.cases.split(",")))
        only = set(filter(None, args.ext.split(",")))
        for name, (command, extensions) in cases(inputs).items():
            if wanted and name not in wanted:
                continue
            for ext in extensions:
                # extensions folded back since (decision 111) are no longer built
                if ext in accelerators.EXTENSIONS and (not only or ext in only):
                    with tempfile.TemporaryDirectory() as cache:
                        measure(name, command, ext, args.repeat, cache)
        if (not wanted or "pytracer" in wanted) and (not only or "_pytracer" in only):
            pytracer(max(args.repeat, 5))
        print(f"load average after: {os.getloadavg()}; {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
