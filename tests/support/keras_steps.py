"""Keras training steps built in code, thread by thread, in the shape of real captures: the
tf.data pipeline tests (decisions 495, 525) lay out each step's events on the threads they
name and mark the steps as Keras's `train` annotation does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS

# (thread key, event name, start, duration in ms from the step's start)
Event = tuple[str, str, float, float]


def keras_steps(
    steps: Sequence[Sequence[Event]], threads: dict[str, tuple[int, str]], step_ms: float
) -> XSpaceBuilder:
    """One marked step of ``step_ms`` per entry of ``steps`` on the ``main`` thread, with that
    step's events on the ``threads`` (key: (line id, thread name))."""
    builder = XSpaceBuilder("keras")
    host = builder.plane("/host:CPU")
    lines = {key: host.line(i, name) for key, (i, name) in threads.items()}
    for k, events in enumerate(steps):
        t0 = int(k * step_ms * MS)
        stats: dict[str, Any] = {"step_num": k, "_r": 1}
        lines["main"].event("train", t0, int(step_ms * MS), stats)
        for thread, name, start, dur in events:
            lines[thread].event(name, t0 + int(start * MS), int(dur * MS))
    return builder
