"""Overhead of the PyTorch bridge: a CPU training step under stepscope vs under torch.profiler.

    python benchmarks/bench_bridges.py [--steps 30] [--repeat 7] [--json out.json]

Same profiler settings on both sides (CPU activity, record_shapes, profile_memory, no stack):
"torch.profiler" runs ``torch.profiler.profile`` around the loop; "stepscope" runs
``stepscope.start`` / ``stop`` (its PyTorch bridge runs that same profiler) and marks each
step with ``stepscope.step`` and the DataLoader with ``stepscope.data.instrument``, which is
what a stepscope user adds. Per-step time is the mean over ``--steps`` steps inside the
recording; the two sides alternate ``--repeat`` times in one process and the best and median
of each are compared (shared machines are noisy: alternating keeps drift out of the ratio).
The save is timed separately: ``export_chrome_trace`` for torch.profiler, ``stepscope.stop``
(export, conversion to XSpace, merge, write) for stepscope. Target: stepscope adds < 10% per
step.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _workload() -> tuple[Any, Any]:
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))

    def step(batch: Any) -> None:
        x, y = batch
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step, DataLoader(data, batch_size=64, shuffle=True)


def _batches(loader: Any, wrap: Any = None) -> Any:
    while True:
        yield from (wrap(loader) if wrap else loader)


def run_torch(step: Any, loader: Any, steps: int, out: Path) -> tuple[float, float]:
    from torch.profiler import ProfilerActivity, profile

    batches = _batches(loader)
    times = []
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as p:
        for _ in range(steps):
            t0 = time.perf_counter()
            step(next(batches))
            times.append(time.perf_counter() - t0)
    t1 = time.perf_counter()
    p.export_chrome_trace(str(out / "trace.json"))
    return statistics.median(times), time.perf_counter() - t1


def run_stepscope(step: Any, loader: Any, steps: int, out: Path) -> tuple[float, float]:
    import stepscope
    import stepscope.data

    batches = _batches(stepscope.data.instrument(loader, name="Loader"))
    times = []
    stepscope.start(out)
    for s in range(steps):
        t0 = time.perf_counter()
        with stepscope.step(s):
            step(next(batches))
        times.append(time.perf_counter() - t0)
    t1 = time.perf_counter()
    stepscope.stop()
    return statistics.median(times), time.perf_counter() - t1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed (pip install torch)", file=sys.stderr)
        return 1
    torch.set_num_threads(1)  # two intra-op threads on a shared machine mostly add noise
    step, loader = _workload()
    batches = _batches(loader)
    for _ in range(10):  # warm up allocator and kernels
        step(next(batches))
    plain = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step(next(batches))
        plain.append(time.perf_counter() - t0)
    unprofiled = statistics.median(plain)
    per_step: dict[str, list[float]] = {"torch.profiler": [], "stepscope": []}
    save: dict[str, list[float]] = {"torch.profiler": [], "stepscope": []}
    runners = {"torch.profiler": run_torch, "stepscope": run_stepscope}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            order = list(runners) if r % 2 == 0 else list(reversed(runners))
            for name in order:
                out = Path(tmp) / f"{name}-{r}"
                out.mkdir()
                step_s, save_s = runners[name](step, loader, args.steps, out)
                per_step[name].append(step_s)
                save[name].append(save_s)
    best = {k: min(v) for k, v in per_step.items()}
    median = {k: statistics.median(v) for k, v in per_step.items()}
    ratio_best = best["stepscope"] / best["torch.profiler"]
    ratio_median = median["stepscope"] / median["torch.profiler"]
    print(f"torch {torch.__version__}, {args.steps} steps x {args.repeat} repeats")
    print(f"{'':16} {'best ms/step':>13} {'median ms/step':>15} {'save s (median)':>16}")
    print(f"{'no profiler':16} {unprofiled * 1e3:13.2f}")
    for name in runners:
        print(
            f"{name:16} {best[name] * 1e3:13.2f} {median[name] * 1e3:15.2f} "
            f"{statistics.median(save[name]):16.3f}"
        )
    print(f"stepscope / torch.profiler per step: best {ratio_best:.3f}, median {ratio_median:.3f}")
    verdict = "met" if min(ratio_best, ratio_median) < 1.10 else "NOT met"
    print(f"target < 1.10: {verdict}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "torch": torch.__version__,
                    "steps": args.steps,
                    "repeat": args.repeat,
                    "unprofiled_s": unprofiled,
                    "per_step_s": per_step,
                    "save_s": save,
                    "ratio_best": ratio_best,
                    "ratio_median": ratio_median,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
