"""PyTorch (Kineto) trace: import + overview, against Holistic Trace Analysis (HTA).

    python benchmarks/bench_kineto.py [--copies 1 5 9] [--repeat 3] [--hta-python PY]
        [--source FIXTURE.json.gz ...] [--pairs N]

Inputs: the real V100 training trace `kineto/v100_training_with_memory.json.gz` (216k events:
cpu_ops, CUDA runtime calls, kernels, memcpys, 28k ``[memory]`` events, flows; 3.3 args per
event), written ``--copies`` times one after the other into one uncompressed JSON: each copy's
timestamps move past the previous copy and its ids (external ids, correlations, flow ids, step
numbers) are offset, so the file is the same workload profiled for longer, at the real
density. 1, 5 and 9 copies give 0.22M, 1.08M and 1.94M events.

Each measurement runs in a fresh process and times, from before the library import:

- stepscope: the JSON file -> columnar profile (no cache) -> overview_page -> JSON text, in a
  process set up as ``stepscope serve`` sets up its own (one OpenBLAS thread, decision 71);
  ``--as-tool`` also keeps freed memory in malloc as the one-shot ``stepscope tool`` does
  (decision 68: on this path no faster, and a higher peak);
- HTA: ``TraceAnalysis(trace_dir=...)`` (parses the trace into its DataFrames) ->
  ``get_temporal_breakdown()`` (its per-rank overview: idle / compute / non-compute time).

"cpu s" is the process's CPU time (less sensitive to other jobs on a shared machine than
the wall clock). Peak MB is the process's VmHWM (resident set high-water mark) minus its RSS
before the import. HTA runs in ``--hta-python`` (default /tmp/peervenv/bin/python, made with
``python -m venv /tmp/peervenv && /tmp/peervenv/bin/pip install HolisticTraceAnalysis``).
Median of ``--repeat``; ratio = HTA / stepscope.

``--source NAME ...`` takes other fixtures of ``../shared/fixtures/kineto`` (``all``: every
one); ``--events N`` replaces ``--copies``: each source gets the fewest copies that make N
events or more (issue #30's row is "at 0.2M events": ``--events 200000``);
``--pairs N`` runs stepscope and HTA as N paired A/B runs instead (the order alternating)
and prints the median of the per-pair ratios HTA / stepscope of CPU and wall time with the
load average, in process (as above) and of the whole processes timed from outside
(interpreter start, this script's few module-level imports -- json, os, sys, time, pathlib,
typing -- and the interpreter's exit included: ``wait4``'s user + system time; the parent's
own modules are imported where it runs them, not in the measured children), and of the
command a user runs for it, ``stepscope tool FILE overview_page --no-cache -q`` (the console
script's code; the same conversion and overview, printed; it ends as a one-shot command
does: decisions 68 and 232) timed the same way, in the same pairs
(issue #30: the GPU inference trace ``h100_timesformer_inference.json.gz`` at ``--copies 4``
is 0.2M events).
"""

from __future__ import annotations

# Only what the measured children need at module level: the parent's own modules (argparse,
# gzip, shutil, statistics, subprocess, tempfile: 25-30 ms of CPU) are imported where it uses
# them, so that neither side's whole-process figure counts them.
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KINETO = ROOT.parent / "shared" / "fixtures" / "kineto"
SOURCE = KINETO / "v100_training_with_memory.json.gz"
ID_ARGS = ("External id", "correlation", "Record function id", "Sequence number", "Ev Idx")
HTA_PYTHON = "/tmp/peervenv/bin/python"


def _load(source: Path) -> dict[str, Any]:
    import gzip

    doc: dict[str, Any] = json.loads(gzip.decompress(source.read_bytes()))
    return doc


