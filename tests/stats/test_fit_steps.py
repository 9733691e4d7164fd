"""A Lightning fit captured with stepscope.start()/stop() (decision 538): its set-up ops
must not make the steps, and its validation batches are no training steps. Traced as
/tmp/qa12/loops/lit.py was (PyTorch profiler names; Lightning runs the forward and backward
inside ``Optimizer.step``'s closure)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from tests.support.analysis import MS
from tests.support.timeline import Timeline

NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _fit(
    epochs: int = 2, train: int = 20, val: int = 6, set_up: bool = True, tail_first: bool = False
) -> tuple[Profile, list[tuple[float, float]]]:
    """``epochs`` of ``train`` training iterations (a 2 ms fetch, the batch's copy, a 60 ms
    optimizer step holding the forward and backward, a zero_grad) and ``val`` validation
    batches (a fetch, the copy and a 20 ms forward), 100 ms of untraced Python before each
    validation; set-up ops first (three ``aten::eq``: 1061 and 1.6 ms apart, as
    Lightning's); with ``tail_first``, the end of an iteration the capture began inside (its
    optimizer step and zero_grad) before the first fetch. Returns the profile and each
    training iteration's (start, end of its own work) in ms."""
    tl = Timeline()
    ev, spans = tl.ev, []

    if set_up:
        for at in (0.0, 1061.0, 1062.6):
            tl.t = at
            ev("aten::eq", 0.04)
        tl.t = 1100.0
    if tail_first:
        ev("Optimizer.step#AdamW.step", 30.0)
        ev("Optimizer.zero_grad#AdamW.zero_grad", 0.5)
    for _ in range(epochs):
        for _ in range(train):
            begin = tl.t
            ev(NEXT, 2.0)
            ev("aten::to", 0.1)  # the batch moved to the device, in both loops
            ev("Optimizer.step#AdamW.step", 60.0)
            ev("Optimizer.zero_grad#AdamW.zero_grad", 0.5)
            spans.append((begin, tl.t - 0.05))
        tl.t += 100.0
        for _ in range(val):
            ev(NEXT, 2.0)
            ev("aten::to", 0.1)
            ev("aten::linear", 20.0)
        tl.t += 30.0
    return tl.profile(), spans


def test_set_up_ops_before_the_loop_make_no_steps() -> None:
    """Three set-up calls, two periods "steady" (1061 ms within twice their median): the
    coarsest candidate, 2 steps for the script's 40 (decision 538)."""
    profile, _ = _fit(epochs=2, val=0)
    found = infer_steps(profile)
    assert found is not None
    assert "aten::eq" not in found.description
    assert len(found) == 40


def test_validation_batches_are_no_training_steps() -> None:
    profile, spans = _fit()
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == 40  # the script's, not 52
    # step 0 from the thread's first event, the capture's start (decision 476's rule)
    assert np.allclose(found.start_ns[1:] / MS, [s for s, _ in spans[1:]])
    assert "iterations without an optimizer step (validation or evaluation batches) left out" in (
        found.description
    )
    # each epoch's last training step ends with its own work, not at the first validation
    # fetch 100 ms later
    for k in (19, 39):
        assert abs(found.end_ns[k] / MS - spans[k][1]) < 1e-3


def test_a_capture_begun_before_an_optimizer_step_still_finds_the_steps() -> None:
    """``stepscope.start()`` called between a fetch and its ``opt.step()``: the thread's
    first event is that optimizer step, before any iteration. It made the step inference
    fail (a negative iteration index) and the run had no analysis at all."""
    profile, _ = _fit(val=6, set_up=False, tail_first=True)
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == 40
    assert "iterations without an optimizer step (validation or evaluation batches) left out" in (
        found.description
    )
