"""The flight recorder's in-step cost at 1 ms steps, step by step: resolves 1-2 us at load 5-12.

    python benchmarks/bench_recorder_per_step.py [--pairs 1500] [--block 8] [--step-ms 1] [--aa]

`bench_recorder_always_on.py` times 100-step blocks: one CPU reading per block, 301 pairs,
and its "in the step" part read +-2-3 points (20-30 us of a 1 ms step) at load 5-12, too wide
to tell a change of a few microseconds. Here each step is read on its own:

- ONE recorder with its defaults is left on, and ONE DataLoader iterator (a range without
  torch) feeds every block, so plain and recorded steps fetch the same way from the same
  state; a recorded step is `stepscope.steps` over it with the three `stepscope.trace`
  annotations of `bench_recorder.traced_step` (none with ``--no-annotations``: a loop that
  only marks its steps, as most users write it), a plain step the same work without them.
- Blocks of ``--block`` steps, plain and recorded, in random order within each pair, so a
  drift of the machine's speed (the other tenants) falls on both kinds alike.
- A step is the training thread's CPU (`thread_time_ns`) from one loop-body start to the
  next: its body, the previous step's close, its own open and its fetch. The first step of
  each block is left out (the block's set-up: a new `steps` wrapper), as is the last (its
  close is the block's end). The same two clock reads per step on both sides.
- Each step is also split in two: "between bodies" (fetch and step boundary: where
  `stepscope.steps` and the input stage's events are written) and "body" (the work and the
  annotations).

``--parts`` instead times the pieces of an annotation inside real steps (a `stepscope.steps`
loop with the recorder on, ``--step-ms`` of work in each): ``perf_counter_ns`` read around
the `with` line (enter) and around its end (exit), for a `stepscope.trace` annotation, the
least an event can cost (two clock reads and one tuple appended to a list), nothing (the
reads alone), and a span object made without recording; kinds in random order, medians.
Beside 1 ms of work each piece costs several times what it costs in a tight loop (its
memory is no longer in the caches): this is where the in-step cost is found.

The figure: per pair, the recorded block's mean step minus the plain block's; the median of
those differences with a distribution-free 95% interval (order statistics), and their mean
with a normal 95% interval; in microseconds and as a share of the plain step's median. The
median's interval is about +-5 us with 1,500 pairs of 8 steps (80 s) and +-2-3 us with
8,000 (about 8 minutes) at load 5-7; ``--aa`` runs both blocks plain (an A/A run: it must
read 0 within its interval; 8,000 pairs read +1.35 us, -0.52 .. +3.29). The two parts of
the step are medians of single steps with bootstrap intervals. (The median of single whole
steps is not the figure: the A/A run read +5.0 us, +1.3 .. +8.6, the step times having
several modes as the machine's speed changes.) Garbage collections per 1,000
steps and their CPU are counted by kind of block (`gc.callbacks`). The recorder's own threads
and their wake-ups are parts 2 and 3 of `bench_recorder_always_on.py`, not measured here.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import logging
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench_recorder import calibrate, traced_step, work
from torch_quads import median_interval

import stepscope
import stepscope.recorder as rec

clock = time.thread_time_ns


def endless_loader() -> Iterator[Any]:
    """One DataLoader pass long enough for the whole run (a range without torch)."""
    try:
        import torch
        from torch.utils.data import DataLoader, Dataset
    except ImportError:
        return iter(range(10**12))

    class Numbers(Dataset[Any]):
        def __len__(self) -> int:
            return 10**12

        def __getitem__(self, i: int) -> Any:
            return torch.tensor([i])

    return iter(DataLoader(Numbers(), batch_size=1, num_workers=0))


class Steps:
    """Per-step readings of one kind of block: (between bodies, body) in ns."""

    def __init__(self) -> None:
        self.between: list[int] = []
        self.body: list[int] = []
        self.block_means: list[float] = []
        self.gc_ns = 0
        self.gc_collections = [0, 0, 0]

    def add_block(self, starts: list[int], ends: list[int]) -> None:
        # steps 1 .. n-2: step i runs from body start i to body start i+1
        steps = [b - a for a, b in itertools.pairwise(starts[1:])]
        self.block_means.append(statistics.fmean(steps))
        self.between += [s - e for e, s in zip(ends[1:-1], starts[2:], strict=True)]
        self.body += [e - s for s, e in zip(starts[1:-1], ends[1:-1], strict=True)]


class _NoOp:
    """A context manager whose enter and exit are C builtins (as `trace`'s when nothing
    records): the plain step keeps `traced_step`'s shape, calls and frame depths."""

    __enter__ = "".format
    __exit__ = "".format