def copies_for(events: int, source: Path) -> int:
    """The fewest copies of ``source`` that `make_trace` makes ``events`` events or more of
    (the thread-name events are written once)."""
    trace = _load(source)["traceEvents"]
    once = sum(1 for e in trace if e.get("ph") == "M")
    each = len(trace) - once
    return max(1, -(-(events - once) // each)) if each else 1


def make_trace(copies: int, target: Path, source: Path = SOURCE) -> int:
    """Write ``copies`` back-to-back copies of ``source``; returns the event count."""
    doc = _load(source)
    events: list[dict[str, Any]] = doc.pop("traceEvents")
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = int(max(stamps) - min(stamps)) + 1000
    header = json.dumps(doc)[1:-1]
    written = 0
    with target.open("w") as out:
        out.write("{" + header + ', "traceEvents": [\n')
        for copy in range(copies):
            for event in events:
                if copy and event.get("ph") == "M":
                    continue  # thread names once
                item = dict(event)
                if isinstance(item.get("ts"), (int, float)):
                    item["ts"] = item["ts"] + copy * span
                if isinstance(item.get("id"), int):
                    item["id"] += copy * 10_000_000
                args = item.get("args")
                if isinstance(args, dict) and copy:
                    args = dict(args)
                    for key in ID_ARGS:
                        if isinstance(args.get(key), int) and args[key] >= 0:
                            args[key] += copy * 10_000_000
                    item["args"] = args
                name = item.get("name")
                if copy and isinstance(name, str) and name.startswith("ProfilerStep#"):
                    item["name"] = f"ProfilerStep#{int(name[13:]) + copy * 1000}"
                out.write(("," if written else "") + json.dumps(item) + "\n")
                written += 1
        out.write("]}\n")
    return written


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def child_stepscope(path: str) -> dict[str, float]:
    base = _rss_kb("VmRSS:")
    started, cpu_started = time.perf_counter(), time.process_time()
    from stepscope.cli.blas import single_threaded_blas

    single_threaded_blas()
    if os.environ.get("BENCH_AS_TOOL"):
        from stepscope.cli.malloc import keep_freed_memory

        keep_freed_memory()
    from stepscope.model.runs import single_file_run
    from stepscope.tools import output
    from stepscope.tools.context import ProfileStore, ToolContext
    from stepscope.tools.registry import get_tool

    run = single_file_run(path)
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False))
    size = len(json.dumps(output.to_json(get_tool("overview_page").build(ctx))))
    return {
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu_started,
        "bytes": size,
        "peak_kb": _peak(base),
    }


def child_hta(path: str) -> dict[str, float]:
    base = _rss_kb("VmRSS:")
    started, cpu_started = time.perf_counter(), time.process_time()
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_dir=str(Path(path).parent))
    breakdown = analyzer.get_temporal_breakdown(visualize=False)
    return {
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu_started,
        "bytes": len(breakdown.to_json()),
        "peak_kb": _peak(base),
    }


def _peak(base_kb: int) -> float:
    return _rss_kb("VmHWM:") - base_kb


def _child(argv: list[str]) -> tuple[str, str, int, float, float]:
    """Runs ``argv``, timed from outside: (stdout, stderr, exit code, user + system CPU from
    ``wait4``, wall seconds), interpreter start included."""
    import subprocess

    started = time.perf_counter()
    child = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Bytecode caches as an installed package has them (this machine's environment sets
        # PYTHONDONTWRITEBYTECODE, which would recompile every module every run).
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONWARNINGS": "ignore",
        },
    )
    out = child.stdout.read() if child.stdout else ""
    err = child.stderr.read() if child.stderr else ""  # a few lines: no pipe fills meanwhile
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    return out, err, code, usage.ru_utime + usage.ru_stime, seconds


def _once(python: str, who: str, path: str) -> dict[str, float] | None:
    """One child: its own figures (from before the library import), and ``process_cpu`` /
    ``process_seconds``, the whole process timed from outside."""
    out, err, code, cpu, seconds = _child([python, __file__, "--child", who, path])
    if code:
        print(f"{who} failed on {path}:\n{err[-2000:]}", file=sys.stderr)
        return None
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    result["process_cpu"] = cpu
    result["process_seconds"] = seconds
    return result


