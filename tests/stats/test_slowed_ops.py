"""The model's ops slowed beside the tf.data map's busy Python (decision 525): Keras ``fit``
over a ``tf.py_function`` map on a host with few free cores. In the shape of the real capture
(/tmp/keras12/runs/base1_k4, 09:32 UTC): in some steps the map's Python runs beside the
model's first op, which then takes 3x its time; in the others it runs after the ops, and the
step's thread waits for it in ``FunctionRun``. Synthetic, built in code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.model import open_run
from stepscope.stats.steps.breakdown import StepDb, build_step_db
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS, build
from tests.support.keras_steps import Event, keras_steps

STEPS = 12
STEP_MS = 5.0
MATMUL = "StatefulPartitionedCall/sequential/dense/MatMul:_MklMatMul"
MUL = "StatefulPartitionedCall/sgd/Mul:Mul"
THREADS = {
    "main": (1, "MainThread"),
    "compute": (2, "tf_Compute/1"),
    "pool": (3, "tf_data_private_threadpool/1"),
}
# the matmul alone, per step (a small spread, as a host's other load gives)
ALONE_MS = (1.0, 1.04, 0.98, 1.02)
SLOWED_MS = 3.0


def _python(k: int) -> tuple[float, float]:
    """The map's Python in step ``k`` (start, duration): beside the model's ops in the even
    steps, after them in the odd ones."""
    return (0.15, 4.45) if k % 2 == 0 else (2.2, 2.4)


def _step(matmul_ms: float, k: int, python: tuple[float, float] | None = None) -> list[Event]:
    """Step ``k`` of Keras training: the step's thread calls the tf.function at 0.1 and
    waits in ``FunctionRun`` until 4.65; the model's ops run from 0.2; the map's Python at
    ``python`` (`_python` by default)."""
    return [
        ("main", "multi_step_on_iterator", 0.05, 4.85),
        ("main", "TFE_Py_ExecuteCancelable", 0.1, 4.7),
        ("main", "KernelAndDeviceFunc::Run", 0.12, 4.58),
        ("main", "FunctionRun", 0.13, 4.52),
        ("compute", MATMUL, 0.2, matmul_ms),
        ("compute", MUL, 0.2 + matmul_ms, 0.3),
        ("pool", "EagerPyFunc:EagerPyFunc", *(python or _python(k))),
    ]


def _trace(steps: list[list[Event]]) -> XSpaceBuilder:
    return keras_steps(steps, THREADS, STEP_MS)


def _busy(slowed_ms: float = SLOWED_MS) -> list[list[tuple[str, str, float, float]]]:
    """The matmul beside the map's Python (even steps) takes ``slowed_ms`` (+ the spread)."""
    return [
        _step(slowed_ms + ALONE_MS[k % 4] - 1.0 if k % 2 == 0 else ALONE_MS[k % 4], k)
        for k in range(STEPS)
    ]


def _db(steps: list[list[tuple[str, str, float, float]]]) -> StepDb:
    return build_step_db(build(_trace(steps)))


def _ms(db: StepDb, limit: str) -> float:
    return float(db.limit_ns()[limit].mean()) / MS


