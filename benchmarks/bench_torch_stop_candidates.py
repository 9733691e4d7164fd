"""What could make the PyTorch bridge's stop cheaper for the training thread (issue #19).

    python benchmarks/bench_torch_stop_candidates.py [--steps 100] [--repeat 5]

Same training loop as ``bench_bridge_stop.py`` (100 steps of a small MLP on the CPU). Each
candidate is a ``torch.profiler.profile`` with the bridge's settings (CPU ops,
``profile_memory``, ``record_shapes``) and one change; it records ``--steps`` steps and is
stopped. Reported per candidate, medians over ``--repeat`` rounds (the candidates alternate
within a round, so that drift hits all alike):

- ``stop ms``: the training thread's CPU time (``time.thread_time``) in ``prof.stop()``, and
  the same per 22k events of the bridge's capture (the stop's work is per event);
- ``recording``: the training thread's CPU per recorded step (and unprofiled);
- ``lost``: what the exported Chrome trace no longer has against the bridge's settings
  (argument keys, event categories, memory events), from one export per candidate.

The candidates are torch 2.13's switches that touch the stop: record_shapes off; the two
global switches ``torch._C._profiler._set_record_concrete_inputs_enabled_val`` and
``_set_fwd_bwd_enabled_val`` off; ``_ExperimentalConfig(trace_only=True)``. The last one is
the only way torch lets another thread stop the profiler: ``_ExperimentalConfig(
profile_all_threads=True)`` (a process-wide profiler state), stopped on a helper thread while
the training thread keeps stepping. For it, ``stop ms`` is the training thread's CPU in
handing the stop over, and two more figures say whether the training thread really went on:
the steps it completed while the helper thread was in the stop, against the steps it
completes alone in the same wall time (``_disable_profiler`` holds the GIL).
"""

from __future__ import annotations

import collections
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_bridge_stop import setup

Step = Callable[[], None]


@contextmanager
def _switch(name: str, value: bool) -> Iterator[None]:
    """One of torch's process-wide profiler switches, set for the block (both default on)."""
    import torch

    setter = getattr(torch._C._profiler, name)
    setter(value)
    try:
        yield
    finally:
        setter(True)


def _profiler(record_shapes: bool = True, **experimental: bool) -> Any:
    from torch._C._profiler import _ExperimentalConfig
    from torch.profiler import ProfilerActivity, profile

    config = _ExperimentalConfig(**experimental) if experimental else None
    return profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=record_shapes,
        profile_memory=True,
        experimental_config=config,
    )


def _steps(step: Step, steps: int) -> float:
    """The CPU time of ``steps`` steps per step."""
    started = time.thread_time()
    for _ in range(steps):
        step()
    return (time.thread_time() - started) / steps


def _inline(make: Callable[[], Any], step: Step, steps: int) -> tuple[float, Any, float]:
    """(CPU in the stop, profiler, CPU per recorded step)."""
    prof = make()
    prof.start()
    per_step = _steps(step, steps)
    started = time.thread_time()
    prof.stop()
    return time.thread_time() - started, prof, per_step


def _off_thread(step: Step, steps: int) -> tuple[float, Any, int, int, float]:
    """Stop a process-wide profiler on a helper thread while this thread keeps stepping:
    (CPU spent here handing it over, profiler, steps done during its stop, steps done alone
    in as much wall time, the helper's CPU in the stop)."""
    prof = _profiler(profile_all_threads=True)
    prof.start()
    _steps(step, steps)
    window: dict[str, float] = {}

    def stopper() -> None:
        window["start"] = time.perf_counter()
        cpu = time.thread_time()
        prof.stop()
        window["cpu"] = time.thread_time() - cpu
        window["end"] = time.perf_counter()

    handing = time.thread_time()
    helper = threading.Thread(target=stopper)
    helper.start()
    handed = time.thread_time() - handing
    stamps = []
    while helper.is_alive():
        step()
        stamps.append(time.perf_counter())
    helper.join()
    during = sum(window["start"] <= s <= window["end"] for s in stamps)
    alone, began = 0, time.perf_counter()
    while time.perf_counter() - began < window["end"] - window["start"]:
        step()
        alone += 1
    return handed, prof, during, alone, window["cpu"]


