"""The advice is about the steps once warm when the first steps are warm-up (decision 490):
a compile of most of the capture's time must not dilute the shares it quotes."""

from __future__ import annotations

from pathlib import Path

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.warmup import steps_from
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.overview import overview_of

STEPS = 12


def _loop(compile_ms: int) -> XSpaceBuilder:
    """Marked 10 ms steps (the first and the last marked are left out): a 6 ms wait for the
    batch, then a 4 ms jitted call; in the first kept step the call compiles for
    ``compile_ms`` first."""
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "python")
    t = 0
    for k in range(STEPS + 2):
        start = t
        compiles = compile_ms * MS if k == 1 else 0
        main.event("IteratorGetNext", t, 6 * MS)
        main.event("PjitFunction(update)", t + 6 * MS, compiles + 4 * MS)
        if compiles:  # the first call compiles, then runs
            main.event("backend_compile_and_load", t + 6 * MS, compiles)
        t += compiles + 10 * MS
        main.event("train", start, t - start, {"step_num": k, "_r": 1})
    return builder


def test_the_advice_quotes_the_steps_once_warm(tmp_path: Path) -> None:
    page = overview_of(_loop(compile_ms=300), tmp_path)
    assert page.steady_state is not None and page.steady_state.warmup_steps == (1,)
    # all steps: the compile is 71.4% of the time, input 17.1%; once warm input is 60%
    assert page.bound_by.first == "compilation"
    assert page.recommendation.bottleneck == "input"
    assert page.recommendation.details[0].startswith(
        "HIGH: What bounds the steps once warm, input (60.0% of the step time once warm): "
        "prepare batches ahead of the step"
    )


def test_without_a_warm_up_the_advice_is_all_steps(tmp_path: Path) -> None:
    page = overview_of(_loop(compile_ms=0), tmp_path)
    assert page.steady_state is None
    assert page.recommendation.details[0].startswith(
        "HIGH: What bounds the steps, input (60.0% of the step time): prepare batches"
    )


def test_the_steady_summary_keeps_its_own_steps_dispatched_ops() -> None:
    summary = summarize_steps({"vm": build_step_db(build(_loop(compile_ms=300)))})
    steady = steps_from(summary, 1)
    assert len(steady.limits.ns) == len(steady.limits.dispatch.ops) == STEPS - 1
