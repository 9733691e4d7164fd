"""CPU readings (`ThreadCpu`, the stack sampler's `Thread CPU` line) given to the ranks of
a job built in code (`tests.support.arrivals`), for the stall rules' tests."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.stragglers_types import Rank
from tests.support.arrivals import MS, STEP


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