# The console script's code (`stepscope = stepscope.cli.main:main`): the command as users run it.
CLI = "import sys; from stepscope.cli.main import main; sys.exit(main())"


def _once_cli(path: str) -> dict[str, float] | None:
    """``stepscope tool PATH overview_page --no-cache -q`` in a fresh process, as a user runs
    it (the same conversion and overview, printed as JSON; no store: nothing written): the
    whole process timed from outside, as `_once` times the others."""
    argv = [sys.executable, "-c", CLI, "tool", path, "overview_page", "--no-cache", "-q"]
    out, err, code, cpu, seconds = _child(argv)
    if code or "steps" not in json.loads(out):
        print(f"stepscope tool failed on {path}:\n{err[-2000:]}", file=sys.stderr)
        return None
    return {"process_cpu": cpu, "process_seconds": seconds}


def paired(hta: str, path: str, pairs: int) -> str:
    """``pairs`` A/B runs (order alternating): the median of per-pair ratios HTA / stepscope,
    in process (from before the library import) and of the whole processes."""
    import statistics

    load = f"{os.getloadavg()[0]:.1f}"
    keys = ("cpu", "seconds", "pcpu", "pseconds", "ccpu", "cseconds")
    ratios: dict[str, list[float]] = {k: [] for k in keys}
    ours: dict[str, list[float]] = {"cpu": [], "pcpu": [], "ccpu": []}
    for k in range(pairs):
        order = ("stepscope", "cli", "hta") if k % 2 == 0 else ("hta", "cli", "stepscope")
        got = {
            who: (
                _once_cli(path)
                if who == "cli"
                else _once(sys.executable if who == "stepscope" else hta, who, path)
            )
            for who in order
        }
        a, c, b = got["stepscope"], got["cli"], got["hta"]
        if a is None or b is None or c is None:
            return "failed"
        for key, ours_, field in (
            ("cpu", a, "cpu"),
            ("seconds", a, "seconds"),
            ("pcpu", a, "process_cpu"),
            ("pseconds", a, "process_seconds"),
            ("ccpu", c, "process_cpu"),
            ("cseconds", c, "process_seconds"),
        ):
            ratios[key].append(b[field] / ours_[field])
        ours["cpu"].append(a["cpu"])
        ours["pcpu"].append(a["process_cpu"])
        ours["ccpu"].append(c["process_cpu"])

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.1f}x ({min(values):.1f}-{max(values):.1f})"

    return (
        f"HTA / stepscope, median of {pairs} pairs: in process CPU {med(ratios['cpu'])}, wall "
        f"{med(ratios['seconds'])}, stepscope CPU {statistics.median(ours['cpu']):.3f} s; "
        f"whole processes CPU {med(ratios['pcpu'])}, wall {med(ratios['pseconds'])}, "
        f"stepscope CPU {statistics.median(ours['pcpu']):.3f} s; "
        f"`stepscope tool` as a whole process CPU {med(ratios['ccpu'])}, wall "
        f"{med(ratios['cseconds'])}, stepscope CPU {statistics.median(ours['ccpu']):.3f} s "
        f"(its CPU ratio per pair: {' '.join(f'{r:.1f}' for r in sorted(ratios['ccpu']))}); "
        f"load {load} -> {os.getloadavg()[0]:.1f}"
    )


def measure(python: str, who: str, path: str, repeat: int) -> tuple[float, float, float] | None:
    """(median seconds, median CPU seconds, median peak MB) over ``repeat`` fresh processes."""
    import statistics

    seconds: list[float] = []
    cpu: list[float] = []
    peaks: list[float] = []
    for _ in range(repeat):
        result = _once(python, who, path)
        if result is None:
            return None
        seconds.append(result["seconds"])
        cpu.append(result["cpu"])
        peaks.append(result["peak_kb"] / 1024)
    return statistics.median(seconds), statistics.median(cpu), statistics.median(peaks)


