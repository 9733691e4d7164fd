"""The gap before a capture's first step reaches back to the capture's start (decision 1054).

A remote capture of a TensorFlow worker began inside an iteration: that iteration's eager
``IteratorGetNext`` (its fetch) and its ``train_step`` call were recorded, its marker was not
(begun before the capture). The fetch lay in the gap before the first recorded marker, so it
fed that step: step 1134 read 55.13 ms ("Warm-up: ... mostly all others") where its script
timed 10.29 ms. A fetch just before the first step, nothing traced after it, still feeds it."""

from __future__ import annotations

from stepscope.stats.steps.breakdown import StepDb, build_step_db
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder
from tests.support.analysis import MS, build

FIRST_MS = 40  # the first recorded marker opens here
STEP_MS = 10


def _fetch(main: LineBuilder, at_ms: float, dur_ms: float) -> None:
    t, d = int(at_ms * MS), int(dur_ms * MS)
    main.event("TFE_Py_FastPathExecute_C", t, d)
    main.event("EagerLocalExecute: IteratorGetNext", t + 10_000, d - 20_000)
    main.event("IteratorGetNextOp::DoCompute", t + 20_000, d - 40_000)


def _train(main: LineBuilder, compute: LineBuilder, at_ms: float, dur_ms: float) -> None:
    t, d = int(at_ms * MS), int(dur_ms * MS)
    main.event("TFE_Py_ExecuteCancelable", t, d)
    main.event("KernelAndDeviceFunc::Run", t + 10_000, d - 20_000)
    compute.event("dense/MatMul:_MklMatMul", t + 50_000, d - 100_000)


def _capture(in_flight: bool) -> StepDb:
    """Four marked steps of `STEP_MS` from `FIRST_MS`, each a 1 ms fetch then 8 ms of
    training; before them either the rest of an iteration in flight (a 2 ms fetch at 0,
    then 30 ms of training) or only a fetch just before the first marker (37-39.5 ms)."""
    builder = XSpaceBuilder("tf")
    host = builder.plane("/host:CPU")
    main, compute = host.line(1, "MainThread"), host.line(2, "tf_Compute/1")
    if in_flight:
        _fetch(main, 0.0, 2.0)
        _train(main, compute, 4.0, 30.0)
    else:
        _fetch(main, 37.0, 2.5)
    for k in range(4):
        t0 = FIRST_MS + k * STEP_MS
        main.event("train", int(t0 * MS), STEP_MS * MS, {"step_num": 10 + k, "_r": 1})
        _fetch(main, t0 + 0.2, 1.0)
        _train(main, compute, t0 + 1.5, 8.0)
    return build_step_db(build(builder))


def test_the_iteration_in_flight_at_the_start_feeds_no_step() -> None:
    db = _capture(in_flight=True)
    assert db.step_num.tolist()[0] == 10
    # the first step is its marker: not stretched back over the iteration before it
    assert int(db.start_ns[0]) == FIRST_MS * MS
    assert int(db.dur_ns[0]) == STEP_MS * MS


def test_a_fetch_just_before_the_first_step_still_feeds_it() -> None:
    db = _capture(in_flight=False)
    assert db.step_num.tolist()[0] == 10
    assert int(db.start_ns[0]) == 37 * MS + 20_000  # its IteratorGetNextOp's start
