"""A plain PyTorch loop over a DataLoader with workers, captured by ``stepscope.start()``/
``stop()`` on its thread, unmarked, that checkpoints and evaluates now and then, as
/tmp/coord13/loops/ckpt.py does (decision 608): per iteration a 1 ms fetch, a 5 ms forward
and a 2 ms optimizer step; a checkpoint (``torch.save``: two traced ``aten::detach``, then its
file written in untraced Python) and an evaluation (five 4 ms forwards on random tensors) at
the iterations given."""

from __future__ import annotations

from collections.abc import Collection

from stepscope.model import Profile
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.vocab.pytorch import DATALOADER_ITER
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
GAP = 0.05  # ms between two traced events: the loop's own Python
STOP_MS = 30.0  # from the loop's end to stop(): the worker's line runs on


def ckpt_loop(
    steps: int,
    saves: Collection[int] = (),
    evals: Collection[int] = (),
    *,
    write_ms: float = 15.0,
    after_ms: float = 0.0,
) -> tuple[Profile, list[tuple[float, float]]]:
    """``steps`` iterations; at ``saves`` a checkpoint whose file takes ``write_ms`` to write
    (untraced), at ``evals`` an evaluation; ``after_ms`` of traced work after the loop, before
    ``stop()``. Returns the profile and each iteration's span (ms) as the script times it:
    from its fetch to the next one's (the last: to its work's end, the write included)."""
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
            t += write_ms
        if k in evals:
            for _ in range(5):
                ev("aten::randn", 0.1)
                ev("aten::linear", 4.0)
        spans.append((begin, t - GAP))
    if after_ms:
        ev("aten::linear", after_ms)
    worker.event("_worker_loop", 0, int((t + STOP_MS) * MS))
    return build(builder), spans
