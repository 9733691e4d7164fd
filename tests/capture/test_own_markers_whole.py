"""stepscope's own step markers are whole at both ends: XProf's rule of dropping the first and
the last marked step as possibly cut off by the capture window does not apply to them
(decision 622)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import stepscope
from stepscope.capture import bridges
from stepscope.capture.bridges import Bridge, BridgeOutput
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.merge import ClockMap
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
    """A framework bridge that wrote a `_r` marker of its own (as TensorFlow's and JAX's do
    for a Keras callback or a StepTraceAnnotation): whether its first began before the
    start is not known."""

    name = "marking"
    title = "Marking"
    marks = True

    def collect(self) -> BridgeOutput:
        builder = XSpaceBuilder(hostname="ignored")
        line = builder.plane("/host:CPU").line(7, "framework")
        if self.marks:
            line.event("TrainStep", 0, 1_000, {"_r": 1, "step_num": 0})
        line.event("op", 0, 1_000, {})
        return BridgeOutput(builder.build(), ClockMap(0))


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
    bridges.register(_MarkingFramework)
    monkeypatch.setattr(bridges, "_registered", [_MarkingFramework])
    stepscope.start(tmp_path)
    assert _steps(8) == list(range(1, 7))


def test_a_bridge_that_recorded_no_marker_leaves_ours_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stepscope.steps` over a jitted JAX loop read 38 of its 40 steps: the JAX bridge, which
    wrote no `_r` marker, made XProf's rule drop the first (the compile) and the last
    (decision 644)."""
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    bridges.register(_QuietFramework)
    monkeypatch.setattr(bridges, "_registered", [_QuietFramework])
    stepscope.start(tmp_path)
    assert _steps(8) == list(range(8))