def main() -> None:
    import argparse
    import shutil
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 5, 9])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hta-python", default=HTA_PYTHON)
    parser.add_argument("--as-tool", action="store_true", help="stepscope as `stepscope tool`")
    parser.add_argument("--source", nargs="+", default=[SOURCE.name], help="fixtures, or all")
    parser.add_argument("--pairs", type=int, default=0, help="paired A/B runs instead")
    parser.add_argument(
        "--events",
        type=int,
        default=0,
        help="instead of --copies: as many copies of each source as make this many events",
    )
    parser.add_argument("--child", nargs=2, metavar=("WHO", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_tool:
        os.environ["BENCH_AS_TOOL"] = "1"  # read by the stepscope children
    if args.child:
        child(*args.child)
        return
    hta = args.hta_python if Path(args.hta_python).exists() else None
    if hta is None:
        print(f"no HTA at {args.hta_python}: timing stepscope only")
    compile_bytecode(hta)
    header = (
        f"{'events':>10} {'JSON MB':>8} {'stepscope s':>12} {'cpu s':>7} {'MB':>6} "
        f"{'HTA s':>8} {'cpu s':>7} {'MB':>6} {'ratio':>6} {'cpu ratio':>9} {'MB/JSON MB':>10}"
    )
    print(header)
    print("-" * len(header))
    sources = sorted(KINETO.glob("*.json.gz")) if args.source == ["all"] else args.source
    runs = [
        (KINETO / str(s), c)
        for s in sources
        for c in ([copies_for(args.events, KINETO / str(s))] if args.events else args.copies)
    ]
    for source, copies in runs:
        workdir = Path(tempfile.mkdtemp(prefix="bench_kineto_"))
        trace = workdir / "rank0.json"
        count = make_trace(copies, trace, source)
        json_mb = trace.stat().st_size / 1e6
        if args.pairs:
            assert hta is not None, "--pairs needs HTA"
            line = paired(hta, str(trace), args.pairs)
            print(f"{source.name} x{copies} ({count:,} events): {line}", flush=True)
            shutil.rmtree(workdir, ignore_errors=True)
            continue
        ours = measure(sys.executable, "stepscope", str(trace), args.repeat) or (0.0, 0.0, 0.0)
        theirs = (measure(hta, "hta", str(trace), args.repeat) if hta else None) or (0, 0, 0)
        ratio = f"{theirs[0] / ours[0]:.1f}x" if ours[0] and theirs[0] else "-"
        cpu_ratio = f"{theirs[1] / ours[1]:.1f}x" if ours[1] and theirs[1] else "-"
        print(
            f"{count:>10,} {json_mb:>8.1f} {ours[0]:>12.2f} {ours[1]:>7.2f} {ours[2]:>6.0f} "
            f"{theirs[0]:>8.2f} {theirs[1]:>7.2f} {theirs[2]:>6.0f} {ratio:>6} {cpu_ratio:>9} "
            f"{ours[2] * 1.048576 / json_mb:>10.2f}",
            flush=True,
        )
        shutil.rmtree(workdir, ignore_errors=True)


def compile_bytecode(hta: str | None) -> None:
    """``.pyc`` files for both sides, as pip installs leave them (the children run with
    PYTHONDONTWRITEBYTECODE unset, so without this the first run of each side compiles)."""
    import subprocess

    from paired import compile_bytecode as ours

    ours()
    if hta:
        code = "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_paths()"
        code += "['purelib'], quiet=1)"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.pop("PYTHONPYCACHEPREFIX", None)
        subprocess.run([hta, "-c", code], check=True, stdout=subprocess.DEVNULL, env=env)


def child(who: str, path: str) -> None:
    """The measured process: one side's figures as JSON on stdout."""
    print(json.dumps(child_stepscope(path) if who == "stepscope" else child_hta(path)))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":  # no argparse in the measured process
        child(sys.argv[2], sys.argv[3])
    else:
        main()
