"""An unmarked PyTorch loop under a capture, as a user writes it (issue #30, decision 1005).

    python benchmarks/bench_unmarked_loop.py [--steps 1000] [--first 200] [--runs 1]

``stepscope.start(); for i in range(steps): step(); stepscope.stop(save=False)`` with the MLP
step of bench_torch_capture.py and no ``stepscope.step``: the thread's CPU per step
(``time.thread_time``) in the first ``--first`` steps, in the rest and in the last 100, median
and mean, and the first step after which the capture's fetch probe was gone (-1: never). A
loop over ``range`` enters no frame to fetch, so the probe has nothing to time; before decision
1004 it stayed for its 500,000 events (~850 steps of this loop at +25-30% each).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from bench_torch_capture import workload


def run(steps: int) -> tuple[list[float], int]:
    """The steps' thread CPU and the first step the probe was gone after (-1: never)."""
    import stepscope

    step = workload(6)
    per = [0.0] * steps
    left = -1
    clock = time.thread_time
    with tempfile.TemporaryDirectory(prefix="bench_unmarked_") as logdir:
        stepscope.start(logdir)
        try:
            for i in range(steps):
                t = clock()
                step()
                per[i] = clock() - t
                if left < 0 and sys.getprofile() is None:
                    left = i
        finally:
            stepscope.stop(save=False)
    return per, left


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--first", type=int, default=200)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for _ in range(args.runs):
        per, left = run(args.steps)
        parts = {
            f"0-{args.first - 1}": per[: args.first],
            f"{args.first}-{args.steps - 1}": per[args.first :],
            f"{args.steps - 100}-{args.steps - 1}": per[-100:],
        }
        print(
            "; ".join(
                f"steps {name}: median {statistics.median(p) * 1e6:.0f} us, mean "
                f"{statistics.mean(p) * 1e6:.0f} us"
                for name, p in parts.items()
            )
            + f"; the probe gone after step {left}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