NOOP = _NoOp()


def untraced_step(n: int) -> None:
    """`bench_recorder.traced_step` without stepscope: the same code where the work runs.
    Without it, the same `work` called from two different functions differed by -10 ..
    +54 us a 1 ms step in one process (the code's place, not what it does)."""
    with NOOP:
        work(n // 2)
    with NOOP:
        work(n // 2)
    with NOOP:
        pass


def plain_block(batches: Iterator[Any], n: int, units: int) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    for _batch in itertools.islice(batches, n):
        starts.append(clock())
        untraced_step(units)
        ends.append(clock())
    return starts, ends


BODIES: dict[str, Callable[[int], None]] = {"annotated": traced_step, "bare": untraced_step}


def recorded_block(
    batches: Iterator[Any], n: int, units: int, first: int, body: str = "annotated"
) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    step_body = BODIES[body]
    for _step, _batch in stepscope.steps(itertools.islice(batches, n), start=first):
        starts.append(clock())
        step_body(units)
        ends.append(clock())
    return starts, ends


def _aa_block(batches: Iterator[Any], n: int, units: int, first: int, body: str) -> Any:
    return plain_block(batches, n, units)


def run(pairs: int, block: int, units: int, aa: bool, body: str) -> dict[str, Any]:
    batches = endless_loader()
    plain, recorded = Steps(), Steps()
    second: Callable[..., Any] = _aa_block if aa else recorded_block
    current = [plain]
    gc_start = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_start[0] = clock()
        else:
            current[0].gc_ns += clock() - gc_start[0]
            current[0].gc_collections[info["generation"]] += 1

    with tempfile.TemporaryDirectory() as logdir:
        rec.start(logdir)
        gc.callbacks.append(on_gc)
        try:
            first = 0
            for _ in range(20):  # warm: the trigger arms after 60-120 steps
                recorded_block(batches, block, units, first)
                first += block
            load_before = os.getloadavg()[0]
            for _ in range(pairs):
                order = [False, True]
                random.shuffle(order)
                for is_recorded in order:
                    current[0] = recorded if is_recorded else plain
                    if is_recorded:
                        recorded.add_block(*second(batches, block, units, first, body))
                        first += block
                    else:
                        plain.add_block(*plain_block(batches, block, units))
            load_after = os.getloadavg()[0]
        finally:
            gc.callbacks.remove(on_gc)
            rec.stop()
    return {"plain": plain, "recorded": recorded, "load": (load_before, load_after)}


def median_difference(a: list[int], b: list[int], rounds: int = 400) -> tuple[float, ...]:
    """median(b) - median(a) in us, with a 95% bootstrap interval (both sides resampled)."""
    rng = random.Random(7)
    est = (statistics.median(b) - statistics.median(a)) / 1e3
    boots = sorted(
        (statistics.median(rng.choices(b, k=len(b))) - statistics.median(rng.choices(a, k=len(a))))
        / 1e3
        for _ in range(rounds)
    )
    return est, boots[int(rounds * 0.025)], boots[int(rounds * 0.975) - 1]


def report(step_ms: float, pairs: int, block: int, aa: bool, r: dict[str, Any]) -> str:
    plain, recorded = r["plain"], r["recorded"]
    diffs = [(b - a) / 1e3 for a, b in zip(plain.block_means, recorded.block_means, strict=True)]
    step_us = (
        statistics.median([a + b for a, b in zip(plain.between, plain.body, strict=True)]) / 1e3
    )
    median, low, high = median_interval(diffs)
    mean = statistics.fmean(diffs)
    half = 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5

    def pct(us: float) -> str:
        return f"{us / step_us * 100:+.2f}%"

    def split(name: str, a: list[int], b: list[int]) -> str:
        est, lo, hi = median_difference(a, b)
        return f"{name} {statistics.median(a) / 1e3:.1f} us {est:+.2f} ({lo:+.2f} .. {hi:+.2f})"

    n = max(1, len(plain.between))
    gc_line = ", ".join(
        f"{kind}: {[round(c * 1000 / n, 2) for c in s.gc_collections]} per 1000 steps, "
        f"{s.gc_ns / n / 1e3:.2f} us a step"
        for kind, s in (("plain", plain), ("recorded", recorded))
    )
    return (
        f"{step_ms:g} ms steps{' (A/A: both plain)' if aa else ''}, {pairs} pairs of "
        f"{block}-step blocks ({len(diffs) * (block - 2)} steps a side), load "
        f"{r['load'][0]:.1f} -> {r['load'][1]:.1f}; plain step median {step_us:.1f} us\n"
        f"  in the step (per pair of blocks, recorded - plain mean step): median {median:+.2f} us"
        f" ({low:+.2f} .. {high:+.2f}) = {pct(median)} ({pct(low)} .. {pct(high)}); mean "
        f"{mean:+.2f} us (+-{half:.2f}) = {pct(mean)}\n"
        f"  {split('between bodies', plain.between, recorded.between)}; "
        f"{split('body', plain.body, recorded.body)}\n"
        f"  gc {gc_line}"
    )


def parts(pairs: int, units: int) -> str:
    """Enter and exit of an annotation against the least an event costs, inside 1 ms steps."""
    from stepscope.capture import annotations

    pc = time.perf_counter_ns
    sink: list[Any] = []
    span_class = annotations._Span
    kinds = ("nothing", "least event", "span object", "trace")
    enter: dict[str, list[int]] = {k: [] for k in kinds}
    leave: dict[str, list[int]] = {k: [] for k in kinds}
    half = units // 2

    def step(kind: str) -> None:
        if kind == "trace":
            a = pc()
            with stepscope.trace("forward"):
                b = pc()
                work(half)
                c = pc()
            d = pc()
        elif kind == "least event":
            a = pc()
            start = pc()
            b = pc()
            work(half)
            c = pc()
            sink.append(("forward", start, pc(), 0, None))
            d = pc()
        elif kind == "span object":
            a = pc()
            span_class("forward", None)
            b = pc()
            work(half)
            c = pc()
            d = pc()
        else:
            a = pc()
            b = pc()
            work(half)
            c = pc()
            d = pc()
        enter[kind].append(b - a)
        leave[kind].append(d - c)
        work(half)
        if len(sink) > 100_000:
            del sink[:50_000]

    with tempfile.TemporaryDirectory() as logdir:
        rec.start(logdir)
        try:
            first = 0
            load_before = os.getloadavg()[0]
            for _ in range(pairs):
                order = list(kinds)
                random.shuffle(order)
                for kind in order:
                    for _step, _ in stepscope.steps(range(8), start=first):
                        step(kind)
                    first += 8
            load_after = os.getloadavg()[0]
        finally:
            rec.stop()
    lines = [f"{pairs} rounds of 8 steps a kind, load {load_before:.1f} -> {load_after:.1f}:"]
    for kind in kinds:
        lines.append(
            f"  {kind:12s} enter {statistics.median(enter[kind]) / 1e3:.2f} us, "
            f"exit {statistics.median(leave[kind]) / 1e3:.2f} us (medians)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1500)
    parser.add_argument("--block", type=int, default=8, help="steps per block (3 or more)")
    parser.add_argument("--step-ms", type=float, default=1.0)
    parser.add_argument("--aa", action="store_true", help="both blocks plain (A/A)")
    parser.add_argument("--parts", action="store_true", help="an annotation's pieces, cold")
    parser.add_argument(
        "--no-annotations",
        action="store_true",
        help="recorded steps without the three annotations (a loop that marks its steps only)",
    )
    args = parser.parse_args()
    if args.block < 3:
        parser.error("--block must be 3 or more (a block's first and last steps are left out)")
    # nothing is wrong with these runs: not the recorder's "no step seen" notes of the A/A run
    logging.getLogger("stepscope.recorder").setLevel(logging.ERROR)
    # the median of five: one calibration at a busy moment made 0.56 ms "1 ms" steps
    units = round(statistics.median(calibrate(args.step_ms) for _ in range(5)))
    if args.parts:
        print(parts(args.pairs, units), flush=True)
        return
    body = "bare" if args.no_annotations else "annotated"
    r = run(args.pairs, args.block, units, args.aa, body)
    text = report(args.step_ms, args.pairs, args.block, args.aa, r)
    if args.no_annotations:
        text = text.replace(" steps", " steps without annotations", 1)
    print(text, flush=True)


if __name__ == "__main__":
    main()