def _shape_of_trace(prof: Any) -> collections.Counter[str]:
    """Counts of what an export holds: events per category, argument keys, memory events."""
    with tempfile.TemporaryDirectory(prefix="bench_stop_cand_") as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    counts: collections.Counter[str] = collections.Counter()
    for event in events:
        counts[f"category {event.get('cat')}"] += 1
        for key in event.get("args", {}):
            counts[f"arg {key!r}"] += 1
    return counts


def _lost(base: collections.Counter[str], other: collections.Counter[str]) -> str:
    gone = [
        f"{key} ({count:,} -> {other.get(key, 0):,})"
        for key, count in base.items()
        if other.get(key, 0) < count
    ]
    return "; ".join(sorted(gone)) or "nothing"


def main() -> None:
    args, step = setup(__doc__)
    steps = args.steps
    candidates: dict[str, Callable[[], tuple[float, Any, float]]] = {
        "bridge settings (record_shapes=True)": lambda: _inline(_profiler, step, steps),
        "record_shapes=False": lambda: _inline(lambda: _profiler(False), step, steps),
        "concrete inputs off": lambda: _with(
            "_set_record_concrete_inputs_enabled_val", step, steps
        ),
        "fwd-bwd flows off": lambda: _with("_set_fwd_bwd_enabled_val", step, steps),
        "trace_only": lambda: _inline(lambda: _profiler(trace_only=True), step, steps),
    }
    cpu: dict[str, list[float]] = {name: [] for name in [*candidates, "off-thread"]}
    recording: dict[str, list[float]] = {name: [] for name in ["unprofiled", *candidates]}
    shapes: dict[str, collections.Counter[str]] = {}
    during: list[int] = []
    alone: list[int] = []
    helper_ms: list[float] = []
    events = 0
    for round_ in range(args.repeat):
        recording["unprofiled"].append(_steps(step, steps) * 1000)
        for name, run in candidates.items():
            spent, prof, per_step = run()
            cpu[name].append(spent * 1000)
            recording[name].append(per_step * 1000)
            if round_ == 0:
                shapes[name] = _shape_of_trace(prof)
                if not events:
                    events = len(prof.profiler.kineto_results.events())
        handed, prof, steps_during, steps_alone, helper = _off_thread(step, steps)
        helper_ms.append(helper * 1000)
        cpu["off-thread"].append(handed * 1000)
        during.append(steps_during)
        alone.append(steps_alone)
        if round_ == 0:
            shapes["off-thread"] = _shape_of_trace(prof)
    base = shapes["bridge settings (record_shapes=True)"]
    print(f"{events:,} events (bridge settings), {args.repeat} rounds")
    print(f"{'candidate':38} {'stop ms':>8} {'per 22k ms':>11}  lost against the bridge's trace")
    for name, values in cpu.items():
        median = statistics.median(values)
        print(
            f"{name:38} {median:>8.1f} {median * 22_000 / max(events, 1):>11.1f}  "
            f"{_lost(base, shapes[name])}"
        )
    print(
        "recording, CPU ms per step: "
        + ", ".join(f"{name} {statistics.median(v):.3f}" for name, v in recording.items())
    )
    print(
        f"off-thread: the helper thread's CPU in the stop {statistics.median(helper_ms):.1f} ms; "
        "training steps completed meanwhile: median "
        f"{statistics.median(during)} (alone in the same wall time: {statistics.median(alone)}); "
        f"all rounds {during} vs {alone}"
    )


def _with(switch: str, step: Step, steps: int) -> tuple[float, Any, float]:
    with _switch(switch, False):
        return _inline(_profiler, step, steps)


if __name__ == "__main__":
    main()
