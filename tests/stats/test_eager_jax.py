"""An un-jitted JAX update (decision 492): its calls run op by op, with JAX's Python
between and inside them; the advice of the steps once warm says so and puts it under
jax.jit, first when it is the largest lever; a jitted loop gets none of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.events import host_lines
from stepscope.stats.steps.eager import find_stretches
from stepscope.stats.warmup import steps_from, warmup_count
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.overview import overview_of

US = 1_000
STEPS = 12
CALLS = 24  # JAX calls of one update
CALL_US, EXEC_US, PYTHON_US = 300, 20, 250  # a call, its program in it, the Python after it
UPDATE_US = CALLS * CALL_US + (CALLS - 1) * PYTHON_US  # 12.95 ms
STACK = (
    "<module> (loop.py:30);update (loop.py:15);reraise_with_filtered_traceback "
    "(traceback_util.py:195);grad_f (api.py:469);apply_primitive (dispatch.py:88)"
)


def _loop(
    fetch_ms: int = 5,
    jitted: bool = False,
    deschedule: tuple[int, ...] = (),
    compile_ms: int = 200,
    executions: bool = True,
    marked: int = STEPS + 2,
    stack: str = STACK,
) -> XSpaceBuilder:
    """Marked steps: a traced input wait of ``fetch_ms``, then the update, then 1.05 ms of
    the loop's own Python. Un-jitted, the update is `CALLS` calls of `CALL_US` (each an outer
    ``PjitFunction``, JAX's Python path, holding the op's own call and its program's
    `EXEC_US`), `PYTHON_US` apart; in the steps ``deschedule`` the 11th gap lasts 3 ms (the
    thread descheduled). Jitted, it is one call running its program. Step 1 (the first kept)
    first compiles for ``compile_ms``. The sampler sees `STACK` in the update. ``marked``
    steps (of more than 5, the first and the last are left out: `STEPS` kept)."""
    builder = XSpaceBuilder("jax")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    samples = host.line((1 << 48) + 1, "Python samples")
    samples.display_id = 1
    t = 0
    for k in range(marked):
        start = t
        if k == 1 and compile_ms:
            main.event("backend_compile_and_load", t, compile_ms * MS)
            t += compile_ms * MS
        if fetch_ms:
            main.event("IteratorGetNext", t, fetch_ms * MS)
            t += fetch_ms * MS
        if jitted:
            main.event("PjitFunction(update)", t, UPDATE_US * US)
            main.event(
                "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice", t + 10 * US, 12 * MS
            )
            t += UPDATE_US * US
        else:
            samples.event("apply_primitive", t, UPDATE_US * US, {"stack": stack, "samples": 3})
            for i in range(CALLS):
                op = f"PjitFunction({('dot_general', 'tanh', 'mul')[i % 3]})"
                main.event(op, t, CALL_US * US)
                main.event(op, t + 200 * US, 50 * US)  # the op's own call
                if executions:
                    main.event(
                        "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice",
                        t + 210 * US,
                        EXEC_US * US,
                    )
                t += CALL_US * US
                if i < CALLS - 1:
                    t += (3000 if k in deschedule and i == 10 else PYTHON_US) * US
        t += 1050 * US  # the loop's own Python
        main.event("train", start, t - start, {"step_num": k, "_r": 1})
    return builder


def test_the_calls_python_is_dispatch_and_the_gaps_python_is_eager_overhead() -> None:
    db = build_step_db(build(_loop()))
    limits = db.limit_ns()
    eager = db.limits.eager
    steady = slice(1, None)
    # each call's own time less its program: dispatch (JAX's Python path inside the call),
    # not the model's compute; its program (20 µs) stays compute
    assert limits["dispatch"][steady].tolist() == [CALLS * (CALL_US - EXEC_US) * US] * (STEPS - 1)
    assert limits["compute"][steady].tolist() == [CALLS * EXEC_US * US] * (STEPS - 1)
    assert eager.span_ns[steady].tolist() == [UPDATE_US * US] * (STEPS - 1)
    # dispatch and the Python between the calls, not the loop's own 1.05 ms after them
    overhead = (CALLS * (CALL_US - EXEC_US) + (CALLS - 1) * PYTHON_US) * US
    assert eager.ns[steady].tolist() == [overhead] * (STEPS - 1)
    assert eager.ops.tolist() == [CALLS] * STEPS
    assert eager.caller == "update (loop.py)"


def test_a_call_without_its_program_traced_stays_compute() -> None:
    # nothing says what of such a call is its program (a large op runs inline): the limits
    # keep it as compute, and the overhead is the Python between the calls
    db = build_step_db(build(_loop(executions=False)))
    assert not db.limit_ns()["dispatch"][1:].any()
    assert db.limits.eager.ns[1:].tolist() == [(CALLS - 1) * PYTHON_US * US] * (STEPS - 1)


def test_a_delay_inside_the_update_stays_in_it_and_the_loops_own_place_ends_it() -> None:
    profile = build(_loop(deschedule=(3, 5, 7)))
    db = build_step_db(profile)
    s_lo, s_hi = db.start_ns, db.start_ns + db.dur_ns
    found = find_stretches(profile, host_lines(profile), s_lo, s_hi)
    # one stretch per update: the 3 ms gaps (in 3 of 12 steps, each at its own place in
    # the call sequence) are inside it; the fetch's 6.05 ms, at one place every step, is not
    assert len(found.lo) == STEPS
    spans = ((found.hi - found.lo) // US).tolist()
    assert spans == [UPDATE_US + (2750 if k in (3, 5, 7) else 0) for k in range(1, STEPS + 1)]


def test_the_advice_once_warm_puts_the_update_under_jit_first(tmp_path: Path) -> None:
    page = overview_of(_loop(), tmp_path)
    assert page.steady_state is not None and page.steady_state.warmup_steps == (1,)
    first = page.recommendation.details[0]
    # the steps once warm: 12.47 ms of overhead in each 19 ms step (the 200 ms compile of
    # step 1 made it 32.1% of all the steps' time)
    assert first.startswith(
        "HIGH: 65.6% of the step time once warm is the overhead of JAX running update "
        "(loop.py) op by op, not under jax.jit: 35.4% dispatching its 24 JAX calls a step"
    )
    assert "spans 68.2% of the step time once warm" in first
    assert "Put update under jax.jit" in first
    # the loop's own 1.05 ms is told apart, not as the update's
    assert any(
        d.startswith("5.5% of the step time once warm is Python / host")
        for d in page.recommendation.details
    )


def test_a_larger_lever_comes_before_it(tmp_path: Path) -> None:
    # 30 ms of input a step: 68.2% of the step, the overhead 28.3%
    details = overview_of(_loop(fetch_ms=30), tmp_path).recommendation.details
    assert details[0].startswith("HIGH: What bounds the steps once warm, input (68.2%")
    assert details[1].startswith("HIGH: 28.3% of the step time once warm is the overhead")


def test_a_jitted_update_is_told_no_jit(tmp_path: Path) -> None:
    # its one call a step, 1.05 ms apart without a fetch: many calls in a row, one a step
    for fetch_ms in (5, 0):
        page = overview_of(_loop(jitted=True, fetch_ms=fetch_ms), tmp_path / str(fetch_ms))
        assert not any("jax.jit" in d for d in page.recommendation.details)
        profile = build(_loop(jitted=True, fetch_ms=fetch_ms))
        assert not build_step_db(profile).limits.eager.ns.any()


def test_without_a_warm_up_the_advice_is_all_steps(tmp_path: Path) -> None:
    page = overview_of(_loop(compile_ms=0), tmp_path)
    assert page.steady_state is None
    assert page.recommendation.details[0].startswith(
        "HIGH: 65.6% of the step time is the overhead of JAX running update"
    )


def test_the_steady_summary_keeps_the_per_step_evidence_of_its_steps() -> None:
    summary = summarize_steps({"vm": build_step_db(build(_loop()))})
    count = warmup_count(summary.dur_ns, mid_run=summary.mid_run)
    steady = steps_from(summary, count)
    assert count == 1
    limits = steady.limits
    assert len(limits.eager.ns) == len(limits.eager.span_ns) == len(limits.ns) == STEPS - 1
    assert len(limits.eager.ops) == len(limits.dispatch.ops) == STEPS - 1
    assert np.array_equal(limits.eager.ns, summary.limits.eager.ns[1:])
    assert len(limits.held_ns) == STEPS - 1  # the input held up by a pipeline, per step


def test_the_advice_of_a_one_step_profile_says_its_step() -> None:
    summary = summarize_steps({"vm": build_step_db(build(_loop(marked=1, compile_ms=0)))})
    assert summary.n_steps == 1
    [told] = [d for d in recommend(summary, bound_by(summary)).details if "jax.jit" in d]
    assert "PjitFunction(mul) x8 over 1 step)" in told, told


def test_calls_written_in_the_loop_itself_are_told_to_go_in_a_jitted_function(
    tmp_path: Path,
) -> None:
    # the update's JAX calls made at a script's top level: the sampler's caller is
    # `<module>`, which no decorator reaches ("Put <module> under jax.jit" was said)
    inline = STACK.replace("update (loop.py:15);", "")
    first = overview_of(_loop(stack=inline), tmp_path).recommendation.details[0]
    assert first.startswith(
        "HIGH: 65.6% of the step time once warm is the overhead of JAX running the update "
        "written in the loop itself (loop.py) op by op, not under jax.jit: 35.4% dispatching"
    ), first
    assert "<module>" not in first
    assert "`update = jax.jit(update)` once before the loop" in first
