"""A loop that runs ahead of its computation (decision 640): a jitted JAX step dispatched
each iteration, ``jax.block_until_ready`` every 5th. The steps that only dispatch are not
what a step costs, and the waiting ones do no extra work: the steps' description gives the
loop's rate from one wait to the next, and the periodic finding says what the waits are."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.steps.breakdown import build_step_db
from tests.support.analysis import MS
from tests.support.timeline import Timeline

STEP = "PjitFunction(train_step)"


def _loop(
    steps: int = 40, every: int = 5, compute: float = 2.3, block_each: bool = False
) -> Profile:
    """The loop thread dispatches ``STEP`` (0.6 ms) after a 0.3 ms fetch; XLA's CPU client
    runs each dispatched step for ``compute`` ms, one after the other; the loop waits for
    the queue (untraced) every ``every`` steps, or after each."""
    t = Timeline()
    # XLA's client runs each program on one of its threads, as a JAX 0.7 CPU trace shows
    xla = [t.plane.line(2 + j, f"tf_XLAPjRtCpuClient/{j}") for j in range(3)]
    busy_until = 0.0
    for k in range(steps):
        t.t += 0.3  # the batch's making in Python: untraced
        first = k == 0
        t.ev(STEP, 150.0 if first else 0.6, gap=0.02)  # the first call compiles
        t.ev("PythonRefManager::CollectGarbage", 0.002, gap=0.02)  # JAX's, after each call
        begin = max(t.t, busy_until)
        line = xla[k % 3]
        line.event("ThunkExecutor::Execute", int(begin * MS), int(compute * MS), {})
        line.event("dot.3", int(begin * MS) + 1000, int(compute * MS) - 2000, {})
        busy_until = begin + compute
        if block_each or (k + 1) % every == 0 or k == steps - 1:
            # block_until_ready: untraced (a JAX 0.7 CPU trace holds no event of it)
            t.t = max(busy_until, t.t) + 0.02
    return t.profile()


def _found(profile: Profile) -> dict[str, Finding]:
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    return {f.id: f for f in diagnose_host(data)}


def test_a_loop_that_blocks_every_5_steps_is_said_to_run_ahead() -> None:
    profile = _loop()
    db = build_step_db(profile)
    assert db.n_steps == 40
    assert "the loop runs ahead of its computation (asynchronous dispatch)" in db.description
    # from one wait to the next: 5 computations of 2.3 ms, and after the wait the next
    # batch's making and dispatch (0.96 ms) before the computation resumes, over 5 steps;
    # the steps' own times say 0.9 ms (4 of 5) and 9.3 ms (the waits)
    assert "31 of the 38 steps after the warm-up (but the last) end with it" in db.description
    assert "their 0.94 ms is the dispatch" in db.description
    assert "the loop takes 2.49 ms per step from one wait to the next" in db.description
    periodic = _found(profile)["periodic_steps"]
    assert periodic.title == "Every N steps the loop waits for the computation it queued"
    assert periodic.severity == "low"
    assert "That is no extra work" in periodic.summary
    assert "the waiting ones take 8.69 ms (median; the other steps' 0.94 ms)" in periodic.summary
    assert "checkpointing" not in periodic.fix
    assert round(periodic.metrics["run_ahead_ms_per_step"], 2) == 2.49


def test_a_loop_that_waits_each_step_does_not_run_ahead() -> None:
    db = build_step_db(_loop(block_each=True))
    assert db.n_steps == 40
    assert "runs ahead" not in db.description
