"""A plain PyTorch loop over a DataLoader with workers, captured by ``stepscope.start()``/
``stop()`` on its thread, unmarked, that checkpoints and evaluates now and then, as
/tmp/coord13/loops/ckpt.py does (decision 608): per iteration a 1 ms fetch, a 5 ms forward
and a 2 ms optimizer step; a checkpoint (``torch.save``: two traced ``aten::detach``, then its
file written in untraced Python) and an evaluation (five 4 ms forwards on random tensors) at
the iterations given."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from stepscope.model import Profile
from stepscope.vocab.profiler import (
    FETCHES_LINE,
    FETCHES_LINE_OFFSET,
    LOOP_FIRST_LINE_STAT,
    LOOP_LAST_LINE_STAT,
    STARTED_ON_THREAD_STAT,
)
from stepscope.vocab.pytorch import DATALOADER_ITER
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
GAP = 0.05  # ms between two traced events: the loop's own Python
STOP_MS = 30.0  # from the loop's end to stop(): the worker's line runs on
LOOP = "<module> (train.py)"  # the loop's frame, its `for` on line 20, its body to line 30
SAMPLE_MS = 40.0  # the stack sampler's interval (25 Hz)


def ckpt_loop(
    steps: int,
    saves: Collection[int] = (),
    evals: Collection[int] = (),
    *,
    write_ms: float = 15.0,
    after_ms: float = 0.0,
    last_write_stack: str = "",
) -> tuple[Profile, list[tuple[float, float]]]:
    """``steps`` iterations; at ``saves`` a checkpoint whose file takes ``write_ms`` to write
    (untraced), at ``evals`` an evaluation; ``after_ms`` of traced work after the loop, before
    ``stop()``. Returns the profile and each iteration's span (ms) as the script times it:
    from its fetch to the next one's (the last: to its work's end, the write included).
    ``last_write_stack``: the stack sampler's stack (`SAMPLE_MS` apart, from 10 ms in) over
    the last iteration's write, with the capture's timed first fetch of the loop `LOOP`
    (decision 681)."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    # a worker prefetching batches until stop(): its line runs to the capture's end
    worker = plane.line(2, "DataLoader worker 0 (pid 2)")
    t = 0.0

    def ev(name: str, dur: float) -> None:
        nonlocal t
        line.event(name, int(t * MS), int(dur * MS))
        t += dur + GAP

    ev(DATALOADER_ITER, 100.0)
    spans = []
    for k in range(steps):
        begin = t
        ev(NEXT, 1.0)
        ev("aten::linear", 5.0)
        ev("Optimizer.step#AdamW.step", 2.0)
        if k in saves:
            ev("aten::detach", 0.1)
            ev("aten::detach", 0.1)
            if last_write_stack and k == steps - 1:
                _sampled(plane, last_write_stack, t, t + write_ms)
            t += write_ms
        if k in evals:
            for _ in range(5):
                ev("aten::randn", 0.1)
                ev("aten::linear", 4.0)
        spans.append((begin, t - GAP))
    if after_ms:
        ev("aten::linear", after_ms)
    worker.event("_worker_loop", 0, int((t + STOP_MS) * MS))
    if last_write_stack:
        fetches = plane.line(FETCHES_LINE_OFFSET + 1, FETCHES_LINE, f"{FETCHES_LINE}: python")
        fetches.display_id = 1
        stats = {"loop": LOOP, LOOP_FIRST_LINE_STAT: 20, LOOP_LAST_LINE_STAT: 30}
        fetches.event("__next__ (dataloader.py)", int(100.05 * MS), int(1.0 * MS), stats)
    return build(builder), spans


def _sampled(plane: Any, stack: str, begin: float, end: float) -> None:
    """One run of the sampler's samples of ``stack`` from ``begin`` + 10 ms to ``end`` (ms):
    it lasts one interval past its last sample."""
    samples = plane.line((1 << 48) + 1, "Python samples", "Python samples: python")
    samples.display_id = 1
    first = begin + 10.0
    n = int((end - first) // SAMPLE_MS) + 1
    stats = {"stack": stack, "samples": n}
    samples.event(stack.rsplit(";", 1)[-1], int(first * MS), int(n * SAMPLE_MS * MS), stats)
