"""The per-step cost resolved to a point (`bench_torch_capture.py --part quads`, decisions 250
and 281): stepscope.start defaults against torch.profiler made as the PyTorch bridge makes
it, session against session, in ABBA quads of step blocks in one process. Kept apart from
bench_torch_capture.py, which runs it, for the file's size."""

from __future__ import annotations

import gc
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

Step = Callable[[], None]


def median_interval(values: list[float]) -> tuple[float, float, float]:
    """The median and a distribution-free 95% interval for it (order statistics)."""
    ordered = sorted(values)
    n = len(ordered)
    # the largest k with P(Binomial(n, 1/2) < k) <= 2.5%
    total, k, cumulative = 2**n, 0, 0
    while k < n // 2:
        cumulative += math.comb(n, k)
        if cumulative / total > 0.025:
            break
        k += 1
    return statistics.median(ordered), ordered[max(k - 1, 0)], ordered[min(n - k, n - 1)]


def _bridge_profile() -> Any:
    """A torch.profiler made exactly as the PyTorch bridge makes it for a CPU-only capture
    (activities, shapes, allocations, stacks, flops, modules, ``trace_only``)."""
    from torch.profiler import ProfilerActivity, profile

    from stepscope.capture.bridges.torch_bridge import (
        TorchSettings,
        profile_memory_for,
        record_shapes_for,
        trace_only_options,
    )

    s = TorchSettings()
    return profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=record_shapes_for(s, False),
        profile_memory=profile_memory_for(s, False),
        with_stack=s.with_stack,
        with_flops=s.with_flops,
        with_modules=s.with_modules,
        **trace_only_options(s),
    )


