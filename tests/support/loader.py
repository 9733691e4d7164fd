"""Synthetic profiles of a loop whose DataLoader has 2 worker processes captured
(`stepscope.capture.loader_workers`' spans), for the stats and page tests."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.input.loader_workers import LoaderWorkers, loader_workers
from stepscope.vocab.profiler import (
    CPU_COUNT_STAT,
    CPU_IDLE_STAT,
    THREAD_CPU_LINE,
    THREAD_CPU_LINE_OFFSET,
)
from stepscope.vocab.pytorch import (
    DATALOADER_BATCH_CPU_STAT,
    DATALOADER_BATCH_CPU_WAIT_STAT,
    DATALOADER_NEXT,
    DATALOADER_SETTING_PREFIX,
)
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

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


PLAIN_STAGE = "Iterator::DataLoader(Slow)"
# the loop's wait for a batch as the PyTorch profiler records it
LOOP_NEXT = f"{DATALOADER_NEXT}#_MultiProcessingDataLoaderIter.__next__"
SAMPLES_OFFSET = 1 << 48
WORKER_LOOP = "_worker_loop (worker.py:374);fetch (fetch.py:54)"


def plain_loader_space(
    step_ms: int,
    wait_ms: int,
    busy_ms: int | tuple[int, int],
    steps: int = 6,
    cpu: tuple[int, float] | None = None,
    collate_in_fetch: bool = False,
    cpu_ms: int | None = None,
    cpu_wait_ms: int | None = None,
    settings: dict[str, int] | None = None,
    longer: tuple[int, int] = (0, 0),
) -> XSpaceBuilder:
    """A plain loop: each step waits ``wait_ms`` in the DataLoader's ``__next__`` (as the
    PyTorch profiler names it) then computes (``longer``: step k computes ms longer, a model
    compiling); 2 workers each make one
    batch per step from the step's start, busy ``busy_ms`` of it (one figure per worker when
    a pair), their samples every 10 ms (collate at 30 and 70
    ms of a step, decode at the others in their batches; the wait for the next index
    outside them); ``settings``: the loader's (stats ``dataloader_<name>``) on each batch."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    if cpu is not None:
        host.stats[CPU_COUNT_STAT], host.stats[CPU_IDLE_STAT] = cpu
    main = host.line(1, "MainThread")
    workers = [host.line(100 + w, f"DataLoader worker {w} (pid {100 + w})") for w in (0, 1)]
    sampled = []
    for w in (0, 1):
        line = host.line(SAMPLES_OFFSET + 100 + w, "Python samples", f"Python samples: w{w}")
        line.display_id = 100 + w
        sampled.append(line)
    for k in range(steps):
        t = k * step_ms + (longer[1] if k > longer[0] else 0)
        extra = longer[1] if k == longer[0] else 0
        main.event("train", t * MS, (step_ms + extra) * MS, {"step_num": k, "_r": 1})
        main.event(LOOP_NEXT, t * MS, wait_ms * MS)
        main.event("aten::addmm", (t + wait_ms) * MS, (step_ms - wait_ms + extra) * MS)
        for w, line in enumerate(workers):
            busy = busy_ms[w] if isinstance(busy_ms, tuple) else busy_ms
            # numbered as if each step were a pass of its own: two batches a step for one
            # next() is no in-order loop, so no call is matched to a batch (decision 394)
            stats = {"parent_id": 9, "worker": w, "batch": w}
            cpu = {DATALOADER_BATCH_CPU_STAT: cpu_ms * MS} if cpu_ms is not None else {}
            if cpu_wait_ms is not None:
                cpu[DATALOADER_BATCH_CPU_WAIT_STAT] = cpu_wait_ms * MS
            for name, value in (settings or {}).items():
                cpu[DATALOADER_SETTING_PREFIX + name] = value
            line.event(f"{PLAIN_STAGE}::Worker", t * MS, busy * MS, {**stats, **cpu})
            line.event(f"{PLAIN_STAGE}::Worker::GetItem", t * MS, (busy - 1) * MS, stats)
            line.event(f"{PLAIN_STAGE}::Worker::Collate", (t + busy - 1) * MS, MS, stats)
            for s in range(0, step_ms, 10):
                if s < busy:
                    leaf = "collate (collate.py:9)" if s % 40 == 30 else "decode (ds.py:12)"
                    stack = f"{WORKER_LOOP};__getitem__ (ds.py:20);{leaf}"
                    if collate_in_fetch and leaf.startswith("collate"):
                        stack = f"{WORKER_LOOP};{leaf}"
                else:
                    stack = "_worker_loop (worker.py:334);get (queues.py:113)"
                sampled[w].event(
                    stack.rpartition(";")[2],
                    (t + s) * MS,
                    10 * MS,
                    {"stack": stack, "samples": 1},
                )
    return builder