def _page(tmp_path: Path, steps: list[list[tuple[str, str, float, float]]]) -> dict[str, Any]:
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(_trace(steps).build(), run_dir / "vm.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    return output.to_json(get_tool("overview_page").build(ctx))


def test_the_models_ops_slowed_beside_the_maps_python_are_input() -> None:
    """The matmul took 3 ms beside the map's Python against 1.03 ms alone: the 2 ms over its
    mean alone are input, not compute (it read "bound by compute")."""
    db = _db(_busy())
    # (the call's end, where the step's thread takes the GIL back, is never beside the
    # Python here: nothing says the GIL, decision 528)
    assert db.limits.python.counted and not db.limits.python.holds_gil
    mean_alone = sum(ALONE_MS[k % 4] for k in range(1, STEPS, 2)) / (STEPS // 2)
    beside = [SLOWED_MS + ALONE_MS[k % 4] - 1.0 for k in range(0, STEPS, 2)]
    # the ops beside (the matmuls and the Mul after them) over the same ops' time alone
    ratio = (sum(beside) + 0.3 * len(beside)) / ((mean_alone + 0.3) * len(beside))
    assert db.limits.python.ratio == pytest.approx(ratio, rel=1e-6)
    slowed = [round(float(ns) / MS, 6) for ns in db.limits.slowed_ns]
    # kept steps 1..10: the even ones beside (their matmul less its mean alone), the odd not
    expected = [
        round(SLOWED_MS + ALONE_MS[k % 4] - 1.0 - mean_alone, 6) if k % 2 == 0 else 0.0
        for k in range(1, STEPS - 1)
    ]
    assert slowed == pytest.approx(expected, abs=1e-6)
    # the same steps with the matmul as long, no Python beside: that time is compute
    control = _db([[e for e in s if e[0] != "pool"] for s in _busy()])
    held = float(db.limits.held_ns.mean()) / MS
    assert _ms(db, "input") == pytest.approx(
        _ms(control, "input") + held + sum(expected) / len(expected), abs=1e-6
    )
    assert _ms(db, "compute") < _ms(control, "compute") - sum(expected) / len(expected) + 1e-6
    # not the batch built inside the step either
    assert int(db.staged_ns.sum()) == 0


def test_the_overview_leads_with_the_maps_python_and_says_what_was_counted(
    tmp_path: Path,
) -> None:
    """Input first, its evidence naming the slowed ops' time, the map's fix first; the GIL
    said as a case only, nothing showing the Python keeping it (decision 528)."""
    page = _page(tmp_path, _busy())
    bound = page["bound_by"]
    assert bound["limits"][0]["key"] == "input", bound["headline"]
    assert "of the model's ops ran slowed beside the tf.data map's Python" in bound["headline"]
    assert "ms per step) of the model's ops ran slowed" in bound["headline"]
    first = page["recommendation"]["details"][0]
    assert "goes to the tf.data map's Python" in first, first
    assert "the model's ops ran slowed beside it" in first
    assert "holds the GIL while it runs" not in first and "kept busy" not in bound["headline"]
    assert "If it computes, it holds the GIL" in first


def test_ops_no_slower_beside_the_python_stay_compute() -> None:
    """A map whose Python takes no core (it sleeps): the matmul as long beside it as alone;
    and beside it a little longer, within the ops' own spread: nothing counted."""
    db = _db(_busy(slowed_ms=1.0))
    assert int(db.limits.slowed_ns.sum()) == 0 and not db.limits.python.counted
    # beside: 1.6, 1.0, 1.6...; alone: 1.6, 1.0...: the same ops either way
    spread = [_step(1.6 if k % 4 < 2 else 1.0, k) for k in range(STEPS)]
    db = _db(spread)
    assert int(db.limits.slowed_ns.sum()) == 0 and not db.limits.python.counted


def test_within_the_spread_the_report_says_it_and_counts_nothing(tmp_path: Path) -> None:
    """Beside the Python 1.2x as long, but the ops vary that much alone: said, not counted."""
    # beside: 1.6, 1.0, 1.6...; alone: 1.5, 1.0, 1.5...
    steps = [_step((1.6, 1.5, 1.0, 1.0)[k % 4], k) for k in range(STEPS)]
    db = _db(steps)
    assert int(db.limits.slowed_ns.sum()) == 0
    assert 1.0 < db.limits.python.ratio < 1.5
    headline = _page(tmp_path, steps)["bound_by"]["headline"]
    assert "not counted: the model's ops ran" in headline, headline
    assert "within their own spread" in headline


def test_a_map_beside_the_whole_step_that_lets_the_step_run_is_not_blamed_on_the_gil(
    tmp_path: Path,
) -> None:
    """The map's Python beside every call the step's thread makes (a map that sleeps, or a
    parallel one): the calls start beside it, so nothing shows it keeping the GIL, and no op
    runs without it, so no slowdown is measured: the held time stays input, said without the
    GIL, and the time beside is said, not counted."""
    steps = [_step(1.0, k, (0.05, 4.55)) for k in range(STEPS)]
    db = _db(steps)
    assert not db.limits.python.holds_gil
    assert int(db.limits.slowed_ns.sum()) == 0 and db.limits.python.unmeasured_ns > 0
    assert int(db.limits.held_ns.sum()) > 0
    page = _page(tmp_path, steps)
    text = " ".join([page["bound_by"]["headline"], *page["recommendation"]["details"]])
    assert "holds the GIL while it runs" not in text and "it holds the GIL;" not in text, text
    assert "no run of the same ops without it to compare" in text
    first = page["recommendation"]["details"][0]
    assert "If it computes, it holds the GIL" in first and "if it waits (I/O), " in first


def test_a_map_doing_nothing_is_no_input() -> None:
    """The map-0 control: its Python a few microseconds a step."""
    db = _db([_step(ALONE_MS[k % 4], k, (0.15 + 0.01 * (k % 3), 0.01)) for k in range(STEPS)])
    assert int(db.limits.slowed_ns.sum()) == 0 and not db.limits.python.holds_gil
    # (10 us a step the step's thread waits in FunctionRun before the first op, beside it)
    assert _ms(db, "input") <= 0.01 + 1e-9


def _call_ends(extra_ms: float) -> list[list[tuple[str, str, float, float]]]:
    """Steps whose tf.function call returns at 2.5 ms, then takes the GIL back: 0.1 ms (+ a
    spread) without the map's Python, ``extra_ms`` more beside it (even steps: the Python
    runs 2.45-4.45; odd steps: 3.8-4.3, after the call)."""
    steps = []
    for k in range(STEPS):
        tail = 0.1 + 0.01 * (k % 3) + (extra_ms if k % 2 == 0 else 0.0)
        steps.append(
            [
                ("main", "multi_step_on_iterator", 0.05, 4.85),
                ("main", "TFE_Py_ExecuteCancelable", 0.1, 2.4 + tail),
                ("main", "KernelAndDeviceFunc::Run", 0.12, 2.38),
                ("main", "FunctionRun", 0.13, 2.3),
                ("compute", MATMUL, 0.2, 1.0),
                ("compute", MUL, 1.2, 0.3),
                ("pool", "EagerPyFunc:EagerPyFunc", *((2.45, 2.0) if k % 2 == 0 else (3.8, 0.5))),
            ]
        )
    return steps


def test_the_calls_ends_slower_beside_the_python_show_it_keeps_the_gil() -> None:
    """The step's thread takes the GIL back at the end of its call: 1 ms longer beside the
    map's Python than without it, the Python keeps the GIL; as long either way (a map that
    sleeps), it does not (decision 526)."""
    assert _db(_call_ends(1.0)).limits.python.holds_gil
    assert not _db(_call_ends(0.0)).limits.python.holds_gil


def test_slowed_ops_and_the_calls_ends_both_shown_say_the_busy_core_and_the_gil(
    tmp_path: Path,
) -> None:
    """The matmul slowed beside the Python and the call's end 1 ms longer beside it: the
    evidence says the cores it kept busy, the fix says it holds the GIL."""
    steps = []
    for k in range(STEPS):
        beside = k % 2 == 0
        matmul = SLOWED_MS + ALONE_MS[k % 4] - 1.0 if beside else ALONE_MS[k % 4]
        # the call's end after KernelAndDeviceFunc::Run (4.7): 0.05 ms alone, 0.15 beside the
        # Python, which runs to 4.9 in the even steps
        end = 4.7 + (0.15 if beside else 0.05) + 0.01 * (k % 3)
        events = _step(matmul, k, (0.15, 4.75) if beside else None)
        steps.append(
            [e for e in events if e[1] != "TFE_Py_ExecuteCancelable"]
            + [("main", "TFE_Py_ExecuteCancelable", 0.1, end - 0.1)]
        )
    db = _db(steps)
    assert db.limits.python.counted and db.limits.python.holds_gil
    page = _page(tmp_path, steps)
    assert "on the cores it kept busy" in page["bound_by"]["headline"]
    assert "which holds the GIL while it runs" in page["recommendation"]["details"][0]
