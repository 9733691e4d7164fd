"""A training loop of several passes over a DataLoader with workers, as stepscope's capture
traces it (decision 562): each pass's ``iter()`` that starts the workers marked
(`vocab.pytorch.DATALOADER_ITER`), then its fetches and optimizer steps; a validation pass
over another loader after each epoch, Lightning's way."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.vocab.pytorch import DATALOADER_ITER
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
ITER_MS = 150.0  # the workers' start in iter(): 100-300 ms on a loaded host


def epochs_loop(
    epochs: int = 3,
    train: int = 8,
    val: int = 0,
    marked: bool = True,
    setup: tuple[float, float] = (0.0, 0.0),
) -> tuple[Profile, list[float], list[float]]:
    """``epochs`` passes of ``train`` iterations (a 2 ms fetch, the batch's copy, a 30 ms
    optimizer step, a zero_grad), each pass after its ``iter()`` (`ITER_MS`, marked when
    ``marked``: a persistent loader's later passes start no workers, so they have none);
    ``val`` validation batches after each pass (their own marked ``iter()``, fetches and a
    10 ms forward) and 40 ms of untraced Python before the next pass. ``setup``: ms of set-up
    ops before the first pass's ``iter()``, and between it and its first fetch (Lightning
    makes the iterator, then runs its hooks and checks). Returns the profile, each pass's mark
    start and each pass's first fetch start, in ms."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    t, marks, firsts = 0.0, [], []

    def ev(name: str, dur: float, stats: dict[str, object] | None = None) -> None:
        nonlocal t
        line.event(name, int(t * MS), int(dur * MS), stats)
        t += dur + 0.05

    if setup[0]:
        ev("aten::eq", setup[0])
    for epoch in range(epochs):
        marks.append(t)
        if marked or epoch == 0:
            ev(DATALOADER_ITER, ITER_MS, {"loader": "DataLoader(Train)"})
        else:
            t += ITER_MS  # a persistent loader's reset: untraced
        if setup[1] and epoch == 0:
            ev("aten::is_nonzero", setup[1])
        firsts.append(t)
        for _ in range(train):
            ev(NEXT, 2.0)
            ev("aten::to", 0.1)
            ev("Optimizer.step#SGD.step", 30.0)
            ev("Optimizer.zero_grad#SGD.zero_grad", 0.5)
        ev(NEXT, 1.0)  # the fetch that ends the pass (StopIteration)
        if val:
            ev(DATALOADER_ITER, ITER_MS / 2, {"loader": "DataLoader(Val)"})
            for _ in range(val):
                ev(NEXT, 2.0)
                ev("aten::to", 0.1)
                ev("aten::linear", 10.0)
            ev(NEXT, 1.0)
        t += 40.0
    return build(builder), marks, firsts
