"""CPU readings (`ThreadCpu`, the stack sampler's `Thread CPU` line) given to the ranks of
a job built in code (`tests.support.arrivals`), for the stall rules' tests; a sampled loop
whose steps wait for a core or not (`sampled_loop`), for the diff's core-wait tests."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.stragglers_types import Rank
from stepscope.vocab.profiler import THREAD_CPU_LINE, THREAD_CPU_LINE_OFFSET
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.support.arrivals import MS, STEP
from tests.support.fetch_loop import TRAIN, sampled_main

LOOP_STEPS = 14  # `sampled_loop`'s steps


def with_cpu(ranks: list[Rank], gaps: dict[int, list[tuple[int, int]]], **waiting: int) -> None:
    """Give each rank CPU readings every 5 ms over its 30 steps (on a core 2 ms of each), the
    spans ``gaps[r]`` unread (one reading over each); rank "d"'s readings runnable
    ``waiting["d_ns"]`` ns over each of its gaps instead."""
    for r, rank in enumerate(ranks):
        cuts = [t for t in range(0, 30 * STEP + 1, 5 * MS)]
        for lo, hi in gaps.get(r, []):
            cuts = [t for t in cuts if not lo < t < hi] + [lo, hi]
        cuts = sorted(set(cuts))
        start, end = np.array(cuts[:-1], np.int64), np.array(cuts[1:], np.int64)
        on = np.full(len(start), 2 * MS, np.int64)
        runnable = np.zeros(len(start), np.int64)
        long = (end - start) > 5 * MS
        if waiting.get("d_ns") and rank.host == "d":
            runnable[long] = waiting["d_ns"]
        else:
            on[long] = 0  # not running: the sampler in it could not read
        assert rank.calls is not None
        ranks[r] = replace(rank, calls=replace(rank.calls, cpu=ThreadCpu(start, end, on, runnable)))


def sampled_loop(extra_ms: int, runnable: bool, readings: bool = True) -> XSpace:
    """`LOOP_STEPS` marked steps of 20-22 ms on MainThread, each ``extra_ms`` longer; CPU
    readings every 1 ms, the thread on its core all the time but, with ``runnable``, the extra
    ms of each step, runnable off its core; with ``readings`` False, none."""
    builder, main, samples = sampled_main()
    cpu = builder.plane("/host:CPU").line(
        THREAD_CPU_LINE_OFFSET + 7, THREAD_CPU_LINE, f"{THREAD_CPU_LINE}: MainThread"
    )
    cpu.display_id = 7
    t, waits = 0, []
    for k in range(LOOP_STEPS):
        dur = 20 + k % 3 + extra_ms
        main.event("train", t * MS, dur * MS, {"step_num": k, "_r": 1})
        main.event("forward", t * MS, dur * MS)
        samples.event("forward", t * MS, dur * MS, {"stack": TRAIN, "samples": dur // 5})
        if runnable:
            waits.append((t + dur - extra_ms, t + dur))
        t += dur
    for lo, hi in itertools.pairwise(range(0, t + 1, 1) if readings else ()):
        rq = sum(max(min(hi, b) - max(lo, a), 0) for a, b in waits)
        cpu.event(
            "cpu", lo * MS, (hi - lo) * MS, {"on_cpu_ns": (1 - rq) * MS, "runnable_ns": rq * MS}
        )
    return builder.build()
