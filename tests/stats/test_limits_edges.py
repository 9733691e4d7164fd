"""The "bound by" limits at their edges (`stepscope.stats.steps.limits`, `limit_table`): the
limit of each event, and what a step database without steps holds."""

from __future__ import annotations

import numpy as np

from stepscope.stats import build_step_db
from stepscope.stats.events import classify_events
from stepscope.stats.steps.limit_table import LimitTable
from stepscope.stats.steps.limits import N_LIMIT_COLUMNS, LimitType, limit_types
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build


def test_a_pipeline_stage_on_the_step_thread_is_input_work_and_the_table_is_int16() -> None:
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "python")
    main.event("Iterator::Prefetch::Map", 0, 100, {"parent_id": 7})  # a nested stage
    main.event("aten::mm", 200, 100)
    main.event("$train.py:3 step", 400, 100)
    profile = build(builder)
    events = np.arange(profile.n_events)
    types = limit_types(
        profile, events, classify_events(profile)[events], has_device=False, step_lines=(0,)
    )
    assert types.dtype == np.int16
    by_name = {
        profile.event_name(int(e)): LimitType(int(t)) for e, t in zip(events, types, strict=True)
    }
    assert by_name == {
        "Iterator::Prefetch::Map": LimitType.INPUT_WORK,
        "aten::mm": LimitType.COMPUTE_HOST,  # a framework op, no device: the model's compute
        "$train.py:3 step": LimitType.HOST,  # a Python frame
    }


def test_a_limit_table_without_steps_is_empty() -> None:
    empty = LimitTable.empty()
    assert empty.ns.shape == (0, N_LIMIT_COLUMNS)
    assert empty.dispatch.ops_per_step() == 0.0 and empty.dispatch.caller == ""
    assert empty.waited_for == ()


def test_host_collective_time_is_not_host_time_and_untraced_time_stays_untraced() -> None:
    """Per 10 ms step: an op (4 ms), an all-reduce the thread waits in (2 ms), then 4 ms
    untraced: the limit table's columns keep each apart."""
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(3):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::mm", t0, 4 * MS)
        main.event("c10d::allreduce_", t0 + 4 * MS, 2 * MS)
    ns = build_step_db(build(builder)).limits.ns
    column = {t: int(t) // 10 for t in LimitType}
    assert ns[:, column[LimitType.UNTRACED]].tolist() == [4 * MS] * 3
    assert ns[:, column[LimitType.HOST]].tolist() == [0] * 3
    assert ns[:, column[LimitType.HOST_COLLECTIVE]].tolist() == [2 * MS] * 3
    assert ns[:, column[LimitType.COMPUTE_HOST]].tolist() == [4 * MS] * 3


def test_a_single_ns_of_host_compute_keeps_its_own_column() -> None:
    """The low limits (host, host collective, input work, host compute) share what the
    higher ones leave in proportion to their own time: a step whose only low time is 1 ns of
    host compute gives that nanosecond to host compute, not to host."""
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(3):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::mm", t0 + MS, 1)
    ns = build_step_db(build(builder)).limits.ns
    column = {t: int(t) // 10 for t in LimitType}
    assert ns[:, column[LimitType.COMPUTE_HOST]].tolist() == [1] * 3
    assert ns[:, column[LimitType.HOST]].tolist() == [0] * 3
    assert ns.sum(axis=1).tolist() == [10 * MS] * 3


def test_another_threads_python_call_is_beside_the_step() -> None:
    """Per 10 ms step: 6 ms in the step thread's own Python call, 4 ms untraced; another
    thread's Python call (`$threading.py Thread.run`, stepscope's sampler traced by a remote
    capture's Python tracer) spans every step. It covered the untraced 4 ms as the step's
    host work, and the headline then said the time was inside traced regions (decision
    578): it is beside the step now, as the pipeline's threads are."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    main = plane.line(1, "MainThread")
    other = plane.line(2, "stepscope-sampler")
    other.event("$threading.py:971 Thread.run", 0, 70 * MS)
    for k in range(3):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("$train.py:9 step", t0, 6 * MS)
    ns = build_step_db(build(builder)).limits.ns
    assert ns[:, int(LimitType.HOST) // 10].tolist() == [6 * MS] * 3
    assert ns[:, int(LimitType.UNTRACED) // 10].tolist() == [4 * MS] * 3
