"""Flight recorder: overhead left on, and memory over 100,000 steps.

    python benchmarks/bench_recorder.py [--quick]

Overhead (the recorder's defaults, slow-step trigger on, as a user leaves it: the saves it
makes are counted and paid in the blocks, under one rate limit for the whole run as one
recorder left on has it; ``--no-slow-trigger`` for the steady state): a
training-like loop (a PyTorch DataLoader when torch is installed, else a
generator; three `stepscope.trace` annotations per step; a fixed amount of pure-Python work
per step, calibrated to 1 ms and to 20 ms) run in blocks, once as the plain loop without any
stepscope call and once under `stepscope.recorder` with its defaults (the stack sampler at
its 10 Hz included). Blocks alternate A B A B ... A; the figure is the median over repeats
of (recorded block / mean of the plain blocks either side) - 1, per step, in CPU time: the
training thread's plus the recorder's own threads' (wall time on a shared machine is
dominated by other processes). The work holds the GIL, the worst case for the recorder's
threads. The load average is printed before and after. A breakdown first measures where a
recorded step's cost goes (annotation, step marker with its input stage, watchdog scan per
step, sampler time per sample).

Memory: 100,000 short steps (three annotations each) under the recorder with tracemalloc
on, sampled every 10,000 steps: with the default keep_steps=50, and with keep_steps so large
that only max_bytes (4 MiB) bounds the ring. The step summaries (100,000 kept) are counted
separately: they are bounded by ``history_steps``, not ``max_bytes``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable
from typing import Any

from bench_torch_capture import median_interval

import stepscope
import stepscope.recorder as rec

# CPU time, not wall time: on a shared machine other processes' load moved wall-clock blocks
# by +-50%. The training thread's own CPU time (`thread_time`) plus the CPU time of the
# recorder's threads (watchdog, sampler, saver: read from their per-thread clocks), so the
# figure is what the recorder costs whoever runs the step, not the noise of other threads.
CLOCK = time.thread_time


def recorder_threads_cpu_s(recorder: rec.Recorder) -> float:
    threads = [recorder._watchdog, recorder._saver.thread]
    sampler = recorder.session.sampler
    if sampler is not None and sampler._worker is not None:
        threads.append(sampler._worker)
    total = 0.0
    for thread in threads:
        if thread.ident is not None and thread.is_alive():
            total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return total


def work(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def traced_step(n: int) -> None:
    """One step's body as a user annotates it: forward and backward (``n`` units of `work`
    in all) and an empty optimizer span."""
    with stepscope.trace("forward"):
        work(n // 2)
    with stepscope.trace("backward"):
        work(n // 2)
    with stepscope.trace("optimizer"):
        pass


def calibrate(step_ms: float) -> int:
    """Iterations of `work` taking about ``step_ms``."""
    n = 10_000
    while True:
        start = CLOCK()
        work(n)
        took = CLOCK() - start
        if took > 0.01:
            return max(1, int(n * step_ms / 1e3 / took))
        n *= 2


def make_loader(steps: int) -> Iterable[Any]:
    try:
        import torch
        from torch.utils.data import DataLoader, Dataset
    except ImportError:
        return range(steps)

    class Numbers(Dataset[Any]):
        def __len__(self) -> int:
            return steps

        def __getitem__(self, i: int) -> Any:
            return torch.tensor([i])

    return DataLoader(Numbers(), batch_size=1, num_workers=0)


def plain_block(loader: Iterable[Any], n: int) -> float:
    start = CLOCK()
    count = 0
    for _batch in loader:
        work(n // 2)
        work(n // 2)
        count += 1
    return (CLOCK() - start) / count


# Steady state: no trigger fires (a loaded machine makes slow steps; a save is measured apart).
NO_SLOW = rec.Triggers(slow_step_factor=0)
# The overhead blocks: the recorder's defaults, slow-step trigger on, as a user leaves it
# (issue #30); `--no-slow-trigger` measures the steady state without saves.
OVERHEAD_TRIGGERS: list[rec.Triggers | None] = [None]
SAVES = [0]  # runs saved by the slow-step trigger during the overhead blocks
# The time of each trigger's last save, shared by the recorders of all blocks: a recorder
# left on is ONE recorder, whose rate limit (one automatic save per trigger per
# min_interval_s) spans the whole run; a fresh one per 0.3 s block would save in every block
# a load spike hits, a thousand times the rate a program left running can.
RATE_LIMIT_STATE: dict[str, float] = {}


def recorded_block(
    loader: Iterable[Any], n: int, logdir: str, save_at: int = -1, **settings: Any
) -> float:
    triggers = settings.pop("triggers", NO_SLOW)
    recorder = rec.start(logdir, triggers=triggers, **settings)
    recorder._last_save = RATE_LIMIT_STATE
    try:
        start = CLOCK()
        background = recorder_threads_cpu_s(recorder)
        count = 0
        for step, _batch in stepscope.steps(loader):
            if step == save_at:
                rec.save("benchmark")
            traced_step(n)
            count += 1
        took = (CLOCK() - start + recorder_threads_cpu_s(recorder) - background) / count
    finally:
        rec.stop()
    return took


def _runs(logdir: str) -> int:
    root = os.path.join(logdir, "plugins", "profile")
    return len(os.listdir(root)) if os.path.isdir(root) else 0


def overhead(
    step_ms: float, steps: int, repeats: int, logdir: str, **settings: Any
) -> dict[str, float]:
    """Plain and recorded blocks alternated A B A B ... A: each recorded block is compared
    with the mean of the plain blocks either side of it (the machine's drift cancels)."""
    n = calibrate(step_ms)
    ratios, plain_s, recorded_s = [], [], []
    gc.collect()
    before = plain_block(make_loader(steps), n)
    for _ in range(repeats):
        gc.collect()
        saved_before = _runs(logdir)
        recorded = recorded_block(
            make_loader(steps), n, logdir, triggers=OVERHEAD_TRIGGERS[0], **settings
        )
        SAVES[0] += _runs(logdir) - saved_before
        gc.collect()
        after = plain_block(make_loader(steps), n)
        plain_s.append(after)
        recorded_s.append(recorded)
        ratios.append(recorded / ((before + after) / 2) - 1)
        before = after
    _mid, low, high = median_interval([r * 100 for r in ratios])
    return {
        "step_ms": statistics.median(plain_s) * 1e3,
        "recorded_ms": statistics.median(recorded_s) * 1e3,
        "overhead_pct": statistics.median(ratios) * 100,
        "min_pct": min(ratios) * 100,
        "max_pct": max(ratios) * 100,
        "low_pct": low,  # a distribution-free 95% interval of the median
        "high_pct": high,
    }


def breakdown(logdir: str, n: int = 20_000) -> dict[str, float]:
    """Where a recorded step's cost goes, in ns (best of 5 loops each, recorder on, no
    sampler): one annotation, one step of `stepscope.steps` over a plain iterator (its
    marker and the input stage's two events), the watchdog's scan per step, and the
    sampler's time holding the GIL per sample."""

    def best(loop: Callable[[int], object]) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter_ns()
            loop(n)
            times.append((time.perf_counter_ns() - start) / n)
        return min(times)

    def spans(k: int) -> None:
        for _ in range(k):
            with stepscope.trace("forward"):
                pass

    def loop_steps(k: int) -> None:
        for _step, _batch in stepscope.steps(range(k)):
            pass

    def loop_plain(k: int) -> None:
        for _batch in range(k):
            pass

    out = {"plain_iteration_ns": best(loop_plain)}
    recorder = rec.start(logdir, sampler_hz=0, triggers=NO_SLOW, poll_s=10)
    recorder._wake_at = 1 << 62  # no early wake-up in these tight loops: the scan is apart
    try:
        out["annotation_ns"] = best(spans)
        out["step_ns"] = best(loop_steps) - out["plain_iteration_ns"]
        scans = []
        for _ in range(20):
            for step in range(100):  # 100 steps of 5 events each, then one scan
                with stepscope.step(step):
                    for _k in range(4):
                        with stepscope.trace("x"):
                            pass
            start = time.perf_counter_ns()
            recorder.tick()
            scans.append((time.perf_counter_ns() - start) / 100)
        out["watchdog_ns_per_step"] = statistics.median(scans)
    finally:
        rec.stop()
    recorder = rec.start(logdir, sampler_hz=100, triggers=NO_SLOW)
    try:
        units = calibrate(1.0)
        for _step, _batch in stepscope.steps(range(500)):
            work(units)
        sampler = recorder.session.sampler
        assert sampler is not None
        out["sample_ns"] = sampler.busy_ns / max(1, sampler.samples)
    finally:
        rec.stop()
    return out


def save_cost(step_ms: float, steps: int, repeats: int, logdir: str) -> float:
    """Training time lost to one save (snapshot on the step, build and write on the saver
    thread, which competes for the GIL): paired blocks with and without a save, in ms."""
    n = calibrate(step_ms)
    lost = []
    for _ in range(repeats):
        without = recorded_block(make_loader(steps), n, logdir) * steps
        with_save = recorded_block(make_loader(steps), n, logdir, save_at=steps // 4) * steps
        lost.append(with_save - without)
    return statistics.median(lost) * 1e3


def memory(steps: int, logdir: str, **settings: Any) -> dict[str, float]:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    recorder = rec.start(logdir, sampler_hz=0, triggers=NO_SLOW, **settings)
    samples = []
    try:
        for step in range(steps):
            with stepscope.step(step):
                with stepscope.trace("forward"):
                    pass
                with stepscope.trace("backward", layer=3):
                    pass
            if step % 10_000 == 9_999:
                time.sleep(0.25)  # let the watchdog catch up, as it would between steps
                samples.append(tracemalloc.get_traced_memory()[0] - base)
        history = len(recorder.ring.history)
        ring_bytes = recorder.ring.estimated_bytes()
        ring_events = sum(len(b.events) for b in recorder.session.host.buffers())
    finally:
        rec.stop()
        tracemalloc.stop()
    return {
        "first_mib": samples[0] / 2**20,
        "last_mib": samples[-1] / 2**20,
        "max_mib": max(samples) / 2**20,
        "ring_events": ring_events,
        "ring_estimated_mib": ring_bytes / 2**20,
        "history_steps": history,
    }


PARTS = ("breakdown", "overhead", "save", "memory")
OPTIONAL_PARTS = ("rates",)  # only when asked for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    parser.add_argument(
        "--no-slow-trigger", action="store_true", help="overhead blocks without the trigger"
    )
    parser.add_argument(
        "--part", choices=PARTS + OPTIONAL_PARTS, action="append", help="only these (repeat)"
    )
    args = parser.parse_args()
    parts = args.part or PARTS
    if args.no_slow_trigger:
        OVERHEAD_TRIGGERS[0] = NO_SLOW
    with tempfile.TemporaryDirectory() as logdir:
        print(f"== load average before: {os.getloadavg()[0]:.2f} (1 min)")
        if "breakdown" in parts:
            print("== where a recorded step's cost goes (ns)")
            for key, value in breakdown(logdir).items():
                print(f"{key}: {value:,.0f}")
        if "overhead" in parts:
            print("== overhead of the recorder left on (median of paired blocks)")
            # short blocks, many pairs: a shared machine's load changes within seconds
            for step_ms, steps in ((1.0, 300), (20.0, 25)):
                repeats = 5 if args.quick else 21
                r = overhead(step_ms, steps, repeats, logdir)
                print(
                    f"{step_ms:>5.0f} ms (calibrated) steps: plain {r['step_ms']:.3f} ms, "
                    f"recorded {r['recorded_ms']:.3f} ms, overhead {r['overhead_pct']:+.2f}% "
                    f"(95% interval of the median {r['low_pct']:+.2f}% .. {r['high_pct']:+.2f}%;"
                    f" range {r['min_pct']:+.2f}% .. {r['max_pct']:+.2f}%)"
                )
            print(f"== load average after: {os.getloadavg()[0]:.2f} (1 min)")
            print(f"== runs saved by the slow-step trigger during the blocks: {SAVES[0]}")
        if "rates" in parts:
            print("== sampler rate at 1 ms steps (median of paired blocks, 11 pairs)")
            for hz in (0, 10, 20, 100):
                r = overhead(1.0, 300, 11, logdir, sampler_hz=hz)
                print(
                    f"sampler_hz={hz}: overhead {r['overhead_pct']:+.2f}% "
                    f"(range {r['min_pct']:+.2f}% .. {r['max_pct']:+.2f}%)"
                )
            print(f"== load average after: {os.getloadavg()[0]:.2f} (1 min)")
        if "save" in parts:
            cost = save_cost(1.0, 1000, 3 if args.quick else 7, logdir)
            print(f"one save (keep_steps=50, 1 ms steps): {cost:+.1f} ms of training time")
        if "memory" in parts:
            print("== memory over 100,000 steps (tracemalloc, every 10,000 steps)")
            steps = 20_000 if args.quick else 100_000
            for label, settings in (
                ("keep_steps=50 (default)", {}),
                ("keep_steps=10**6, max_bytes=4 MiB", {"keep_steps": 10**6, "max_bytes": 4 << 20}),
            ):
                m = memory(steps, logdir, **settings)
                print(
                    f"{label}: traced {m['first_mib']:.1f} MiB after 10k steps, "
                    f"{m['last_mib']:.1f} MiB at the end, max {m['max_mib']:.1f} MiB; ring "
                    f"{m['ring_events']:.0f} events (~{m['ring_estimated_mib']:.2f} MiB est.), "
                    f"{m['history_steps']:.0f} step summaries"
                )


if __name__ == "__main__":
    main()
