"""The last step of a loop that blocks on its update holds its wait for the computation, as
every other step does (`stepscope.stats.steps.last_wait`, decision 1065). Each loop here is
traced as the jitted and un-jitted JAX loops of /tmp/loops were: the update dispatched on the
loop's thread, returning at once, XLA's work on its client thread, the wait untraced."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

DISPATCH = [  # the loop thread's traced events of one jitted update (name, ms)
    ("PjitFunction(update)", 0.2),
    ("Wait for donation holds", 0.001),
    ("Wait for usage holds", 0.001),
    ("PythonRefManager::CollectGarbage", 0.001),
]
COMPUTE = 12.0  # ms: XLA running the update on its client thread
FETCH = 1.0  # ms: the next batch's making, untraced


def _loop(
    iterations: int, blocks: bool = True, tail: float = 0.3, straggler: int | None = None
) -> tuple[Profile, float]:
    """A jitted update per iteration; with ``blocks``, the next iteration's fetch comes once
    the computation has ended, else at once (the next dispatch beside the computation). The
    capture stops ``tail`` ms after the last computation (``stop()`` traced on no thread but
    a marker line); in iteration ``straggler`` an Eigen worker's event of the update ends
    after the next one's began (a loaded machine). Returns the profile and the last
    computation's end (ms)."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    loop = plane.line(1, "python")
    xla = plane.line(2, "tf_XLAPjRtCpuClient/2")
    other = plane.line(3, "profiler")
    eigen = plane.line(4, "tf_XLAEigen/4")
    t = FETCH
    done = 0.0
    for i in range(iterations):
        at = t
        for name, dur in DISPATCH:
            loop.event(name, int(at * 1e6), int(dur * 1e6))
            at += dur + 0.002
        begin = max(t + 0.21, done)
        xla.event("ThunkExecutor::Execute", int(begin * 1e6), int(COMPUTE * 1e6))
        done = begin + COMPUTE
        if i == straggler:
            eigen.event("ThunkExecutor::Execute", int((done - 1.0) * 1e6), int((FETCH + 2) * 1e6))
        t = (done if blocks else at) + FETCH
    other.event("stop", int((done + tail) * 1e6), 1000)
    return build(builder), done


def _steps(profile: Profile) -> tuple[np.ndarray, np.ndarray, str]:
    found = infer_steps(profile)
    assert found is not None
    return found.start_ns / MS, found.end_ns / MS, found.description


def test_the_last_step_waits_for_its_computation() -> None:
    """jaxj0: the last step was 0.87 ms for the script's 12.71 (its traced dispatch only);
    it ends where XLA's work ends, as long as the others but for the next batch's making,
    which each of them holds after its wait (no fetch probe here: they start at the lead)."""
    profile, done = _loop(30)
    starts, ends, description = _steps(profile)
    assert len(starts) == 30
    assert abs(ends[-1] - done) < 1e-6
    durations = ends - starts
    assert abs(durations[-1] - (np.median(durations[1:-1]) - FETCH)) < 0.01
    assert "waiting for its computation" in description


def test_a_period_whose_computations_overlap_keeps_the_wait() -> None:
    """A jaxj0 run at load 2: in one period of 38 an Eigen worker's event of the update
    ended after the next dispatch, so no computation ended in the thread's wait there; the
    loop waited in the others, and its last step still holds its wait."""
    profile, done = _loop(30, straggler=12)
    starts, ends, description = _steps(profile)
    assert len(starts) == 30
    assert abs(ends[-1] - done) < 1e-6
    assert "waiting for its computation" in description


def test_never_past_the_next_traced_event() -> None:
    """Code after the loop, traced on its thread before the computation ended, ends the last
    step: the wait ends at the latest there."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    loop = plane.line(1, "python")
    xla = plane.line(2, "tf_XLAPjRtCpuClient/2")
    t = FETCH
    for _ in range(10):
        loop.event("PjitFunction(update)", int(t * 1e6), int(0.2 * 1e6))
        xla.event("ThunkExecutor::Execute", int((t + 0.21) * 1e6), int(COMPUTE * 1e6))
        t += 0.21 + COMPUTE + FETCH
    last = t - FETCH - COMPUTE - 0.21
    loop.event("save", int((last + 5.0) * 1e6), int(0.1 * 1e6))
    starts, ends, _ = _steps(build(builder))
    assert len(starts) == 10
    assert abs(ends[-1] - (last + 5.0)) < 1e-6


def test_a_loop_that_does_not_block_ends_with_its_work() -> None:
    """Its next dispatch runs beside the computation: no wait to give the last step, which
    ends with its traced work as before."""
    profile, done = _loop(30, blocks=False)
    _, ends, description = _steps(profile)
    assert ends[-1] < done - COMPUTE
    assert "waiting for its computation" not in description
