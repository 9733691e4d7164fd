"""stepscope's own step markers are whole at both ends: XProf's rule of dropping the first and
the last marked step as possibly cut off by the capture window does not apply to them
(decision 622), whatever framework bridges ran (decision 671)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import ClassVar

import pytest

import stepscope
from stepscope.capture import bridges
from stepscope.capture.bridges import Bridge, BridgeOutput
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.stats.summary import summarize_steps
from stepscope.vocab.profiler import FIRST_STEP_WHOLE_STAT, LAST_STEP_WHOLE_STAT, STEP_ANCHOR
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.merge import ClockMap
from tests.support.analysis import MS, build
from tests.support.capture import load_run


def _steps(n: int, stop_inside_last: bool = False) -> list[int]:
    for s in range(n):
        with stepscope.step(s):
            sum(range(20_000))  # some host work in each
            if stop_inside_last and s == n - 1:
                run = stepscope.stop()
    if not stop_inside_last:
        run = stepscope.stop()
    return build_step_db(load_run(run)).step_num.tolist()


def test_every_marked_step_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`stepscope.steps(loader)` under start()/stop() read 34 of its 36 steps: the first (the
    workers' start in it) and the last were dropped as possibly cut off."""
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    stepscope.start(tmp_path)
    assert _steps(8) == list(range(8))
    # a step still open at stop() is not saved: the ones before it are whole
    stepscope.start(tmp_path / "open")
    assert _steps(8, stop_inside_last=True) == list(range(7))


class _MarkingFramework(Bridge):
    """A framework bridge that wrote `_r` markers of its own (as TensorFlow's and JAX's do
    for a Keras callback or a StepTraceAnnotation), at the steps `_framework_steps` ran:
    whether its first began before the start is not known."""

    name = "marking"
    title = "Marking"
    marks = True
    spans: ClassVar[list[tuple[int, int]]] = []  # perf_counter_ns of each step it marked

    def collect(self) -> BridgeOutput:
        builder = XSpaceBuilder(hostname="ignored")
        line = builder.plane("/host:CPU").line(7, "framework")
        for k, (lo, hi) in enumerate(self.spans if self.marks else []):
            line.event("TrainStep", lo, hi - lo, {"_r": 1, "step_num": k})
            line.event("op", lo + 1, (hi - lo) // 2, {})
        line.event("op", 0, 1_000, {})
        return BridgeOutput(builder.build(), ClockMap(0))


def _framework_steps(n: int) -> list[int]:
    """``n`` steps the framework marks (no `stepscope.step`): the steps read."""
    _MarkingFramework.spans = []
    for _ in range(n):
        lo = time.perf_counter_ns()
        sum(range(20_000))
        _MarkingFramework.spans.append((lo, time.perf_counter_ns()))
    run = stepscope.stop()
    return build_step_db(load_run(run)).step_num.tolist()


class _QuietFramework(_MarkingFramework):
    """The same bridge having recorded no marker (a jitted JAX loop under
    `stepscope.steps`: JAX writes none unless the user annotates)."""

    name = "quiet"
    title = "Quiet"
    marks = False


def test_a_bridge_with_markers_of_its_own_keeps_xprofs_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(bridges, "_registered", [_MarkingFramework])
    stepscope.start(tmp_path)
    assert _framework_steps(8) == list(range(1, 7))


def test_a_bridge_that_recorded_no_marker_leaves_ours_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stepscope.steps` over a jitted JAX loop read 38 of its 40 steps: the JAX bridge, which
    wrote no `_r` marker, made XProf's rule drop the first (the compile) and the last
    (decision 644)."""
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(bridges, "_registered", [_QuietFramework])
    stepscope.start(tmp_path)
    assert _steps(8) == list(range(8))


class _FunctionRuns(_MarkingFramework):
    """TensorFlow's trace: `_r` on each `FunctionRun` (a tf.function's call), an implicit root
    XProf groups by and no step marker."""

    name = "functions"
    title = "Functions"

    def collect(self) -> BridgeOutput:
        builder = XSpaceBuilder(hostname="ignored")
        line = builder.plane("/host:CPU").line(7, "framework")
        for k in range(3):
            line.event("FunctionRun", k * 2_000, 1_000, {"_r": 1, "id": k})
        return BridgeOutput(builder.build(), ClockMap(0))


def test_a_bridge_whose_roots_are_function_runs_leaves_ours_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stepscope.steps` over a TensorFlow custom loop read 38 of its 40 steps: TF's trace
    marks each `FunctionRun` with `_r`, so the save left both ends to XProf's rule (decision
    671); a capture after TF and JAX had run read 6 of 8 the same way."""
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(bridges, "_registered", [_FunctionRuns])
    stepscope.start(tmp_path)
    assert _steps(8) == list(range(8))


def test_a_frameworks_markers_alone_keep_xprofs_rule() -> None:
    """The stats say stepscope's own markers are whole: markers without its anchor (a
    framework's, begun before the start perhaps) are still judged by XProf's rule."""
    builder = XSpaceBuilder(hostname="h")
    plane = builder.plane("/host:CPU")
    plane.stats[FIRST_STEP_WHOLE_STAT] = 1
    plane.stats[LAST_STEP_WHOLE_STAT] = 1
    line = plane.line(1, "main")
    for k in range(8):
        line.event("train", k * 10 * MS, 9 * MS, {"_r": 1, "step_num": k})
        line.event("op", k * 10 * MS + MS, 5 * MS, {})
    assert build_step_db(build(builder)).step_num.tolist() == list(range(1, 7))
    for k in range(8):  # with stepscope's anchors: its own
        line.event(STEP_ANCHOR, k * 10 * MS, 1, {})
    assert build_step_db(build(builder)).step_num.tolist() == list(range(8))


def test_xprofs_all_hosts_step_time_leaves_out_the_ends_we_keep() -> None:
    """A job of stepscope's own markers keeps both ends; XProf's rule drops them, so its
    ALL_HOSTS figures (the job page's "XProf 2.24.2's ALL_HOSTS step time") leave them out:
    test_job_tensorflow read 97.97 ms for XProf's 88.6 with the first step, the compile, in."""
    dbs = {}
    for host in ("w0", "w1"):
        builder = XSpaceBuilder(hostname=host)
        plane = builder.plane("/host:CPU")
        plane.stats[FIRST_STEP_WHOLE_STAT] = 1
        plane.stats[LAST_STEP_WHOLE_STAT] = 1
        line = plane.line(1, "main")
        t = 0
        for k in range(8):
            dur = (100 if k in (0, 7) else 10) * MS  # a first and a last 10 times longer
            line.event("train", t, dur, {"_r": 1, "step_num": k})
            line.event(STEP_ANCHOR, t, 1, {})
            line.event("op", t + MS, dur // 2, {})
            t += dur
        dbs[host] = build_step_db(build(builder))
    summary = summarize_steps(dbs)
    assert summary.step_num.tolist() == list(range(8))
    assert summary.xprof_dur_ns.tolist() == [10 * MS] * 6
