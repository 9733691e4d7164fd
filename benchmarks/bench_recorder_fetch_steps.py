"""The flight recorder's cost on an unmarked DataLoader loop (its fetch hook) against its
cost on the same loop marked with `stepscope.steps` (decision 815).

    python benchmarks/bench_recorder_fetch_steps.py [--pairs 301] [--steps 100] [--step-ms 1]

One process, one recorder left on per phase (started and stopped outside the timing), blocks
alternated as in `bench_recorder_always_on.py` part 1, each block's training-thread CPU
(`thread_time`) against the mean of the plain blocks either side:

- hooked: the plain loop ``for batch in loader:`` whose fetches the recorder's hook turns
  into steps (a marker and the fetch's two input events a step), against the same loop with
  the hook passing this thread by (its wrapper called, nothing recorded);
- marked: the loop over ``stepscope.steps(loader)`` (a marker and the fetch's two events a
  step, the recorder's existing path; the hook stands down at its first step) against the
  plain loop with no hook at all.

Neither body has annotations: both record three events a step. The figure is each phase's
median ratio with its 95% interval. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time

from bench_recorder import calibrate, make_loader, work
from torch_quads import median_interval

import stepscope
import stepscope.recorder as rec


def body(units: int) -> None:
    work(units // 2)
    work(units // 2)


def plain_block(units: int, steps: int) -> float:
    loader = make_loader(steps)
    start = time.thread_time()
    for _batch in loader:
        body(units)
    return time.thread_time() - start


def marked_block(units: int, steps: int, first: int) -> float:
    loader = make_loader(steps)
    start = time.thread_time()
    for _step, _batch in stepscope.steps(loader, start=first):
        body(units)
    return time.thread_time() - start


def hooked(units: int, steps: int, pairs: int, logdir: str) -> tuple[float, ...]:
    recorder = rec.start(logdir)
    hook = recorder.fetch_steps
    if hook is None or not hook._patched:
        raise SystemExit("the recorder's DataLoader hook is not installed (torch missing?)")
    mine, passing = hook.threads, {}
    try:
        for _ in range(10):  # the trigger arms after 60-120 steps
            plain_block(units, steps)
        ratios = []
        gc.collect()
        hook.threads = passing
        before = plain_block(units, steps)
        for _ in range(pairs):
            hook.threads = mine
            on = plain_block(units, steps)
            hook.threads = passing
            after = plain_block(units, steps)
            ratios.append(on / ((before + after) / 2) - 1)
            before = after
        steps_seen = recorder.ring.steps_seen + len(recorder.ring.scan())
    finally:
        hook.threads = mine
        rec.stop()
    return (*median_interval([r * 100 for r in ratios]), steps_seen, hook.errors)


def marked(units: int, steps: int, pairs: int, logdir: str) -> tuple[float, ...]:
    recorder = rec.start(logdir)
    try:
        first = 0
        for _ in range(10):
            marked_block(units, steps, first)
            first += steps
        ratios = []
        gc.collect()
        before = plain_block(units, steps)
        for _ in range(pairs):
            on = marked_block(units, steps, first)
            first += steps
            after = plain_block(units, steps)
            ratios.append(on / ((before + after) / 2) - 1)
            before = after
        steps_seen = recorder.ring.steps_seen + len(recorder.ring.scan())
    finally:
        rec.stop()
    return (*median_interval([r * 100 for r in ratios]), steps_seen, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=301)
    parser.add_argument("--steps", type=int, default=100, help="steps per 1 ms block")
    parser.add_argument("--step-ms", type=float, default=1.0)
    args = parser.parse_args()
    make_loader(1)  # torch's DataLoader loaded before the recorder starts, as in a program
    steps = max(5, round(args.steps / args.step_ms))
    units = calibrate(args.step_ms)
    with tempfile.TemporaryDirectory() as logdir:
        for name, phase in (("hooked", hooked), ("marked", marked)):
            load_before = os.getloadavg()[0]
            median, low, high, seen, errors = phase(units, steps, args.pairs, logdir)
            load_after = os.getloadavg()[0]
            print(
                f"{name}: {args.step_ms:g} ms steps, {args.pairs} pairs of {steps}-step blocks, "
                f"load {load_before:.1f} -> {load_after:.1f}: in the step {median:+.2f}% "
                f"({low:+.2f} .. {high:+.2f}); steps the recorder saw {seen:,.0f}, hook errors "
                f"{errors:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
