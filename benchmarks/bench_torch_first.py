"""What a PyTorch process's first capture costs, in fresh interpreters (issue #30).

    python benchmarks/bench_torch_first.py [--pairs 5] [--steps 200] [--layers 6]
        [--src BASE/src --src src] [--optimizer] [--stepscope-only]

A process's first capture (decision 455), each in a fresh interpreter: the wall and
process CPU time of ``stepscope.start()`` + ``stepscope.stop()`` (the run saved) around
``--steps`` steps of an inference loop (the model of ``--layers`` layers under
``torch.no_grad``, no ``torch.optim``: making an optimizer imports ``torch._inductor``, which
the first start otherwise pays), once for each ``--src`` (stepscope's sources to compare, the
first is the base; default this checkout's), and torch.profiler's defaults
(``prof.start()`` + ``prof.stop()`` + ``export_chrome_trace``); ``--optimizer``: a
``torch.optim.SGD`` is made first, as a training loop does. Each round runs every kind once,
in rotating order; each ratio is of one round's runs (that kind / the base, and torch's / each
stepscope's), with the median and range over ``--pairs`` rounds, and whether
``torch._inductor`` was imported after the capture. ``start`` alone is printed too, in wall and
in the calling thread's CPU (``time.thread_time``): what the training thread waits for before
its first step (decision 1080); ``--stepscope-only`` leaves torch.profiler's runs out. Run it
with Python's bytecode cache on (without ``PYTHONDONTWRITEBYTECODE``, as a user's installed
packages have it): without, every module stepscope imports is compiled at each start, which
multiplies the start's wall (decision 1080); the report says which it was.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench_torch_capture import mlp


def first_child(kind: str, layers: int, steps: int, optimizer: bool) -> None:
    """One fresh process's first capture: prints one JSON line."""
    import torch

    model = mlp(layers)
    if optimizer:
        torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    with torch.no_grad():
        model(x)  # torch's own first-call work, outside the timing
    with tempfile.TemporaryDirectory(prefix="bench_torch_first_") as tmp:
        if kind == "stepscope":
            import stepscope

            begin, stop = (lambda: stepscope.start(tmp)), (lambda: stepscope.stop())
        else:
            from torch.profiler import profile

            prof = profile()

            def begin() -> None:
                prof.start()

            def stop() -> None:
                prof.stop()
                prof.export_chrome_trace(os.path.join(tmp, "trace.json"))

        gc.collect()
        wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
        begin()
        start_wall, start_cpu = time.perf_counter() - wall, time.process_time() - cpu
        start_thread = time.thread_time() - thread
        with torch.no_grad():
            for _ in range(steps):
                model(x)
        wall, cpu = time.perf_counter(), time.process_time()
        stop()
        stop_wall, stop_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        json.dumps(
            {
                "wall": start_wall + stop_wall,
                "cpu": start_cpu + stop_cpu,
                "start_wall": start_wall,
                "start_thread": start_thread,
                "stop_wall": stop_wall,
                "inductor": "torch._inductor" in sys.modules,
                "bytecode": not sys.dont_write_bytecode,
            }
        )
    )


def first_part(args: argparse.Namespace) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sources = args.src or [os.path.join(os.path.dirname(here), "src")]
    kinds = [(f"stepscope {src}", "stepscope", src) for src in sources]
    if not args.stepscope_only:
        kinds.append(("torch.profiler defaults + export", "torch", sources[0]))
    load = os.getloadavg()[0]
    got: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in kinds}
    for r in range(args.pairs):
        for label, kind, src in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
            command = [sys.executable, __file__, "--first-child", kind]
            command += ["--layers", str(args.layers), "--steps", str(args.steps)]
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run(
                command + ["--optimizer"] * args.optimizer,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            got[label].append(json.loads(out.strip().splitlines()[-1]))
    base = kinds[0][0]
    loop = "inference loop" + (" after torch.optim.SGD(...)" if args.optimizer else "")
    print(
        f"first start + stop in a fresh process ({loop}, {args.steps} steps), "
        f"{args.pairs} rounds; ratios to {base}, median (range)"
    )
    for label, _, _ in kinds:
        runs = got[label]
        line = (
            f"  {label}: wall {statistics.median(r['wall'] for r in runs):.3f} s "
            f"(start {statistics.median(r['start_wall'] for r in runs):.3f}, "
            f"range {min(r['start_wall'] for r in runs):.3f}-"
            f"{max(r['start_wall'] for r in runs):.3f}, its thread's CPU "
            f"{statistics.median(r['start_thread'] for r in runs):.3f}; stop "
            f"{statistics.median(r['stop_wall'] for r in runs):.3f}), CPU "
            f"{statistics.median(r['cpu'] for r in runs):.3f} s; torch._inductor imported "
            f"in {sum(r['inductor'] for r in runs)} of {len(runs)}"
        )
        if label != base:
            for what in ("wall", "cpu"):
                ratios = [a[what] / b[what] for a, b in zip(runs, got[base], strict=True)]
                line += (
                    f"; {what} x{statistics.median(ratios):.2f} "
                    f"({min(ratios):.2f}-{max(ratios):.2f})"
                )
        print(line)
    cached = {r["bytecode"] for runs in got.values() for r in runs}
    print(f"  bytecode cache: {' and '.join('on' if c else 'OFF' for c in sorted(cached))}")
    torch_runs = got[kinds[-1][0]]
    for label, _, _ in [] if args.stepscope_only else kinds[:-1]:
        line = f"  torch.profiler / {label}:"
        for what in ("wall", "cpu"):
            ratios = [b[what] / a[what] for a, b in zip(got[label], torch_runs, strict=True)]
            line += (
                f" {what} {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
            )
        print(line)
    print(f"  load average {load:.1f} -> {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="rounds, each kind once a round")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument(
        "--src", action="append", help="stepscope's sources to compare (the first: the base)"
    )
    parser.add_argument("--optimizer", action="store_true", help="make an optimizer first")
    parser.add_argument(
        "--stepscope-only", action="store_true", help="no torch.profiler runs beside"
    )
    parser.add_argument("--first-child", choices=("stepscope", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_child:
        first_child(args.first_child, args.layers, args.steps, args.optimizer)
    else:
        first_part(args)


if __name__ == "__main__":
    main()