def ordered_loader_space(
    made_ms: list[tuple[int, int]],
    asks_ms: list[tuple[int, int]],
    cpu_wait_share: float | None = None,
    collate_share: float = 0.0,
    cpu: tuple[int, float] | None = None,
    loop_runnable_share: float | None = None,
) -> XSpaceBuilder:
    """A plain loop taking its batches in order: batch k made by worker k % 2 over
    ``made_ms[k]``, the loop's k-th ``next()`` over ``asks_ms[k]`` (then the step's own work
    to the next one; steps from the ``train`` events, one per ask). ``cpu_wait_share``: of
    each batch, the time its worker waited for a CPU; ``collate_share``: of each batch, the
    part in collate_fn (its end; the rest in __getitem__); ``cpu``: the host's cores, idle;
    ``loop_runnable_share``: the loop's thread sampled, its CPU readings every 1 ms runnable
    this share of each (the rest on a core)."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    if cpu is not None:
        host.stats[CPU_COUNT_STAT], host.stats[CPU_IDLE_STAT] = cpu
    main = host.line(1, "MainThread")
    if loop_runnable_share is not None:
        samples = host.line(SAMPLES_OFFSET + 1, "Python samples", "Python samples: MainThread")
        samples.display_id = 1
        readings = host.line(
            THREAD_CPU_LINE_OFFSET + 1, THREAD_CPU_LINE, f"{THREAD_CPU_LINE}: MainThread"
        )
        readings.display_id = 1
        waiting = round(loop_runnable_share * MS)
        for t in range(asks_ms[0][0], asks_ms[-1][1] + 10):
            stats = {"on_cpu_ns": MS - waiting, "runnable_ns": waiting}
            readings.event("cpu", t * MS, MS, stats)
    workers = [host.line(100 + w, f"DataLoader worker {w} (pid {100 + w})") for w in (0, 1)]
    for k, (lo, hi) in enumerate(asks_ms):
        end = asks_ms[k + 1][0] if k + 1 < len(asks_ms) else hi + 10
        main.event("train", lo * MS, (end - lo) * MS, {"step_num": k, "_r": 1})
        main.event(LOOP_NEXT, lo * MS, (hi - lo) * MS)
        main.event("aten::addmm", hi * MS, (end - hi) * MS)
    for k, (start, end) in enumerate(made_ms):
        stats: dict[str, int] = {"parent_id": 9, "worker": k % 2, "batch": k}
        outer = dict(stats)
        if cpu_wait_share is not None:
            outer[DATALOADER_BATCH_CPU_STAT] = round((end - start) * (1 - cpu_wait_share) * MS)
            outer[DATALOADER_BATCH_CPU_WAIT_STAT] = round((end - start) * cpu_wait_share * MS)
        line = workers[k % 2]
        line.event(f"{PLAIN_STAGE}::Worker", start * MS, (end - start) * MS, outer)
        if collate_share:
            at = start * MS + round((end - start) * (1 - collate_share) * MS)
            line.event(f"{PLAIN_STAGE}::Worker::GetItem", start * MS, at - start * MS, stats)
            line.event(f"{PLAIN_STAGE}::Worker::Collate", at, end * MS - at, stats)
    return builder


def judge_loader(space: XSpaceBuilder) -> LoaderWorkers:
    """The one DataLoader's workers, as the input pipeline analyzer judges them in ``space``."""
    profile = build(space)
    [found] = loader_workers(profile, build_step_db(profile))
    return found