class Block:
    """One block's CPU per step: the training thread's per-step CPU (``time.thread_time``
    around each step) and the CPU the process's other threads spent meanwhile (a profiler's
    own threads: stepscope's stack sampler), per step."""

    __slots__ = ("others_s", "per_step_s", "process_s")

    def __init__(self, per_step_s: list[float], others_s: float, process_s: float) -> None:
        self.per_step_s = sorted(per_step_s)
        self.others_s = others_s
        self.process_s = process_s

    def typical(self) -> float:
        """The lower quartile of the training thread's steps plus the other threads' mean:
        what a step costs where nothing outside the process disturbed it (preemption, another
        job's cache traffic only ever add time to a step), the profiler's threads included."""
        q = self.per_step_s
        return q[len(q) // 4] + self.others_s

    def mean(self) -> float:
        """The process's CPU per step, every disturbance included."""
        return self.process_s


def _timed_steps(step: Step, n: int, marked: bool, then: Callable[[], Any] | None = None) -> Block:
    """``marked``: each step in ``stepscope.step``; ``then``: called after each step, inside
    its time (torch.profiler's ``prof.step()``, as torch's documented loop does)."""
    import stepscope

    per = [0.0] * n
    clock = time.thread_time
    started_process, started = time.process_time(), clock()
    if marked:
        for i in range(n):
            t = clock()
            with stepscope.step(i):
                step()
            per[i] = clock() - t
    elif then is not None:
        for i in range(n):
            t = clock()
            step()
            then()
            per[i] = clock() - t
    else:
        for i in range(n):
            t = clock()
            step()
            per[i] = clock() - t
    thread = clock() - started
    process = time.process_time() - started_process
    return Block(per, (process - thread) / n, process / n)


def _stepscope_block(
    step: Step,
    n: int,
    logdir: str,
    probe: bool = True,
    sampler_hz: int | None = None,
    marked: bool = True,
) -> Block:
    """A fresh `stepscope.start` / `stop` per block: the fetch probe is paid in each, as a
    user's capture pays it."""
    import stepscope

    if sampler_hz is None:
        stepscope.start(logdir)
    else:
        stepscope.start(logdir, stepscope.ProfilerOptions(python_sampler_hz=sampler_hz))
    if not probe:
        from stepscope.capture import session

        running = session._session
        if running is not None and running.probe is not None:
            running.probe.stop()  # on this thread: removed now
    try:
        return _timed_steps(step, n, marked=marked)
    finally:
        stepscope.stop(save=False)


def _torch_block(step: Step, n: int, logdir: str, torch_steps: bool) -> Block:
    prof = _bridge_profile()
    prof.start()
    try:
        return _timed_steps(step, n, marked=False, then=prof.step if torch_steps else None)
    finally:
        prof.stop()


def quads_part(
    step: Step,
    block: int,
    most: int,
    least: int,
    width: float,
    torch_steps: bool,
    probe: bool = True,
    sampler_hz: int | None = None,
    unmarked: bool = False,
) -> None:
    """stepscope.start defaults against torch.profiler with the bridge's settings, session
    against session, in quads of blocks ABBA / BAAB (alternating) in one process: a drift of
    the machine's speed within a quad cancels. Each quad gives stepscope / torch - 1 (points)
    of the blocks' typical step (`Block.typical`); quads are added until the 95% interval of
    their median is narrower than ``width`` points (at least ``least``, at most ``most``).
    ``probe`` False: stepscope's blocks end the capture's fetch probe right after `start`
    (its profile function costs 25-30 points while installed, decision 971), so what is
    left, the markers and the sampler, is resolved apart. ``sampler_hz``: stepscope's blocks
    run the stack sampler at that rate (0: none, and then no fetch probe either, which needs
    the samples) instead of the default, so the sampler's share is resolved apart too.
    ``unmarked``: stepscope's blocks call no ``stepscope.step`` (torch's no ``prof.step()``
    unless ``torch_steps``): an unmarked ``for i in range(n): step()`` against the same under
    torch.profiler, like for like (decision 1005)."""
    marked = not unmarked
    load = os.getloadavg()[0]
    typical: list[float] = []
    means: list[float] = []
    tails: list[float] = []
    ms: list[float] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_torch_quads_") as logdir:
        # warm-up: imports, first starts
        _stepscope_block(step, block, logdir, probe, sampler_hz, marked)
        _torch_block(step, block, logdir, torch_steps)
        # Every block starts after a full collection (torch's stop leaves its events as
        # cyclic garbage the next block would pay); frozen first, what it walks is the
        # blocks' own garbage only (0.4 s -> a few ms a block: more quads in the time).
        gc.collect()
        gc.freeze()
        try:
            for q in range(most):
                order = "stts" if q % 2 == 0 else "tsst"
                got: dict[str, list[Block]] = {"s": [], "t": []}
                for kind in order:
                    gc.collect()
                    if kind == "s":
                        got[kind].append(
                            _stepscope_block(step, block, logdir, probe, sampler_hz, marked)
                        )
                    else:
                        got[kind].append(_torch_block(step, block, logdir, torch_steps))
                ours, theirs = got["s"], got["t"]

                def both(f: Callable[[Block], float], blocks: list[Block]) -> float:
                    return sum(f(b) for b in blocks) / len(blocks)

                typical.append(100 * (both(Block.typical, ours) / both(Block.typical, theirs) - 1))
                means.append(100 * (both(Block.mean, ours) / both(Block.mean, theirs) - 1))
                tails.append(
                    100
                    * (
                        both(lambda b: b.mean() - b.typical(), ours)
                        - both(lambda b: b.mean() - b.typical(), theirs)
                    )
                    / both(Block.typical, theirs)
                )
                ms.append(both(Block.typical, theirs) * 1e3)
                if os.environ.get("BENCH_VERBOSE"):
                    print(f"    quad {q}: {typical[-1]:+.2f} points (mean {means[-1]:+.2f})")
                if len(typical) >= least:
                    _, lo, hi = median_interval(typical)
                    if hi - lo < width:
                        break
        finally:
            gc.unfreeze()
    mid, lo, hi = median_interval(typical)
    print(
        f"per step, stepscope.start defaults{'' if marked else ' (no stepscope.step)'} against "
        f"torch.profiler with the bridge's settings"
        f"{' and prof.step() each step' if torch_steps else ''}"
        f"{'' if probe else ', the fetch probe ended at start'}"
        f"{'' if sampler_hz is None else f', stepscope sampling at {sampler_hz} Hz'}, "
        f"{len(typical)} quads of {block}-step blocks (ABBA), {time.perf_counter() - started:.0f} s"
    )
    print(
        f"  typical step (training thread's lower quartile + other threads' mean; torch "
        f"{statistics.median(ms):.3f} ms): stepscope - torch {mid:+.2f} points (95% interval "
        f"of the median {lo:+.2f} .. {hi:+.2f}, width {hi - lo:.2f})"
    )
    mid, lo, hi = median_interval(means)
    print(
        f"  process CPU per step (every disturbance included): {mid:+.2f} points ({lo:+.2f} .. "
        f"{hi:+.2f})"
    )
    mid, lo, hi = median_interval(tails)
    print(
        f"  the steps above the quartile (mean - typical), stepscope's less torch's: {mid:+.2f} "
        f"points ({lo:+.2f} .. {hi:+.2f}): a cost of stepscope's that only some steps pay would "
        f"show here"
    )
    print(f"  load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
