"""Synthetic traces of a loop without step markers whose first iteration compiles, as a
``torch.compile`` loop's trace shows it (the events' names and order seen in a real one:
`/tmp/warmup/tc/loop.py` in the warmup helper's report)."""

from __future__ import annotations

from typing import Any

from stepscope.model import Profile, profile_from_xspace
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.support.analysis import MS

BACKWARD = "autograd::engine::evaluate_function: CompiledFunctionBackward"
REGION = "Torch-Compiled Region: 0/0"
LOOP_LINE = 7  # the loop thread's id


def compiled_loop(iterations: int = 10, **kwargs: Any) -> tuple[Profile, list[float]]:
    """The profile of `compiled_loop_space` and the times (ms) each iteration began."""
    space, began = compiled_loop_space(iterations, **kwargs)
    return profile_from_xspace(space, source="<synthetic>", hostname="synthetic"), began


def compiled_loop_space(
    iterations: int = 10,
    *,
    started_here: bool = True,
    compile_ms: float = 1000.0,
    backward_compile_ms: float = 300.0,
    cut_ms: float = 0.0,
    setup: tuple[str, ...] = (),
    step_ms: float = 2.0,
    extra: dict[int, float] | None = None,
) -> tuple[XSpace, list[float]]:
    """A loop of ``iterations`` (each ``step_ms`` once warm): batch (``aten::randn``), the
    compiled forward, the loss, the backward, the optimizer step; iteration 0 compiles its
    forward (``dynamo`` holding ``compile_fx``) before running it and its backward inside the
    backward. ``started_here``: the host plane says the capture began on the loop's thread;
    ``cut_ms``: the capture began this far into iteration 0 (its earlier events are not in
    the trace); ``setup``: top-level events on the loop's thread before the loop; ``extra``:
    iteration -> ms of host work at its end. Returns
    the XSpace and the times (ms) each iteration began."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    if started_here:
        plane.stats[STARTED_ON_THREAD_STAT] = LOOP_LINE
    line = plane.line(LOOP_LINE, "python")
    t = 0.5
    for name in setup:
        line.event(name, int(t * MS), int(0.2 * MS))
        t += 0.5
    began = []
    for k in range(iterations):
        began.append(t)
        events: list[tuple[str, float]] = [("aten::randn", 0.1), ("aten::randint", 0.05)]
        if k == 0:
            events.append(("dynamo", compile_ms))
        events += [(REGION, 0.5), ("aten::cross_entropy_loss", 0.1)]
        events += [(BACKWARD, 0.7 + (backward_compile_ms if k == 0 else 0.0))]
        events += [("Optimizer.step#SGD.step", 0.2)]
        if extra and k in extra:  # host work on that iteration only (logging metrics)
            events += [("log_metrics", extra[k])]
        at = t
        for name, dur in events:
            if at >= cut_ms:
                line.event(name, int(at * MS), int(dur * MS))
                if name == "dynamo" or (name == BACKWARD and k == 0):
                    line.event("compile_fx", int((at + 0.01) * MS), int((dur - 0.02) * MS))
            at += dur + 0.05
        t = max(at, t + step_ms + (extra or {}).get(k, 0.0))
    return builder.build(), began
