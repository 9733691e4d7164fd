"""Synthetic profiles of a loop whose DataLoader has 2 worker processes captured
(`stepscope.capture.loader_workers`' spans), for the stats and page tests."""

from __future__ import annotations

from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS

LOADER_ID = 77
STAGE = "Iterator::DataLoader"


def loader_space(
    made_ms: list[tuple[int, int, int, int]], asks_ms: list[tuple[int, int]]
) -> XSpaceBuilder:
    """Batch k made by worker k % 2 over ``made_ms[k]`` (start, collate start, collate end,
    end); the step asks for batch k over ``asks_ms[k]``, one step per ask."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    workers = [host.line(100 + w, f"DataLoader worker {w} (pid {100 + w})") for w in (0, 1)]
    for k, (lo, hi) in enumerate(asks_ms):
        main.event("train", lo * MS, (hi - lo + 1) * MS, {"step_num": k, "_r": 1})
        main.event("IteratorGetNextOp::DoCompute", lo * MS, (hi - lo) * MS, {
            "id": LOADER_ID, "iter_num": k})  # fmt: skip
        main.event(STAGE, lo * MS, (hi - lo) * MS, {"id": LOADER_ID})
    for k, (start, c0, c1, end) in enumerate(made_ms):
        line = workers[k % 2]
        stats = {"parent_id": LOADER_ID, "worker": k % 2, "batch": k}
        line.event(f"{STAGE}::Worker", start * MS, (end - start) * MS, stats)
        line.event(f"{STAGE}::Worker::GetItem", start * MS, (c0 - start) * MS, stats)
        line.event(f"{STAGE}::Worker::Collate", c0 * MS, (c1 - c0) * MS, stats)
    return builder
