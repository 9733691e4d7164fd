"""overview_page + input_pipeline_analyzer + op_stats from a cold start, against XProf.

    python benchmarks/bench_analysis.py [--events 1000000] [--repeat 3] [--xprof-python PY]

Cases: the largest TensorFlow fixture (tf/remote) and a synthetic XSpace of ``--events``
events. Each measurement runs in a fresh process that first warms up on a small fixture
(imports, one-time library set-up), then times, for the case's file:

- stepscope: XSpace bytes -> columnar profile (no cache) -> the three tools -> JSON text;
- xprof: ``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` for overview_page,
  input_pipeline_analyzer and framework_op_stats on a fresh copy of the file, in sequence,
  with XProf's saved-result cache on (the second and third tools reuse the op stats the
  first one computed, as stepscope's tools share their intermediates). "xprof, each cold"
  also times each tool alone with the cache off.

Best of ``--repeat``. Prints a table; ratio = xprof / stepscope (above 1: stepscope faster).
XProf runs in ``--xprof-python`` (default: this interpreter if it imports xprof, else
/tmp/xpvenv/bin/python).
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
FIXTURES = ROOT.parent / "shared" / "fixtures" / "tf"
REMOTE = next((FIXTURES / "remote").rglob("*.xplane.pb"), None) if FIXTURES.is_dir() else None
WARMUP = next((FIXTURES / "ctl_opt").rglob("*.xplane.pb"), None) if FIXTURES.is_dir() else None
XPROF_TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats")
STEPSCOPE_TOOLS = ("overview_page", "input_pipeline_analyzer", "op_stats")


def child_stepscope(path: str) -> dict[str, float]:
    from stepscope.model.runs import single_file_run
    from stepscope.tools import output
    from stepscope.tools.context import ProfileStore, ToolContext
    from stepscope.tools.registry import get_tool

    def once(file: str) -> tuple[float, int]:
        started = time.perf_counter()
        run = single_file_run(file)
        ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False))
        size = 0
        for tool in STEPSCOPE_TOOLS:
            size += len(json.dumps(output.to_json(get_tool(tool).build(ctx))))
        return time.perf_counter() - started, size

    if WARMUP:
        once(str(WARMUP))
    seconds, size = once(path)
    return {"seconds": seconds, "bytes": size}


def child_xprof(path: str, mode: str) -> dict[str, float]:
    from xprof.convert import raw_to_tool_data

    folders: list[str] = []

    def fresh(file: str) -> str:
        folders.append(tempfile.mkdtemp(prefix="bench_xprof_"))
        target = os.path.join(folders[-1], "host.xplane.pb")
        shutil.copy(file, target)
        return target

    def once(file: str) -> tuple[float, int]:
        total, size = 0.0, 0
        target = fresh(file)
        for tool in XPROF_TOOLS:
            if mode == "cold":
                target = fresh(file)
            started = time.perf_counter()
            data, _ = raw_to_tool_data.xspace_to_tool_data(
                [target], tool, {"use_saved_result": mode == "shared"}
            )
            total += time.perf_counter() - started
            size += len(data or b"")
        return total, size

    if WARMUP:
        once(str(WARMUP))
    seconds, size = once(path)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return {"seconds": seconds, "bytes": size}


def measure(python: str, mode: str, path: str, repeat: int) -> float | None:
    best = None
    for _ in range(repeat):
        done = subprocess.run(
            [python, __file__, "--child", mode, path],
            capture_output=True,
            text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "GLOG_minloglevel": "3"},
        )
        if done.returncode:
            print(f"{mode} failed on {path}:\n{done.stderr[-2000:]}", file=sys.stderr)
            return None
        seconds = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
        best = seconds if best is None else min(best, seconds)
    return best


def xprof_python(requested: str | None) -> str | None:
    candidates = [requested] if requested else [sys.executable, "/tmp/xpvenv/bin/python"]
    for python in candidates:
        if python and (Path(python).exists() or shutil.which(python)):
            check = subprocess.run([python, "-c", "import xprof"], capture_output=True)
            if check.returncode == 0:
                return python
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--xprof-python", help="a Python that imports xprof (2.24.2 measured)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, path = args.child
        result = child_stepscope(path) if mode == "stepscope" else child_xprof(path, mode)
        print(json.dumps(result))
        return

    from tests.support.synthetic import synthetic_xspace_bytes

    workdir = Path(tempfile.mkdtemp(prefix="bench_analysis_"))
    synthetic = workdir / "synthetic.xplane.pb"
    synthetic.write_bytes(synthetic_xspace_bytes(args.events))
    cases = [(f"synthetic {args.events / 1e6:g}M events", str(synthetic))]
    if REMOTE:
        cases.insert(0, ("tf/remote (57k events)", str(REMOTE)))
    xprof = xprof_python(args.xprof_python)
    if xprof is None:
        print("xprof not importable: timing stepscope only (pip install xprof==2.24.2)")
    header = (
        f"{'case':<28} {'stepscope s':>12} {'xprof s':>9} {'ratio':>7} {'xprof, each cold s':>19}"
    )
    print(header)
    print("-" * len(header))
    for label, path in cases:
        ours = measure(sys.executable, "stepscope", path, args.repeat)
        shared = measure(xprof, "shared", path, args.repeat) if xprof else None
        cold = measure(xprof, "cold", path, args.repeat) if xprof else None
        ratio = f"{shared / ours:.1f}x" if ours and shared else "-"
        print(f"{label:<28} {ours or 0:>12.3f} {shared or 0:>9.3f} {ratio:>7} {cold or 0:>19.3f}")
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
