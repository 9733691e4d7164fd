"""Gradient accumulation told in the steps' description (decision 458): the optimizer's
``Optimizer.step#...`` annotation in every N-th step, N >= 2. Synthetic profiles."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.steps.breakdown import build_step_db
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
