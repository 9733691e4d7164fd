"""Three tools on one run as a user asks for them: three `stepscope tool` commands against
three requests to one xprof-rs server (issue #30, paired A/B runs).

    python benchmarks/bench_cli_tools.py [--copies 1 2 4 20] [--pairs 7] [--xprof-rs PATH]

stepscope: ``stepscope tool RUN overview_page``, then ``input_pipeline_analyzer``, then
``op_stats``, each a new process of the installed console script (bytecode compiled), on a
fresh copy of the file in a new log directory with an empty store (``STEPSCOPE_CACHE_DIR``):
the first command converts the file and builds the analysis, the next two answer from the
intermediates it kept (`stepscope.tools.kept`). CPU = the three processes' user + system
time, wall = spawn of the first to exit of the third.

xprof-rs 0.1.3 (``pip install xprof-rs``): its server started on a fresh log directory, then
``overview_page``, ``input_pipeline_analyzer`` and ``framework_op_stats`` over HTTP, wall from
spawn to the third answer, CPU the server's (`bench_xspace_peer.xprof_rs`, default threads).

Inputs: the real TensorFlow capture ``tf/big_ctl`` (266k events) and it repeated ``--copies``
times along time (``../shared/tools/tf_rep.py``: flows, step numbers, context ids kept apart).
Prints, per input, the median of per-pair ratios xprof-rs / stepscope (above 1: stepscope
uses less) of CPU and wall, and the load average.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import bench_xspace_peer
import paired
from paired import Sample

TOOLS = ("overview_page", "input_pipeline_analyzer", "op_stats")


def _stepscope_cli() -> list[str]:
    script = Path(sys.executable).with_name("stepscope")
    if script.exists():
        return [str(script)]
    return [
        sys.executable,
        "-c",
        "import sys; from stepscope.cli.main import main; sys.exit(main())",
    ]


def stepscope(path: Path, workdir: Path) -> Sample:
    target = bench_xspace_peer._fresh_copy(str(path), workdir)
    cache = Path(tempfile.mkdtemp(dir=workdir))
    env = {"STEPSCOPE_CACHE_DIR": str(cache)}
    wall = cpu = peak = 0.0
    started = time.perf_counter()
    sizes = []
    for tool in TOOLS:
        sample, out = paired.spawn([*_stepscope_cli(), "tool", str(target.parent), tool], env)
        cpu += sample.cpu_s
        peak = max(peak, sample.peak_mb)
        sizes.append(len(out))
    wall = time.perf_counter() - started
    if min(sizes) < 200:
        raise RuntimeError(f"stepscope answered {sizes} bytes")
    shutil.rmtree(target.parents[3], ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    return Sample(wall, cpu, peak)


def xprof_rs(binary: str, path: Path, workdir: Path) -> Sample:
    wall, cpu, peak = bench_xspace_peer.xprof_rs(binary, str(path), workdir, one_thread=False)
    return Sample(wall, cpu, peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="*", default=[1, 2, 4, 20])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--xprof-rs", default="")
    args = parser.parse_args()
    binary = (
        args.xprof_rs or shutil.which("xprof-rs") or str(Path(sys.executable).with_name("xprof-rs"))
    )
    paired.compile_bytecode()
    workdir = Path(tempfile.mkdtemp(prefix="bench_cli_tools_"))
    try:
        for copies in args.copies:
            path = paired.repeated_trace(copies, workdir)
            result = paired.run_pairs(
                f"big_ctl x{copies}",
                lambda p=path: stepscope(p, workdir),
                lambda p=path: xprof_rs(binary, p, workdir),
                args.pairs,
            )
            print(result.line("xprof-rs"), flush=True)
            print(
                json.dumps(
                    {
                        "copies": copies,
                        "cpu_ratios": result.ratios("cpu_s"),
                        "wall_ratios": result.ratios("wall_s"),
                    }
                ),
                flush=True,
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
