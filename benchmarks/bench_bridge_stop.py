"""What `stepscope.stop(wait=False)` costs the training thread with the PyTorch bridge.

    python benchmarks/bench_bridge_stop.py [--steps 100] [--repeat 5]

A CPU training loop (an MLP on random batches, one BLAS thread) runs ``--steps`` steps under
a capture, then the capture is stopped; the training thread's CPU time (``time.thread_time``,
insensitive to other processes on a shared machine) is measured around the stop:

- ``torch.profiler``: ``profile.stop()`` with the bridge's settings (CPU activity,
  ``profile_memory`` and ``record_shapes`` as the bridge resolves them: allocations off on a
  CPU-only capture (decision 960), shapes at their default, off on a CPU-only capture, then
  explicitly on), the part torch requires on the thread that started
  the profiler (``_disable_profiler``);
- ``stepscope``: ``stepscope.stop(wait=False)`` with the bridge (the same torch stop plus
  stepscope's own recorders); the export, import, merge and write run on a background
  thread, timed by ``stepscope.wait()`` (wall clock).

Events: the torch profiler's event count (``kineto_results.events()``) of the same loop.
Figures per 22k events scale the median linearly (the stop's work is per event).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any


def _workload() -> Any:
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def _torch_stop(
    step: Any, steps: int, record_shapes: bool, profile_memory: bool
) -> tuple[float, int]:
    from torch.profiler import ProfilerActivity, profile

    prof = profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=record_shapes,
        profile_memory=profile_memory,
    )
    prof.start()
    for _ in range(steps):
        step()
    started = time.thread_time()
    prof.stop()
    spent = time.thread_time() - started
    inner: Any = prof.profiler  # torch.autograd.profiler.profile, set while recording
    return spent, len(inner.kineto_results.events())


def _stepscope_stop(step: Any, steps: int, settings: Any) -> tuple[float, float]:
    import stepscope
    from stepscope.capture.bridges import configure

    configure("pytorch", torch=settings)
    with tempfile.TemporaryDirectory(prefix="bench_stop_") as logdir:
        stepscope.start(logdir, stepscope.ProfilerOptions(device_tracer_level=1))
        for i in range(steps):
            with stepscope.step(i):
                step()
        started = time.thread_time()
        stepscope.stop(wait=False)
        spent = time.thread_time() - started
        waited = time.perf_counter()
        stepscope.wait()
        return spent, time.perf_counter() - waited


def setup(doc: str) -> tuple[argparse.Namespace, Callable[[], None]]:
    """The command line (``--steps``, ``--repeat``) of a stop benchmark described by ``doc``,
    and its training step, warmed up."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    step = _workload()
    for _ in range(5):
        step()
    return args, step


def main() -> None:
    args, step = setup(__doc__)
    print(
        f"{'record_shapes':>16} {'events':>7} {'torch stop ms':>14} {'stepscope stop ms':>18} "
        f"{'per 22k events ms':>18} {'background save s':>18}"
    )
    from stepscope.capture.bridges.torch_bridge import (
        TorchSettings,
        profile_memory_for,
        record_shapes_for,
    )

    for label, settings in (
        ("default", TorchSettings()),
        ("True", TorchSettings(record_shapes=True)),
    ):
        record_shapes = record_shapes_for(settings, cuda=False)
        torch_ms: list[float] = []
        ours_ms: list[float] = []
        saves: list[float] = []
        events = 0
        for _ in range(args.repeat):  # alternate, so that drift hits both sides alike
            spent, events = _torch_stop(
                step, args.steps, record_shapes, profile_memory_for(settings, cuda=False)
            )
            torch_ms.append(spent * 1000)
            spent, saved = _stepscope_stop(step, args.steps, settings)
            ours_ms.append(spent * 1000)
            saves.append(saved)
        ours = statistics.median(ours_ms)
        print(
            f"{f'{label} ({record_shapes})':>16} {events:>7,} {statistics.median(torch_ms):>14.1f} "
            f"{ours:>18.1f} {ours * 22_000 / max(events, 1):>18.1f} "
            f"{statistics.median(saves):>18.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
