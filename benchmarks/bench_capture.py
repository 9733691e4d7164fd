"""Capture overhead: annotations (inactive and active) and the Python tracer, against peers.

    python benchmarks/bench_capture.py [--quick]

Measured in one process, best of several repeats, each loop's empty-loop time subtracted:
- ns per ``with stepscope.trace("x"):`` (and ``stepscope.step(i)``) when no session records,
  and per recorded span;
- the same for ``torch.profiler.record_function`` (PyTorch installed) and
  ``tf.profiler.experimental.Trace`` (TensorFlow installed), inactive and inside their
  profiler;
- slowdown of a call-heavy workload (recursive fib + small methods) under stepscope's Python
  tracer (C accelerator and pure Python), cProfile and viztracer (if installed), timing the
  traced workload only (each tool's start/stop excluded);
- cost of the Python stack sampler (`ProfilerOptions.python_sampler_hz`) on training-like
  steps (NumPy and pure Python, a few ms each): step time under a session without sampler,
  with the default rate and faster rates, and under cProfile, configurations interleaved
  within each repeat.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import stepscope
from stepscope.capture.python_tracer import c_backend as python_tracer_c

NAN = float("nan")


def best_of(func: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def ns_per_op(body: Callable[[int], None], n: int, repeat: int) -> float:
    """Best-of time of ``body(n)`` minus an empty loop of n iterations, per iteration."""

    def empty(n: int) -> None:
        for _ in range(n):
            pass

    loop = best_of(lambda: body(n), repeat)
    base = best_of(lambda: empty(n), repeat)
    return max(loop - base, 0.0) / n * 1e9


# One function per case, with the annotation written inline as a user would: a helper taking
# a lambda would add a Python call per span and hide the difference being measured.
def loop_trace(n: int) -> None:
    trace = stepscope.trace
    for _ in range(n):
        with trace("x"):
            pass


def loop_trace_metadata(n: int) -> None:
    trace = stepscope.trace
    for _ in range(n):
        with trace("x", k=1):
            pass


def loop_step(n: int) -> None:
    step = stepscope.step
    for i in range(n):
        with step(i):
            pass


def loop_record_function(n: int) -> None:
    from torch.profiler import record_function

    for _ in range(n):
        with record_function("x"):
            pass


def loop_tf_trace(n: int) -> None:
    import tensorflow as tf  # type: ignore[import-not-found]

    trace = tf.profiler.experimental.Trace
    for _ in range(n):
        with trace("x"):
            pass


@contextlib.contextmanager
def stepscope_recording(logdir: str) -> Iterator[None]:
    stepscope.start(logdir, stepscope.ProfilerOptions(max_events=50_000_000))
    try:
        yield
    finally:
        stepscope.stop(save=False)


def annotation_rows(n: int, repeat: int, logdir: str) -> list[tuple[str, float, float]]:
    """(tool, inactive ns, active ns) per span."""
    rows = []
    for label, body in (
        ("stepscope.trace(name)", loop_trace),
        ("stepscope.trace(name, k=1)", loop_trace_metadata),
        ("stepscope.step(i)", loop_step),
    ):
        inactive = ns_per_op(body, n, repeat)
        with stepscope_recording(logdir):
            active = ns_per_op(body, n // 10, repeat)
        rows.append((label, inactive, active))
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        torch_inactive = ns_per_op(loop_record_function, n // 4, repeat)
        with profile(activities=[ProfilerActivity.CPU]):
            torch_active = ns_per_op(loop_record_function, n // 20, repeat)
        rows.append(
            (f"torch.profiler.record_function ({torch.__version__})", torch_inactive, torch_active)
        )
    except ImportError:
        rows.append(("torch.profiler.record_function (not installed)", NAN, NAN))
    try:
        import tensorflow as tf

        tf_inactive = ns_per_op(loop_tf_trace, n // 4, repeat)
        tf.profiler.experimental.start(os.path.join(logdir, "tf"))
        tf_active = ns_per_op(loop_tf_trace, n // 20, repeat)
        tf.profiler.experimental.stop(save=False)
        rows.append((f"tf.profiler.experimental.Trace ({tf.__version__})", tf_inactive, tf_active))
    except ImportError:
        rows.append(("tf.profiler.experimental.Trace (not installed)", NAN, NAN))
    return rows


# ---- Python tracer ---------------------------------------------------------------------------
class Point:
    def __init__(self, x: float) -> None:
        self.x = x

    def scaled(self, k: float) -> Point:
        return Point(self.x * k)


def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def workload() -> None:
    """About 350k Python calls: deep recursion plus many tiny methods (~40 ms untraced)."""
    for _ in range(5):
        fib(20)
        p = Point(1.0)
        for _ in range(20_000):
            p = p.scaled(1.0)


def traced_time(begin: Callable[[], Any], end: Callable[[Any], None], repeat: int) -> float:
    """Best-of time of the workload alone while a tracer runs (start/stop costs excluded)."""
    best = float("inf")
    for _ in range(repeat):
        handle = begin()
        start = time.perf_counter()
        workload()
        best = min(best, time.perf_counter() - start)
        end(handle)
    return best


def tracer_rows(repeat: int, logdir: str) -> list[tuple[str, float, str]]:
    base = traced_time(lambda: None, lambda _: None, repeat)
    rows: list[tuple[str, float, str]] = [("no tracer", base, "1.00x")]

    def add(label: str, seconds: float) -> None:
        rows.append((label, seconds, f"{seconds / base:.2f}x"))

    def stepscope_begin(pure: bool) -> Callable[[], None]:
        def begin() -> None:
            if pure:
                os.environ["STEPSCOPE_PURE_PYTHON"] = "1"
            options = stepscope.ProfilerOptions(python_tracer_level=1, max_events=10_000_000)
            stepscope.start(logdir, options)
            os.environ.pop("STEPSCOPE_PURE_PYTHON", None)

        return begin

    def stepscope_end(_: object) -> None:
        stepscope.stop(save=False)

    if python_tracer_c.available():
        add(
            "stepscope python_tracer_level=1 (C)",
            traced_time(stepscope_begin(False), stepscope_end, repeat),
        )
    add(
        "stepscope python_tracer_level=1 (pure Python)",
        traced_time(stepscope_begin(True), stepscope_end, repeat),
    )

    def cprofile_begin() -> cProfile.Profile:
        profiler = cProfile.Profile()
        profiler.enable()
        return profiler

    add("cProfile", traced_time(cprofile_begin, lambda p: p.disable(), repeat))
    try:
        import viztracer  # type: ignore[import-not-found]

        def viztracer_begin() -> Any:
            tracer = viztracer.VizTracer(verbose=0, tracer_entries=5_000_000)
            tracer.start()
            return tracer

        def viztracer_end(tracer: Any) -> None:
            tracer.stop()
            tracer.clear()

        add(
            f"viztracer {viztracer.__version__}",
            traced_time(viztracer_begin, viztracer_end, repeat),
        )
    except ImportError:
        rows.append(("viztracer (not installed)", NAN, "-"))
    return rows


# ---- Python stack sampler -------------------------------------------------------------------
def sampler_step(a: Any) -> float:
    """One training-like step: a few small matrix products and a Python metrics loop."""
    for _ in range(3):
        a = a @ a
        a /= float(abs(a).max())
    total = 0.0
    for i in range(20_000):
        total += (i % 7) * 0.5
    return total


def sampler_rows(
    repeat: int, logdir: str, steps: int, rates: tuple[int, ...] = (1000,)
) -> list[tuple[str, float, str, float, str]]:
    """(configuration, wall ms per step, its change, CPU ms per step, its change) against the
    session without sampler. CPU time is the process's (every thread, the sampler's too): on
    a shared machine it moves far less than wall time, so it is the figure that can show a
    2% cost."""
    import numpy as np

    a0 = np.random.default_rng(0).random((96, 96))

    def run_steps() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(steps):
            with stepscope.step(i):
                sampler_step(a0.copy())
        return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps

    def under_stepscope(hz: int) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            stepscope.start(logdir, stepscope.ProfilerOptions(python_sampler_hz=hz))
            try:
                return run_steps()
            finally:
                stepscope.stop(save=False)

        return run

    def under_cprofile() -> tuple[float, float]:
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            return run_steps()
        finally:
            profiler.disable()

    from stepscope.capture.options import DEFAULT_SAMPLER_HZ

    configs: list[tuple[str, Callable[[], tuple[float, float]]]] = [
        ("no session", run_steps),
        ("stepscope, python_sampler_hz=0", under_stepscope(0)),
        (
            f"stepscope, python_sampler_hz={DEFAULT_SAMPLER_HZ} (default)",
            under_stepscope(DEFAULT_SAMPLER_HZ),
        ),
        *(
            (f"stepscope, python_sampler_hz={hz}", under_stepscope(hz))
            for hz in rates
            if hz != DEFAULT_SAMPLER_HZ
        ),
        ("cProfile (deterministic, for scale)", under_cprofile),
    ]
    wall = {label: float("inf") for label, _ in configs}
    cpu = {label: float("inf") for label, _ in configs}
    for _ in range(repeat):
        for label, run in configs:
            w, c = run()
            wall[label], cpu[label] = min(wall[label], w), min(cpu[label], c)
    base_w, base_c = wall["stepscope, python_sampler_hz=0"], cpu["stepscope, python_sampler_hz=0"]
    # The sampler's own time per sample (it holds the GIL meanwhile).
    from stepscope.capture import session

    own: dict[str, float] = {}
    for hz in (DEFAULT_SAMPLER_HZ, 1000):
        stepscope.start(logdir, stepscope.ProfilerOptions(python_sampler_hz=hz))
        sampler = session._session.sampler if session._session else None
        start = time.perf_counter()
        run_steps()
        elapsed = time.perf_counter() - start
        stepscope.stop(save=False)
        if sampler is not None and sampler.samples:
            per_sample_us = sampler.busy_ns / sampler.samples / 1e3
            own[f"sampler's own time at {hz} Hz: {per_sample_us:.1f} µs/sample"] = (
                sampler.busy_ns / 1e9 / elapsed
            )
    nan = float("nan")
    return [
        (
            label,
            wall[label] * 1e3,
            f"{100.0 * (wall[label] - base_w) / base_w:+.1f}%",
            cpu[label] * 1e3,
            f"{100.0 * (cpu[label] - base_c) / base_c:+.1f}%",
        )
        for label, _ in configs
    ] + [
        (label, nan, f"{100.0 * share:.2f}% of step time", nan, "") for label, share in own.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--sampler-only", action="store_true", help="only the sampler table")
    parser.add_argument(
        "--rates", default="1000", help="sampler rates besides the default, e.g. 25,50,1000"
    )
    args = parser.parse_args()
    n, repeat = (200_000, 3) if args.quick else (1_000_000, 7)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; best of {repeat}")
    with tempfile.TemporaryDirectory() as logdir:
        if not args.sampler_only:
            print("\n| annotation | inactive ns/span | active ns/span |\n|---|---:|---:|")
            for label, inactive, active in annotation_rows(n, repeat, logdir):
                print(f"| {label} | {inactive:.0f} | {active:.0f} |")
            print("\n| Python tracer (call-heavy workload) | seconds | slowdown |\n|---|---:|---:|")
            for label, seconds, ratio in tracer_rows(repeat, logdir):
                print(f"| {label} | {seconds:.4f} | {ratio} |")
        print(
            "\n| Python stack sampler (training-like steps) | wall ms/step | vs. sampler off "
            "| CPU ms/step | vs. sampler off |"
        )
        print("|---|---:|---:|---:|---:|")
        rates = tuple(int(r) for r in args.rates.split(",") if r)
        for label, ms, change, cpu_ms, cpu_change in sampler_rows(
            repeat, logdir, 100 if args.quick else 300, rates
        ):
            print(f"| {label} | {ms:.3f} | {change} | {cpu_ms:.3f} | {cpu_change} |")


if __name__ == "__main__":
    main()
