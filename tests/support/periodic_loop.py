"""A synthetic PyTorch-like loop whose every N-th step saves a checkpoint (untraced Python
the stack sampler sees) and whose other steps now and then wait for their batch longer, for
the periodic_steps and slow_steps findings' tests (decision 580)."""

from __future__ import annotations

from collections.abc import Collection

from stepscope.model import Profile
from tests.support.analysis import MS, build
from tests.support.fetch_loop import LOOP, TRAIN, sampled_main
from tests.support.loader import LOOP_NEXT

SAVE = f"{LOOP};save_checkpoint (train.py:61);_save (serialization.py:880)"


def checkpoint_loop(
    steps: int,
    saves: Collection[int],
    stalls: Collection[int] = (),
    *,
    save_ms: int = 12,
) -> Profile:
    """Marked steps: the batch's fetch (1 ms, 9 ms at ``stalls``), the model's op (8 ms),
    then at ``saves`` ``save_ms`` of untraced checkpointing the sampler sees (1 ms apart)."""
    builder, main, samples = sampled_main()
    t = 0
    for k in range(steps):
        fetch = (9 if k in stalls else 1) * MS
        save = save_ms * MS if k in saves else 0
        dur = fetch + 8 * MS + save
        main.event("train", t, dur, {"step_num": k, "_r": 1})
        main.event(LOOP_NEXT, t, fetch)
        main.event("aten::mm", t + fetch, 8 * MS)
        samples.event("forward (model.py:8)", t + fetch, 8 * MS, {"stack": TRAIN, "samples": 8})
        if save:
            stats = {"stack": SAVE, "samples": save_ms}
            samples.event("_save (serialization.py:880)", t + fetch + 8 * MS, save, stats)
        t += dur
    return build(builder)


EVAL_NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def evaluating_loop(
    steps: int,
    every: int,
    batches: int,
    slowed: Collection[int],
    *,
    first: bool = False,
    tail_ms: int = 0,
    optimizer: bool = False,
    logged: bool = False,
    setup_ms: int = 0,
    inner: bool = False,
) -> Profile:
    """Marked steps: the batch's fetch (1 ms) and the model's op (8 ms); every ``every``-th
    step then evaluates over another loader, ``batches`` fetches (1 ms) each followed by a
    3 ms forward op, and one more fetch ending that pass; at ``slowed`` the model's op takes
    20 ms more (the machine's noise, in compute as the evaluation's forward ops are).
    ``first``: the evaluation runs before the model's op (after the fetch); ``tail_ms``: that
    much untraced work after the evaluation, in its step (a checkpoint's save), or traced
    (``logged``: a weight norm's op, the step's logging); ``optimizer``: the model's op runs
    inside an ``Optimizer.step`` (a PyTorch optimizer's mark). ``setup_ms``: untraced time
    before the evaluation, in its step (``model.eval()``, making the pass's iterator);
    ``inner``: the evaluation runs after 7 ms of the model's op, before a 1 ms optimizer step
    (between ``loss.backward()`` and ``opt.step()``)."""
    builder, main, _ = sampled_main()
    t = 0
    for k in range(steps):
        model = (28 if k in slowed else 8) * MS
        evaluating = k % every == every - 1
        passing = (batches * 4 + 1 + tail_ms + setup_ms) * MS if evaluating else 0
        main.event("train", t, MS + model + passing, {"step_num": k, "_r": 1})
        main.event(LOOP_NEXT, t, MS)
        if inner:
            main.event("aten::mm", t + MS, model - MS)
            main.event("Optimizer.step#SGD.step", t + model + passing, MS)
        else:
            main.event("aten::mm", t + MS + (passing if first else 0), model)
        if optimizer and not inner:
            main.event("Optimizer.step#SGD.step", t + MS + (passing if first else 0), model)
        at = t + MS + (0 if first else model - (MS if inner else 0)) + setup_ms * MS
        for _ in range(batches if evaluating else 0):
            main.event(EVAL_NEXT, at, MS)
            main.event("aten::addmm", at + MS, 3 * MS)
            at += 4 * MS
        if evaluating:
            main.event(EVAL_NEXT, at, MS)
            if logged and tail_ms:
                main.event("aten::linalg_vector_norm", at + MS, tail_ms * MS)
        t += MS + model + passing
    return build(builder)
