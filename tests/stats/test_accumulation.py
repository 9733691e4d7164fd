"""Gradient accumulation: the optimizer's ``Optimizer.step#...`` annotation in every N-th step,
N >= 2, told in the steps' description of marked steps (decision 458); unmarked, the loop's
iterations are grouped into the optimizer's steps (decision 535). Synthetic profiles."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.input.loader_verdict import in_process_loader
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

STEPS = 16


def _loop(optimizer_in: set[int]) -> Profile:
    """Marked 10 ms steps of a forward and backward op; the steps in ``optimizer_in`` end
    with the optimizer's step."""
    builder = XSpaceBuilder("synthetic")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::addmm", t, 6 * MS)
        if k in optimizer_in:
            main.event("Optimizer.step#SGD.step", t + 7 * MS, 2 * MS)
    return build(builder)


def test_an_optimizer_step_every_4th_step_is_told() -> None:
    db = build_step_db(_loop({3, 7, 11, 15}))
    assert db.description.endswith(
        "; Optimizer.step ran in 3 of the 14 steps, every 4th: gradient accumulation, each "
        "step is one micro-batch and one optimizer step is 4 steps (40.00 ms on average)"
    )  # the first and last marked steps are dropped as possibly cut off (14 kept)


def test_an_optimizer_step_in_each_step_or_at_no_period_is_not() -> None:
    for optimizer_in in (set(range(STEPS)), {3, 7, 12, 15}, {3, 7}, set()):
        assert "Optimizer.step" not in build_step_db(_loop(optimizer_in)).description


# An unmarked loop that accumulates gradients, traced as /tmp/qa12/loops/accum.py was
# (PyTorch profiler names; 4 micro-batches per AdamW step; decision 535).
NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
MICRO = [(NEXT, 5.0), ("aten::linear", 0.4), ("aten::mse_loss", 0.1), ("aten::div", 0.05)]
BACKWARD = [("autograd::engine::evaluate_function: AddmmBackward0", 0.6)]
OPTIMIZER = [("Optimizer.step#AdamW.step", 0.8), ("Optimizer.zero_grad#AdamW.zero_grad", 0.1)]


def _unmarked_loop(optimizer_steps: int, micro: int = 4, extra: int = 0) -> tuple[Profile, list]:
    """The loop's iterations back to back from the capture's start on its thread; every
    ``micro``-th runs the optimizer; ``extra`` iterations after the last optimizer step.
    Returns the profile and each optimizer step's (start, end) in ms."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    t, spans = 0.0, []
    for k in range(optimizer_steps * micro + extra):
        begin = t
        events = MICRO + BACKWARD + (OPTIMIZER if (k + 1) % micro == 0 else [])
        for name, dur in events:
            line.event(name, int(t * MS), int(dur * MS))
            t += dur + 0.02
        if k % micro == 0:
            spans.append([begin, 0.0])
        if (k + 1) % micro == 0:
            spans[-1][1] = t - 0.02
    return build(builder), spans[:optimizer_steps]


def test_an_unmarked_loop_accumulating_gradients_has_one_step_per_optimizer_step() -> None:
    """20 optimizer steps of 4 micro-batches: the script counts 20 steps of 4 batches; the
    iterations were the steps before (80, each a micro-batch, the last without its optimizer
    step: 19 of them ran it)."""
    profile, spans = _unmarked_loop(20)
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == 20
    assert np.allclose(found.start_ns / MS, [s for s, _ in spans])
    # each runs to the next one's start, the last one to its optimizer step's end
    assert np.array_equal(found.end_ns[:-1], found.start_ns[1:])
    assert abs(found.end_ns[-1] / MS - spans[-1][1]) < 1e-5
    assert found.description.startswith(
        "20 optimizer steps of 4 iterations each: gradient accumulation, "
        "'Optimizer.step#AdamW.step' ran in every 4th iteration (the iterations: 80 repeats"
    )
    db = build_step_db(profile)
    assert db.n_steps == 20
    assert "each step is one micro-batch" not in db.description


def test_iterations_after_the_last_optimizer_step_are_in_no_step() -> None:
    """The capture stopped 2 micro-batches into an accumulation: 10 whole optimizer steps."""
    profile, spans = _unmarked_loop(10, extra=2)
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == 10
    assert abs(found.end_ns[-1] / MS - (spans[-1][1] + 0.02)) < 1e-5  # the next one's start
    assert "2 iterations in no whole group left out" in found.description


def test_a_loop_stepping_the_optimizer_every_iteration_keeps_its_iterations() -> None:
    profile, _ = _unmarked_loop(12, micro=1)
    found = infer_steps(profile)
    assert found is not None
    assert len(found) == 12
    assert "optimizer steps" not in found.description


def test_the_in_process_loader_advice_counts_the_batches_of_a_step() -> None:
    """4 batches of 5 ms a step for 1.48 ms of other work per batch: num_workers=4 (one batch
    every 1.25 ms), not 1 (one batch of 5 ms in the step's 5.9 ms of other work)."""
    profile, _ = _unmarked_loop(10)
    advice = in_process_loader(profile, build_step_db(profile))
    assert "num_workers=4 would make one every 1.25 ms" in advice
    assert "for the 1.48 ms of other work per batch, 4 batches a step" in advice
