"""The flight recorder left on: its cost at 1 ms steps, resolved to a point on a busy machine.

    python benchmarks/bench_recorder_always_on.py [--pairs 301] [--steps 100] [--step-ms 1]

`bench_recorder.py --part overhead` starts and stops a recorder around each 0.3 s block,
so every block pays a start (threads, the loop's first steps with a new thread buffer)
that a recorder left on pays once, and its 21 pairs resolved +-3-5 points at load 5-12 on
the shared 2-core VM, where the same work's CPU time moves +-10% from block to block. And
two processes in lock-step (one plain, one recording) differed by +-6 points with both
plain (an A/A run, load 12): each process's own layout and core.

Here ONE recorder is started once with its defaults (slow-step trigger on, sampler 10 Hz)
and left on, as a program leaves it, and one process alternates short blocks: plain (the
loop without any stepscope call) and recorded (the same loop under `stepscope.steps` with
three annotations), P R P R ... P. The cost of the recorder is three parts, each measured:

1. in the step: a recorded block's training-thread CPU (`thread_time`) against the mean
   of the plain blocks either side (the median of those ratios, with a distribution-free
   95% interval);
2. the recorder's threads (watchdog, sampler, saver): their CPU per second of wall time
   over the whole run, as a share of the training thread's (both kinds of block share the
   threads, so it is counted apart, not in 1);
3. their wake-ups on the training thread (each takes the GIL from it): plain blocks with
   the recorder on against plain blocks with none, the recorder started and stopped
   between blocks, outside the timing, nothing recorded (paired the same way).

The figure is the sum of the three medians. A step is the one of `bench_recorder.py`: a
PyTorch DataLoader batch (a range without torch), pure-Python work calibrated to
``--step-ms`` of CPU, and in recorded blocks three `stepscope.trace` annotations. The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import tempfile
import time
from typing import Any

from bench_recorder import calibrate, make_loader, recorder_threads_cpu_s, traced_step, work
from torch_quads import median_interval

import stepscope
import stepscope.recorder as rec


def plain_block(units: int, steps: int) -> float:
    """CPU seconds of the training thread for ``steps`` plain steps."""
    loader = make_loader(steps)
    start = time.thread_time()
    for _batch in loader:
        work(units // 2)
        work(units // 2)
    return time.thread_time() - start


def recorded_block(units: int, steps: int, first: int) -> float:
    loader = make_loader(steps)
    start = time.thread_time()
    for _step, _batch in stepscope.steps(loader, start=first):
        traced_step(units)
    return time.thread_time() - start


def _paired(ratios: list[float]) -> tuple[float, float, float]:
    return median_interval([r * 100 for r in ratios])


def in_step(units: int, steps: int, pairs: int, logdir: str) -> dict[str, Any]:
    """Parts 1 and 2: one recorder on throughout, plain and recorded blocks alternated."""
    recorder = rec.start(logdir)
    try:
        first = 0
        for _ in range(10):  # the trigger arms after 60-120 steps; the first passes warm
            recorded_block(units, steps, first)
            first += steps
        threads_before, train_cpu, wall_before = (
            recorder_threads_cpu_s(recorder),
            0.0,
            time.monotonic(),
        )
        ratios = []
        gc.collect()
        before = plain_block(units, steps)
        train_cpu += before
        for _ in range(pairs):
            recorded = recorded_block(units, steps, first)
            first += steps
            after = plain_block(units, steps)
            train_cpu += recorded + after
            ratios.append(recorded / ((before + after) / 2) - 1)
            before = after
        wall = time.monotonic() - wall_before
        threads = recorder_threads_cpu_s(recorder) - threads_before
        status = recorder.status()
    finally:
        rec.stop()
    return {
        "in_step": _paired(ratios),
        # the threads' CPU against the training thread's over the same time
        "threads_pct": threads / train_cpu * 100,
        "threads_per_s_ms": threads / wall * 1e3,
        "saved": len(status["saved"]),
        "armed": status["armed"],
    }


def wake_ups(units: int, steps: int, pairs: int, logdir: str) -> tuple[float, float, float]:
    """Part 3: plain blocks with the recorder on (its threads waking, nothing recorded)
    against plain blocks with none; starts and stops outside the timing."""
    ratios = []
    # nothing is recorded here on purpose: not the "no step seen" warning at each stop
    logging.getLogger("stepscope.recorder").setLevel(logging.ERROR)
    gc.collect()
    before = plain_block(units, steps)
    for _ in range(pairs):
        # nor the plain loop's DataLoader fetches as steps (decision 815): its threads only
        rec.start(logdir, loader_steps=False)
        try:
            time.sleep(0.01)  # its threads started and waiting, as in a long run
            on = plain_block(units, steps)
        finally:
            rec.stop()
        after = plain_block(units, steps)
        ratios.append(on / ((before + after) / 2) - 1)
        before = after
    logging.getLogger("stepscope.recorder").setLevel(logging.NOTSET)
    return _paired(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=301)
    parser.add_argument("--steps", type=int, default=100, help="steps per 1 ms block")
    parser.add_argument("--step-ms", type=float, action="append", help="default: 1 and 20")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as logdir:
        for step_ms in args.step_ms or [1.0, 20.0]:
            # blocks of about the same wall time at either step length
            steps = max(5, round(args.steps / step_ms))
            units = calibrate(step_ms)
            load_before = os.getloadavg()[0]
            r = in_step(units, steps, args.pairs, logdir)
            wake = wake_ups(units, steps, args.pairs, logdir)
            load_after = os.getloadavg()[0]
            step, low, high = r["in_step"]
            total = step + r["threads_pct"] + wake[0]
            print(
                f"{step_ms:g} ms steps, {args.pairs} pairs of {steps}-step blocks, load "
                f"{load_before:.1f} -> {load_after:.1f}: total {total:+.2f}% = in the step "
                f"{step:+.2f}% ({low:+.2f} .. {high:+.2f}) + recorder threads "
                f"{r['threads_pct']:.2f}% ({r['threads_per_s_ms']:.2f} ms CPU a second) + "
                f"their wake-ups {wake[0]:+.2f}% ({wake[1]:+.2f} .. {wake[2]:+.2f}); runs "
                f"saved by the trigger {r['saved']}, armed {r['armed']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
