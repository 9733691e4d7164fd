"""PyTorch steps on the CPU built in code: one host thread, a step marker a step and the ops
in it, for the tests of what the steps' limits, findings and advice say of eager PyTorch
(dispatch, staged input, a run that never trains, a serving call)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stepscope.xspace.builder import XSpaceBuilder

US = 1_000
MS = 1_000_000
BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"  # a backward pass's node

Op = tuple[str, int, int]  # (name, start from the step's start, duration), ns


def torch_steps(
    steps: int,
    period_ns: int,
    ops: Callable[[int], Iterable[Op]],
    step_ns: int | None = None,
    marker: str = "",
    thread: str = "MainThread",
) -> XSpaceBuilder:
    """``steps`` steps ``period_ns`` apart from 0, each ``step_ns`` long (default: the
    period), holding ``ops(k)`` for step ``k``. Marked ``ProfilerStep#k``, or, with
    ``marker``, by an event of that name with ``step_num`` and ``_r`` (stepscope's marker)."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, thread)
    for k in range(steps):
        t0 = k * period_ns
        dur = period_ns if step_ns is None else step_ns
        if marker:
            main.event(marker, t0, dur, {"step_num": k, "_r": 1})
        else:
            main.event(f"ProfilerStep#{k}", t0, dur)
        for name, at, op_ns in ops(k):
            main.event(name, t0 + at, op_ns)
    return builder


def in_a_row(ops: Iterable[tuple[str, int]], gap_ns: int) -> list[Op]:
    """``(name, duration)`` ops one after the other from the step's start, ``gap_ns`` from
    one's end to the next one's start."""
    out, t = [], 0
    for name, dur in ops:
        out.append((name, t, dur))
        t += dur + gap_ns
    return out
