"""A JAX loop whose update is not jitted (``jax.grad`` called eagerly, ``block_until_ready``,
then ``next()`` of a slow Python generator): after the wait for XLA's threads, a little of
the loop's own Python, the fetch, then the next update's untraced Python (``jax.grad``
tracing the function: longer in the first calls) before its first traced op. The capture
times the first 4 fetches; the later steps began at the fetch's estimated time before that
op, 1.08 ms after the script's ``next()`` in /tmp/loops2's jaxe20 run, and the last step read
1.17 ms short (decision 1084). They now begin where the computation ended plus the loop's
own Python before its ``next()``, as the timed steps show it."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.steps import fetch_bounds
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from tests.support.analysis import MS, build
from tests.support.fetch_loop import FETCH, sampled_main, timed_fetches

ITERATIONS = 16
FETCH_MS = 20.0  # the generator asleep, untraced
OWN_MS = 0.2  # the loop's Python between block_until_ready and next(), untraced
COMPUTE_MS = 4.0  # XLA running the update on its client thread
# the update's traced ops on the loop's thread, 0.1 ms each
OPS = ("PjitFunction(matmul)", "PjitFunction(add)", "PjitFunction(tanh)")


def _grad_ms(k: int) -> float:
    """``jax.grad``'s untraced Python before the update's first op: longer in the timed
    iterations (jaxe20: 1.34, 1.26 and 0.75 ms after the timed fetches, 0.6 later)."""
    return 3.0 if k == 0 else 1.3 if k < 4 else 0.6


def _loop(
    late: dict[int, float] | None = None, beside: bool = False, inline: tuple[int, ...] = ()
) -> tuple[Profile, np.ndarray, np.ndarray]:
    """The loop, and per iteration the script's clock: its ``next()`` (t0) and the end of its
    ``block_until_ready`` (t2). ``late``: iterations whose thread went on this many ms after
    the computation ended (a loaded machine), in the script's clock of the iteration before;
    ``beside``: an Eigen worker's event 1 ms into each timed fetch; ``inline``: iterations
    whose update runs on the loop's thread, traced (XLA ran the last small ops inline)."""
    builder, main, samples = sampled_main()
    host = builder.plane("/host:CPU")
    host.stats[STARTED_ON_THREAD_STAT] = 7
    xla = host.line(2, "tf_XLAPjRtCpuClient/-7")
    eigen = host.line(3, "tf_XLAEigen/-3")
    t, timed, t0, t2 = 0.0, [], [], []
    for k in range(ITERATIONS):
        if k:
            t += (late or {}).get(k, 0.0)
            t2.append(t)
            t += OWN_MS
        t0.append(t)
        if k < 4:  # the probe times the first fetches only
            timed.append((int(t * MS), int(FETCH_MS * MS)))
            if beside and k:
                eigen.event("ThunkExecutor::Execute", int((t + 1) * MS), int(2 * MS))
        fetch = {"stack": FETCH, "samples": 2, "next_frames": "2"}
        samples.event("decode (data.py:30)", int((t + 1) * MS), int(4 * MS), fetch)
        t += FETCH_MS + _grad_ms(k)
        for op in OPS:
            main.event(op, int(t * MS), int(0.1 * MS))
            t += 0.1
        on = main if k in inline else xla
        on.event("ThunkExecutor::Execute", int(t * MS), int(COMPUTE_MS * MS))
        t += COMPUTE_MS  # the wait, untraced (or the loop's own traced work)
    t2.append(t)
    timed_fetches(builder, "batches (data.py)", "main (train.py)", timed)
    return build(builder), np.array(t0), np.array(t2)


def test_the_later_steps_begin_at_their_next() -> None:
    profile, t0, t2 = _loop()
    db = build_step_db(profile)
    assert len(db.start_ns) == ITERATIONS
    # on main the steps after the timed ones began 0.6 ms (the post-fetch Python) and more
    # (the fetch's share, learnt where that Python was longer) after their next()
    starts = db.start_ns / MS
    assert np.allclose(starts, t0, atol=0.02), starts - t0
    # so the step after the timed ones and the last are the script's iteration too (the
    # last one to its wait's end, decision 1065)
    script = np.diff(np.r_[t0, t2[-1]])
    durations = db.dur_ns / MS
    assert np.allclose(durations, script, atol=0.02), durations - script


def test_the_later_steps_input_is_their_fetch_to_their_first_op() -> None:
    """As in the timed steps, the time from the step's start to its first op is input staged
    in the step (decision 506): the fetch and ``jax.grad``'s Python before the first op."""
    profile, _, _ = _loop()
    fetch = build_step_db(profile).limit_ns()["input"] / MS
    assert np.allclose(fetch[1:4], FETCH_MS + 1.3, atol=0.02), fetch
    assert np.allclose(fetch[4:], FETCH_MS + 0.6, atol=0.02), fetch


def test_a_computation_run_on_the_loops_thread_starts_the_fetch_at_its_end() -> None:
    """jaxe20 (fresh, 16:06 UTC): in 2 iterations of 40 XLA ran the update's last ops inline
    on the loop's thread; no compute thread's event ended in the fetch's gap, which begins at
    that traced work's end: the step begins there and the loop's own Python after."""
    profile, t0, _ = _loop(inline=(8, 11))
    starts = build_step_db(profile).start_ns / MS
    assert np.allclose(starts, t0, atol=0.02), starts - t0


def _estimated_starts(profile: Profile, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """The steps' starts from the fetch's estimate alone (as on main)."""
    with monkeypatch.context() as m:
        m.setattr(fetch_bounds, "after_waits", lambda *a: np.full(len(a[5]), -1, np.int64))
        return build_step_db(profile).start_ns / MS


def test_a_thread_going_on_late_keeps_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """At load 5-7 the loop's thread went on 6 ms after the computation ended (jaxe0's step
    28): the script's clock had that time in the step before. A start from the wait's end
    would take it into the step; further before the estimate than the post-fetch Python of
    the timed steps explains, the estimated start stays."""
    profile, t0, _ = _loop({9: 6.0})
    starts = build_step_db(profile).start_ns / MS
    estimated = _estimated_starts(profile, monkeypatch)
    assert starts[9] == estimated[9] and starts[9] > t0[9] - 6.0 + 1.0, starts[9] - t0[9]
    assert np.allclose(starts[10:], t0[10:], atol=0.02), starts - t0


def test_a_loop_fetching_beside_its_computation_keeps_the_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A computation running during the timed fetches: the loop did not block before
    fetching (decision 725), and a computation's end says nothing of where its fetch began:
    every step begins where the estimate has it."""
    profile, _, _ = _loop(beside=True)
    starts = build_step_db(profile).start_ns / MS
    assert np.array_equal(starts, _estimated_starts(profile, monkeypatch))
