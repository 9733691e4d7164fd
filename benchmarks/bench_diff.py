"""Calibration of `stepscope diff`: how often it flags noise, how often it catches a real
slowdown, against the single-number comparison other tools make.

    python benchmarks/bench_diff.py [--pairs 100]

Pairs of run summaries are made in code (tests/compare/synthetic.py): each step is about
10 ms (input 2 ms, device compute 7 ms, other 1 ms) scaled by 1 + noise * N(0, 1), seeded.
"same": both runs drawn from one distribution; "slow": the candidate's input stage takes
1 ms (10% of the step) longer. For each case the script counts, over ``--pairs`` pairs:

- stepscope: pairs where any metric is flagged (same), or where step_time.median is flagged
  and the input category is named as the driver (slow);
- single number (peer): XProf's comparison shows two average step times; a reader (or a CI
  script) who calls a change above 5% a regression flags the pair when |mean change| > 5%.

With a warm-up (``--pairs`` pairs again): each run's first step compiles, 2 s scaled by
exp(0.5 N(0, 1)) (a compile cache hit or miss: 1.2 to 9 s in one user's torch.compile runs),
counted by stepscope once warm (its default, decision 386), over all steps (``--all-steps``)
and by the single number (mean of all steps).

Also the time of one diff (best of 5).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stepscope.stats.compare import RunDiff, RunSummary, diff_runs
from tests.compare.synthetic import summary, with_warmup

THRESHOLD = 0.05


def case(pairs: int, steps: int, noise: float, extra_ms: float) -> tuple[int, int]:
    ours = naive = 0
    for seed in range(pairs):
        rng = np.random.default_rng(seed)
        a = summary(rng, steps=steps, noise=noise)
        b = summary(rng, steps=steps, noise=noise, extra_input_ms=extra_ms)
        d = diff_runs(a, b)
        mean_change = b.step_dur_ns.mean() / a.step_dur_ns.mean() - 1.0
        if extra_ms:
            median = d.metric("step_time.median")
            ours += bool(median and median.significant and d.driver == "input")
        else:
            ours += bool(d.flagged)
        naive += abs(mean_change) > THRESHOLD
    return ours, naive


def _caught(d: RunDiff, slow: bool) -> bool:
    if not slow:
        return bool(d.flagged)
    median = d.metric("step_time.median")
    return bool(median and median.significant and d.driver == "input")


def warm_case(pairs: int, steps: int, noise: float, extra_ms: float) -> tuple[int, int, int]:
    """Flags once warm, over all steps, and by the single number, for runs whose first step
    compiles for a time that varies from run to run."""
    warm = every = naive = 0
    for seed in range(pairs):
        rng = np.random.default_rng(20_000 + seed)
        compile_ms = 2000.0 * np.exp(0.5 * rng.standard_normal(2))
        a = with_warmup(summary(rng, steps=steps, noise=noise), float(compile_ms[0]))
        b = with_warmup(
            summary(rng, steps=steps, noise=noise, extra_input_ms=extra_ms), float(compile_ms[1])
        )
        warm += _caught(diff_runs(a, b), bool(extra_ms))
        every += _caught(diff_runs(a, b, once_warm=False), bool(extra_ms))
        naive += abs(b.step_dur_ns.mean() / a.step_dur_ns.mean() - 1.0) > THRESHOLD
    return warm, every, naive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    args = parser.parse_args()
    print("| case | steps | noise | stepscope flags | single number > 5% flags |")
    print("|---|---:|---:|---:|---:|")
    for steps, noise in ((50, 0.05), (20, 0.05), (10, 0.10), (5, 0.10), (50, 0.15)):
        for label, extra in (("same", 0.0), ("slow +10%", 1.0)):
            ours, naive = case(args.pairs, steps, noise, extra)
            print(
                f"| {label} | {steps} | {noise:.0%} | {ours}/{args.pairs} | {naive}/{args.pairs} |"
            )
    print()
    print("| with a compile step | steps | noise | once warm | all steps | single number > 5% |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, extra in (("same", 0.0), ("slow +10%", 1.0)):
        warm, every, naive = warm_case(args.pairs, 40, 0.05, extra)
        n = args.pairs
        print(f"| {label} | 40 | 5% | {warm}/{n} | {every}/{n} | {naive}/{n} |")
    rng = np.random.default_rng(0)
    for steps in (50, 1000):
        a, b = summary(rng, steps=steps), summary(rng, steps=steps, extra_input_ms=1.0)
        best = min(_timed(a, b) for _ in range(5))
        print(f"one diff, {steps} steps per run: {best * 1e3:.1f} ms")


def _timed(a: RunSummary, b: RunSummary) -> float:
    start = time.perf_counter()
    diff_runs(a, b)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
