"""`staged_windows` at its edges, called directly: where a step's input preparation ends, and
which step a window belongs to (the mutation run of staging.py, issue #34)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.staging import staged_windows
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

SPANS = (np.array([0, 20 * MS], np.int64), np.array([10 * MS, 30 * MS], np.int64))


def _profile(*events: tuple[str, int, int]) -> tuple[Profile, tuple[int, ...]]:
    builder = XSpaceBuilder("staging")
    main = builder.plane("/host:CPU").line(1, "python")
    for name, start, dur in events:
        main.event(name, start, dur)
    profile = build(builder)
    return profile, tuple(np.unique(profile.line).tolist())


def _windows(*events: tuple[str, int, int]) -> list[tuple[int, int, int]]:
    profile, lines = _profile(*events)
    step, lo, hi = staged_windows(profile, lines, *SPANS)
    assert step.dtype == lo.dtype == hi.dtype == np.int64
    return list(zip(step.tolist(), lo.tolist(), hi.tolist(), strict=True))


def test_a_python_forward_is_the_first_model_op() -> None:
    # the function is the last word of a Python tracer event's name
    assert _windows(("$my model.py:12 forward", 4 * MS, 2 * MS)) == [(0, 0, 4 * MS)]
    # only a Python event's: a plain name ending in "forward" is no model op, nor is a
    # Python event's name without a function
    assert _windows(("data forward", 4 * MS, 2 * MS)) == []
    assert _windows(("$forward", 4 * MS, 2 * MS)) == []


def test_nothing_to_look_at_is_no_window() -> None:
    profile, lines = _profile(("aten::linear", 4 * MS, MS))
    for spans, on in ((SPANS, ()), ((SPANS[0][:0], SPANS[1][:0]), lines)):
        assert [a.tolist() for a in staged_windows(profile, on, *spans)] == [[], [], []]


def test_a_model_op_at_the_step_end_or_between_steps_is_not_the_steps() -> None:
    # starting exactly where step 0 ends, or in the gap before step 1: step 0 has no model op
    assert _windows(("aten::linear", 10 * MS, MS)) == []
    assert _windows(("aten::linear", 15 * MS, MS)) == []
    assert _windows(("aten::linear", 15 * MS, MS), ("aten::linear", 24 * MS, MS)) == [
        (1, 20 * MS, 24 * MS)
    ]


def test_a_model_op_at_the_step_start_leaves_no_empty_window() -> None:
    assert _windows(("aten::linear", 0, MS), ("aten::linear", 25 * MS, MS)) == [
        (1, 20 * MS, 25 * MS)
    ]


def test_windows_cut_by_the_optimizer_keep_their_steps() -> None:
    got = _windows(
        ("Optimizer.zero_grad#SGD.zero_grad", 22 * MS, MS),
        ("aten::linear", 25 * MS, MS),
        ("aten::linear", 3 * MS, MS),
    )
    assert got == [(0, 0, 3 * MS), (1, 20 * MS, 22 * MS), (1, 23 * MS, 25 * MS)]


def test_the_loss_and_the_backward_are_the_models() -> None:
    # a step inferred from a repeated loss op starts at the loss: no batch is built there
    for name in ("aten::cross_entropy_loss", "autograd::engine::evaluate_function: MmBackward0"):
        assert _windows((name, 0, 2 * MS), ("aten::linear", 5 * MS, MS)) == [], name
    assert _windows(("aten::add", 0, 2 * MS), ("aten::linear", 5 * MS, MS)) == [(0, 0, 5 * MS)]
