"""Step detection from each source, on synthetic traces."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.errors import StepscopeError
from stepscope.stats import build_step_db, find_step_markers
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build, cpu_training


def test_marker_steps_from_r_and_step_num() -> None:
    markers = find_step_markers(build(cpu_training(steps=4)))
    assert markers.source == "marker"
    assert markers.step_num.tolist() == [0, 1, 2, 3]
    assert markers.names[0] == "train 0"
    assert markers.use_groups and markers.drop_incomplete
    # FunctionRun has _r=1 too, but it is one of XProf's implicit roots, not a step
    assert len(markers) == 4


def test_drop_rule_keeps_five_and_trims_more() -> None:
    assert build_step_db(build(cpu_training(steps=5))).n_steps == 5
    db = build_step_db(build(cpu_training(steps=7)))
    assert db.n_steps == 5 and db.dropped_incomplete == 2
    assert db.step_num.tolist() == [1, 2, 3, 4, 5]


def test_profiler_step_source() -> None:
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(7, "pt_main_thread")
    for k in range(3):
        main.event(f"ProfilerStep#{k + 10}", k * 10 * MS, 10 * MS)
        main.event("aten::mm", k * 10 * MS + MS, 5 * MS)
    db = build_step_db(build(builder))
    assert db.source == "profiler_step" and db.step_num.tolist() == [10, 11, 12]
    assert db.category_ns()["host_compute"].tolist() == [5 * MS] * 3


def test_keras_batch_source_and_marker_precedence() -> None:
    keras = XSpaceBuilder("keras")
    line = keras.plane("/host:CPU").line(1, "python")
    for k in range(3):
        line.event("Profiled batch", k * 10 * MS, 10 * MS, {"step_num": k + 4})
        line.event("model/op:Relu", k * 10 * MS + MS, MS)
    markers = find_step_markers(build(keras))
    assert markers.source == "keras_batch" and markers.step_num.tolist() == [4, 5, 6]
    assert not markers.drop_incomplete  # complete by construction
    # with _r markers too, the markers win (as in XProf)
    line.event("train", 0, 9 * MS, {"step_num": 4, "_r": 1})
    assert find_step_markers(build(keras)).source == "marker"


def test_device_steps_line() -> None:
    builder = XSpaceBuilder("tpu")
    steps = builder.plane("/device:TPU:0").line(1, "Steps")
    ops = builder.plane("/device:TPU:0").line(2, "XLA Ops")
    stream = builder.plane("/device:TPU:0").line(3, "Stream #0")
    for k in range(3):
        steps.event(str(k + 100), k * 5 * MS, 5 * MS, {"group_id": k + 100})
        ops.event("fusion", k * 5 * MS, 4 * MS)
        stream.event("fusion_kernel", k * 5 * MS, 4 * MS)
    db = build_step_db(build(builder))
    assert db.source == "device" and db.step_num.tolist() == [100, 101, 102]
    # derived lines (Steps, XLA Ops) are not device work; the stream is
    assert db.category_ns()["device_compute"].tolist() == [4 * MS] * 3


def test_inferred_steps_from_repeating_top_level_event() -> None:
    builder = XSpaceBuilder("plain")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    side = builder.plane("/host:CPU").line(2, "logger")
    for k in range(6):
        t0 = k * 20 * MS + (MS if k == 3 else 0)  # one slightly late step is fine
        main.event("next_batch", t0, 4 * MS)
        main.event("forward", t0 + 5 * MS, 10 * MS)
        main.event("tiny", t0 + 16 * MS, MS // 10)
        main.event("tiny", t0 + 17 * MS, MS // 10)  # twice a step: irregular periods
        side.event("flush", k * 7 * MS, MS // 2)
    markers = find_step_markers(build(builder))
    assert markers.source == "inferred"
    assert len(markers) == 5  # 6 occurrences bound 5 complete steps
    assert "forward" in markers.description or "next_batch" in markers.description
    assert np.median(markers.end_ns - markers.start_ns) == 20 * MS


def test_no_steps_says_why() -> None:
    builder = XSpaceBuilder("one")
    builder.plane("/host:CPU").line(1, "main").event("only_once", 0, MS)
    db = build_step_db(build(builder))
    assert db.n_steps == 0 and db.source == "none"
    assert "no step markers" in db.description


def test_forced_source_and_unknown_source() -> None:
    profile = build(cpu_training(steps=4))
    assert find_step_markers(profile, "profiler_step").source == "none"
    inferred = find_step_markers(profile, "inferred")
    assert inferred.source == "inferred" and len(inferred) == 3
    with pytest.raises(StepscopeError, match="unknown step source"):
        find_step_markers(profile, "bogus")


def test_markers_with_nothing_traced_inside_are_steps() -> None:
    # A loop of untraced Python inside `stepscope.step`, as written before step anchors: no
    # step holds compute, yet each marker the user wrote is a step (all of its time "other").
    builder = XSpaceBuilder("untraced")
    line = builder.plane("/host:CPU").line(1, "python")
    for k in range(8):
        line.event("train", k * 10 * MS, 9 * MS, {"step_num": k, "_r": 1})
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [1, 2, 3, 4, 5, 6]  # XProf's drop rule still applies
    assert db.category_ns()["other"].tolist() == [9 * MS] * 6


def test_steps_without_compute_are_dropped_when_others_have_it() -> None:
    builder = cpu_training(steps=4)
    line = builder.plane("/host:CPU").line(1, "python")
    line.event("train", 100 * MS, 5 * MS, {"step_num": 9, "_r": 1})  # nothing inside
    db = build_step_db(build(builder))
    assert 9 not in db.step_num.tolist() and db.dropped_ill_formed == 1


def _fetch_then_step(fetch_inside: bool) -> XSpaceBuilder:
    # `for step, batch in enumerate(loader): with stepscope.step(step): train(batch)`: each
    # 4 ms fetch runs just before its step's marker opens (or inside it, with stepscope.steps).
    builder = XSpaceBuilder("loop")
    line = builder.plane("/host:CPU").line(1, "python")
    for k in range(4):
        t = k * 10 * MS
        marker_start = t if fetch_inside else t + 4 * MS
        line.event("train", marker_start, t + 9 * MS - marker_start, {"step_num": k, "_r": 1})
        line.event("IteratorGetNextOp::DoCompute", t, 4 * MS, {"id": 1, "iter_num": k})
        line.event("Iterator::Loader", t, 4 * MS, {"id": 1})
        line.event("compute", t + 4 * MS, 5 * MS)
    return builder


def test_a_fetch_just_before_a_step_belongs_to_that_step() -> None:
    inside = build_step_db(build(_fetch_then_step(fetch_inside=True)))
    before = build_step_db(build(_fetch_then_step(fetch_inside=False)))
    for db in (inside, before):
        assert db.dur_ns.tolist() == [9 * MS] * 4
        assert db.category_ns()["input"].tolist() == [4 * MS] * 4
        assert db.category_ns()["host_compute"].tolist() == [5 * MS] * 4
    assert before.start_ns.tolist() == [k * 10 * MS for k in range(4)]


def test_a_fetch_inside_another_step_or_on_another_thread_does_not_move() -> None:
    builder = _fetch_then_step(fetch_inside=False)
    other = builder.plane("/host:CPU").line(2, "loader thread")
    other.event("IteratorGetNextOp::DoCompute", 14 * MS, MS, {"id": 2, "iter_num": 0})
    db = build_step_db(build(builder))
    assert db.start_ns.tolist() == [k * 10 * MS for k in range(4)]
    assert db.dur_ns.tolist() == [9 * MS] * 4


def test_a_fetch_begun_inside_a_step_does_not_feed_the_next() -> None:
    """A wait for input that starts inside step 0 and ends in the gap after it is no fetch
    for step 1 (only a wait wholly in the gap is): step 1 still starts at its own fetch."""
    builder = _fetch_then_step(fetch_inside=False)
    line = builder.plane("/host:CPU").line(1, "python")
    line.event("IteratorGetNextOp::DoCompute", 8 * MS, MS + MS // 2, {"id": 1, "iter_num": 9})
    db = build_step_db(build(builder))
    assert db.start_ns.tolist() == [k * 10 * MS for k in range(4)]
    assert db.dur_ns.tolist() == [9 * MS] * 4
