"""Warm-up steps apart from the steady state (`stepscope.stats.warmup`, decision 362): the
leading steps that compile or warm up, their time and cause, and the steady steps' time and
what bounds them, beside the all-steps figures."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.warmup import steady_state, steps_from, warmup_count
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS
from tests.support.compiled_loop import compiled_loop, compiled_loop_space

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


@pytest.mark.parametrize(
    ("steps_ms", "expected"),
    [
        ([9800, 2, 2.1, 1.9, 2, 2, 2, 2], 1),  # torch.compile: the first step compiles
        ([650, 300, 2, 2, 2, 2, 2, 2], 2),  # and the second recompiles (a new shape)
        ([5, 2, 2, 2, 2, 2, 2, 2], 0),  # 2.5x: a first step's usual cost, no warm-up
        ([2, 900, 2, 2, 2, 2, 2, 2], 0),  # a slow step later: not warm-up (slow_steps says it)
        ([1.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3], 0),  # 4x but under 1 ms longer
        ([900, 2, 2, 2], 1),  # three steady steps are enough
        ([900, 2, 2], 0),  # two are not
        ([900, 800, 700, 2, 2, 2, 2, 2], 2),  # at most a quarter of the steps
        ([35, 2, 35, 2, 35, 2, 35, 2], 0),  # as long as a wait every 2 steps: one of them
        ([35, 2, 2, 2, 30, 2, 2, 2, 30, 2, 2, 2], 0),  # within 1.5x of what recurs
        ([35, 2, 2, 2, 2, 2, 2, 2, 40, 2, 2, 2], 1),  # one later step as long: a warm-up
        ([900, 2, 2, 2, 20, 2, 2, 2, 20, 2, 2, 2], 1),  # far above what recurs
        ([900, 20, 2, 2, 2, 20, 2, 2, 2, 20, 2, 2], 1),  # the second recurs: not warm-up
    ],
)
def test_warm_up_steps_are_the_leading_outliers(steps_ms: list[float], expected: int) -> None:
    assert warmup_count((np.array(steps_ms) * MS).astype(np.int64), mid_run=False) == expected


def _summary(**kwargs: object):  # type: ignore[no-untyped-def]
    profile, _ = compiled_loop(**kwargs)  # type: ignore[arg-type]
    return summarize_steps({"synthetic": build_step_db(profile)})


def test_a_compiled_loop_has_its_compile_step_apart_from_the_steady_state() -> None:
    summary = _summary(iterations=12)
    steady = steady_state(summary)
    assert steady is not None
    assert steady.warmup_steps == (0,)
    assert steady.warmup_cause == "compilation"
    assert steady.warmup_ms == pytest.approx(summary.dur_ns[0] / 1e6)
    assert steady.steps == 11 and steady.median_ms == pytest.approx(2.0, abs=0.01)
    # all steps are bound by compilation; once warm, by the model's compute
    assert summary.limit_percent("compilation") > 90
    assert steady.breakdown_ms["compilation"] == 0
    assert steady.bound_by.first == "compute"
    # the share follows the time it is of; the cause follows it (it read as the cause's)
    share = 100.0 * summary.dur_ns[0] / summary.dur_ns.sum()
    assert steady.statement.startswith(
        f"Warm-up: step 0 took 1302.00 ms ({share:.1f}% of all the steps' time), "
        "mostly compilation; once warm, the 11 steps after take 2.00 ms (median)."
    )


@pytest.mark.parametrize(
    ("host_ms", "cause"),
    # a jax.jit first call: 300 ms of backend compile after its tracing and lowering (host
    # work); the compile is the cause while it is a third of the growth (decision 431)
    [(400.0, "compilation"), (590.0, "compilation"), (620.0, "host_compute")],
)
def test_a_compile_is_the_warm_up_cause_from_a_third_of_its_growth(
    host_ms: float, cause: str
) -> None:
    summary = _summary(iterations=12, compile_ms=300.0, backward_compile_ms=0.0, extra={0: host_ms})
    grown = summary.category_ns["host_compute"][0] - np.median(
        summary.category_ns["host_compute"][1:]
    )
    assert grown > summary.category_ns["compilation"][0]  # host work grew the most
    steady = steady_state(summary)
    assert steady is not None and steady.warmup_cause == cause


def test_a_loop_whose_first_step_is_no_outlier_has_no_steady_state_apart() -> None:
    assert steady_state(_summary(iterations=12, compile_ms=1.0, backward_compile_ms=0.0)) is None


def test_the_steady_steps_are_cut_from_every_per_step_column() -> None:
    summary = _summary(iterations=8)
    # a record with per-step rows (the loop's Python iterator's fetch time per step)
    summary = replace(summary, fetched=replace(summary.fetched, ns=np.arange(8)))
    steady = steps_from(summary, 2)
    assert steady.fetched.ns.tolist() == [2, 3, 4, 5, 6, 7]
    assert steady.n_steps == 6
    assert steady.step_num.tolist() == summary.step_num[2:].tolist()
    assert steady.names == summary.names[2:]
    assert all(len(v) == 6 for v in steady.category_ns.values())
    assert all(len(v) == 6 for v in steady.limit_ns.values())
    assert len(steady.limits.ns) == 6
    # the untraced picture stays all steps': divided by all steps, not the steady ones
    assert steady.untraced.per(6, steady.total_ns()) == (8, summary.total_ns())


@pytest.mark.integration  # ~0.2 s: a whole report
def test_report_says_the_warm_up_and_the_steady_state(tmp_path: Path) -> None:
    space, _ = compiled_loop_space(12)
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    write_xspace(space, run / "vm.xplane.pb")
    text = io.StringIO()
    with redirect_stdout(text):
        assert main(["report", str(run), "--no-cache"]) == 0
    report = text.getvalue()
    assert "Warm-up: step 0 took 1302.00 ms" in report
    assert "Once warm: bound by compute" in report
    assert "Once warm (11 steps after the warm-up): median 2.00 ms" in report
    # XProf's all-steps figures stay
    assert "All 12 steps: bound by compilation" in report
    assert "Step time: avg 110." in report


def _slow_steps(**kwargs: object):  # type: ignore[no-untyped-def]
    from stepscope.stats.diagnostics.base import HostData
    from stepscope.stats.diagnostics.host_steps import slow_steps
    from stepscope.stats.gpu.kernels import build_kernel_db

    profile, _ = compiled_loop(**kwargs)  # type: ignore[arg-type]
    return slow_steps(HostData("vm", profile, build_step_db(profile), build_kernel_db(profile)), {})


def test_slow_steps_after_a_warm_up_are_judged_against_the_steady_steps() -> None:
    """A torch.compile loop whose steps 1 and 2 also ran 1.5 ms of host work: the finding
    said '3 of 12 steps take up to 651x the median ..., mostly in compilation. Fix: those
    steps compile again: a new input shape', of a loop that compiled once."""
    found = _slow_steps(iterations=12, extra={1: 1.5, 2: 1.5})
    assert found is not None
    assert found.summary.startswith("After the warm-up, 2 of 11 steps take up to 1.8x")
    assert "mostly in compute" in found.summary  # the headline's limit (decision 457)
    assert "compile again" not in found.fix and "periodic logging" in found.fix


def test_a_warm_up_alone_is_told_as_the_first_step() -> None:
    found = _slow_steps(iterations=12)
    assert found is not None
    assert found.summary.startswith("The profile's first step takes 651.0x the median step")
    assert "compile again" not in found.fix and "Once warm" in found.fix
