"""A Lightning fit over single-process DataLoaders, as stepscope's capture traced
/tmp/review13/user/lit.py (decision 585): per training batch a short fetch, the batch's two
copies and ``Optimizer.step`` holding the forward and backward (Lightning's closure), so the
optimizer step leads; after each epoch a validation pass (its ``iter()``'s seed ops, then
per batch a fetch, the copies and a top-level forward) and the next epoch's ``iter()``."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.vocab.pytorch import DATALOADER_ITER
from tests.support.timeline import Timeline

NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
STEP = "Optimizer.step#AdamW.step"
SEED = ("aten::empty", "aten::random_", "aten::item")  # each iter()'s base seed
FORWARD = ("aten::linear", "aten::relu", "aten::linear")
ITER_MS = 3.0  # a pass's iter() starting its workers (short, as this loop's steps are)


def fit_loop(
    epochs: int = 2,
    train: int = 20,
    val: int = 6,
    val_fetches: bool = True,
    new_pass: bool = True,
    setup_ms: float = 0.0,
    workers: bool = False,
) -> tuple[Profile, list[tuple[float, float]]]:
    """``epochs`` of ``train`` batches (a 0.5 ms fetch, two copies, a 2 ms optimizer step),
    ``val`` validation batches after each epoch but the last (a 10 ms forward each; fetched
    from their loader when ``val_fetches``, else on tensors at hand, no fetch); each epoch
    begins a new pass over the training loader (its seed ops) when ``new_pass``, else the loop
    goes on with the same pass (an evaluation every ``train`` steps inside it); ``setup_ms`` of
    set-up ops before the first pass; with ``workers`` each training pass begins with its
    ``iter()`` mark (`ITER_MS`, the workers' start) in place of the seed ops. Returns the
    profile and each training batch's (start of its optimizer step, its end) in ms: the
    script's clock, on_train_batch_start to _end, around it."""
    tl = Timeline()
    ev, spans = tl.ev, []
    if setup_ms:
        ev("aten::eq", setup_ms)
    for epoch in range(epochs):
        if (new_pass or not epoch) and workers:
            ev(DATALOADER_ITER, ITER_MS, stats={"loader": "T"})
        elif new_pass or not epoch:
            for name in SEED:
                ev(name, 0.01)
        for _ in range(train):
            ev(NEXT, 0.5)
            ev("aten::to", 0.01)
            ev("aten::to", 0.01)
            begin = tl.t
            ev(STEP, 2.0)
            spans.append((begin, tl.t - 0.05))
        if epoch == epochs - 1:
            break
        tl.t += 0.5
        if val_fetches:
            for name in SEED:
                ev(name, 0.01)
        for _ in range(val):
            if val_fetches:
                ev(NEXT, 0.5)
                ev("aten::to", 0.01)
                ev("aten::to", 0.01)
            ev(FORWARD[0], 10.0)
            for name in FORWARD[1:]:
                ev(name, 0.1)
        tl.t += 0.5
    return tl.profile(), spans
