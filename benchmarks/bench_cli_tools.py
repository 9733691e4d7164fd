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
uses less) of CPU and wall, the load average, and each command's median CPU.

``--baseline-src OTHER/src`` pairs this tree's commands with another checkout's (``git
worktree add /tmp/before COMMIT``) instead of xprof-rs: before/after a change, measured the
same way.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
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


# CPU of each of the three commands, per tree (``--baseline-src``: the other tree's too)
PER_COMMAND: dict[str, list[tuple[float, ...]]] = {}


def stepscope(path: Path, workdir: Path, src: str = "") -> Sample:
    target = bench_xspace_peer._fresh_copy(str(path), workdir)
    cache = Path(tempfile.mkdtemp(dir=workdir))
    env = {"STEPSCOPE_CACHE_DIR": str(cache)}
    if src:  # another tree's stepscope (compiled as this one: `paired.compile_bytecode`)
        env["PYTHONPATH"] = src
    wall = cpu = peak = 0.0
    started = time.perf_counter()
    sizes = []
    each = []
    for tool in TOOLS:
        sample, out = paired.spawn([*_stepscope_cli(), "tool", str(target.parent), tool], env)
        cpu += sample.cpu_s
        each.append(sample.cpu_s)
        peak = max(peak, sample.peak_mb)
        sizes.append(len(out))
    PER_COMMAND.setdefault(src or "this tree", []).append(tuple(each))
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
    parser.add_argument(
        "--baseline-src",
        default="",
        help="pair this tree's commands with another tree's src/ instead of xprof-rs "
        "(before/after a change; ratios baseline / this tree)",
    )
    args = parser.parse_args()
    binary = (
        args.xprof_rs or shutil.which("xprof-rs") or str(Path(sys.executable).with_name("xprof-rs"))
    )
    paired.compile_bytecode()
    workdir = Path(tempfile.mkdtemp(prefix="bench_cli_tools_"))
    try:
        for copies in args.copies:
            path = paired.repeated_trace(copies, workdir)
            base = args.baseline_src
            if base:
                paired.compile_bytecode(Path(base))
            result = paired.run_pairs(
                f"big_ctl x{copies}",
                lambda p=path: stepscope(p, workdir),
                (lambda p=path, b=base: stepscope(p, workdir, b))
                if base
                else (lambda p=path: xprof_rs(binary, p, workdir)),
                args.pairs,
            )
            print(result.line(f"baseline {base}" if base else "xprof-rs"), flush=True)
            # every pair, so that a low one can be told apart: which side moved, and how
            ours_each = PER_COMMAND.get("this tree", [])
            for k, (o, t) in enumerate(zip(result.ours, result.theirs, strict=True)):
                each = " + ".join(f"{c:.3f}" for c in ours_each[k]) if k < len(ours_each) else ""
                print(
                    f"  pair {k + 1}: CPU {t.cpu_s / max(o.cpu_s, 1e-9):.2f}x, stepscope "
                    f"{o.cpu_s:.3f} s ({each}), peak {o.peak_mb:.0f} MB; peer {t.cpu_s:.3f} s, "
                    f"peak {t.peak_mb:.0f} MB",
                    flush=True,
                )
            for tree, runs in PER_COMMAND.items():
                medians = [statistics.median(r[k] for r in runs) for k in range(len(TOOLS))]
                shown = ", ".join(f"{t} {m:.3f}" for t, m in zip(TOOLS, medians, strict=True))
                print(f"  {tree}: CPU s per command (median): {shown}", flush=True)
            PER_COMMAND.clear()
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
