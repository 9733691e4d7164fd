"""Waits of the step thread at their edges (`stepscope.stats.steps.waits`): which threads'
work is the computation waited for, how they are named, and what no step or thread waits."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import build_step_db
from stepscope.stats.events import NOT_COUNTED, classify_events
from stepscope.stats.steps.limits import LimitType
from stepscope.stats.steps.waits import find_waits
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

US = 1_000
STEPS = 3
EPOCH_NS = 1_764_000_000 * 10**9  # times since 1970: past 2**53, exact only as integers


def _loop(with_pool: bool = True, base: int = 0) -> XSpaceBuilder:
    """3 steps of 10 ms, 20 ms apart: 1 ms dispatching, then untraced time ended by an
    ``Await`` at 9.99 ms (the thread blocked). Meanwhile, on compute threads: 4 ms from
    2 ms (XLA's Eigen pool), 2.5 ms from 0.5 ms (the PjRt client), 3 ms from 5 ms (an
    executor), 1 ms from 7 ms (an inter-op pool), a compiled program on a thread of no
    known name from 8.5 to 9 ms, and 6 ms after the step on an intra-op pool; other work
    on a loader thread from 9 to 9.5 ms."""
    builder = XSpaceBuilder("jax")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    threads = {
        "tf_XLAEigen/1": (2_000, 4_000),
        "tf_XLAPjRtCpuClient/2": (500, 2_500),
        "tf_Compute/3": (5_000, 3_000),
        "tf_inter_op/4": (7_000, 1_000),
        "tf_intra_op/5": (12_000, 6_000),
    }
    lines = {name: host.line(k, name) for k, name in enumerate(threads, start=2)}
    worker = host.line(8, "worker")
    loader = host.line(9, "loader")
    for k in range(STEPS):
        t0 = base + k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("PjitFunction(train_step)", t0, MS)
        main.event("CommonPjRtBuffer::Await", t0 + 9_990 * US, 1 * US)
        if with_pool:
            for name, (at_us, dur_us) in threads.items():
                lines[name].event("dot", t0 + at_us * US, dur_us * US)
            worker.event("ThunkExecutor::Execute", t0 + 8_500 * US, 500 * US)
        loader.event("read_batch", t0 + 9 * MS, 500 * US)
    return builder


@pytest.mark.parametrize("base", [0, EPOCH_NS])
def test_the_threads_waited_for_are_named_by_their_time_in_the_waits(base: int) -> None:
    db = build_step_db(build(_loop(base=base)))
    assert db.limits.ns.dtype == np.int64
    # the intra-op pool works the most, but after the steps' waits: it is not named; the
    # inter-op pool, fourth, is left out
    assert db.limits.waited_for == ("tf_XLAEigen", "tf_Compute", "tf_XLAPjRtCpuClient")
    limits = db.limit_ns()
    # 1 ms dispatching (one op: the model's compute on the host), the waits while the
    # pools compute (1 -> 8 ms) and the compiled program runs (8.5 -> 9 ms)
    assert limits["compute"].tolist() == [8_500 * US] * STEPS
    # blocked on nothing traced: 8 -> 8.5 ms and 9 -> 9.99 ms (the loader's work is no
    # computation), and the Await
    assert limits["waits"].tolist() == [1_491 * US] * STEPS


def test_one_thread_waited_for_is_named_alone() -> None:
    builder = XSpaceBuilder("jax")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    pool = host.line(2, "tf_XLAEigen/1")
    host.line(3, "tf_Compute/3").event("dot", 100 * MS, MS)  # long after the steps
    for k in range(STEPS):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("PjitFunction(train_step)", t0, MS)
        main.event("CommonPjRtBuffer::Await", t0 + 9_990 * US, 1 * US)
        pool.event("dot", t0 + 2 * MS, 4 * MS)
    assert build_step_db(build(builder)).limits.waited_for == ("tf_XLAEigen",)


def test_no_steps_or_no_step_threads_wait() -> None:
    profile = build(_loop())
    counted = classify_events(profile) != NOT_COUNTED
    empty = np.zeros(0, np.int64)
    lo, hi = np.array([0, 20 * MS]), np.array([10 * MS, 30 * MS])
    for lines, s_lo, s_hi in (((0,), empty, empty), ((), lo, hi)):
        waits = find_waits(profile, counted, lines, empty, empty, s_lo, s_hi, empty, empty)
        for part in (waits.compute_lo, waits.compute_hi, waits.idle_lo, waits.idle_hi):
            assert part.dtype == np.int64 and part.tolist() == []
        assert waits.computation == ()


def test_a_wait_with_nothing_computing_is_idle() -> None:
    db = build_step_db(build(_loop(with_pool=False)))
    assert db.limits.waited_for == ()
    assert db.limit_ns()["waits"].tolist() == [8_991 * US] * STEPS


def test_time_added_from_the_step_start_is_that_steps() -> None:
    """Step k (10 ms) starts untraced for (k + 1) x 100 µs (staging its batch: input), then
    runs a 1 ms op and untraced time: each step's columns keep their own time."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    staged = [(k + 1) * 100 * US for k in range(STEPS)]
    for k in range(STEPS):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::mm", t0 + staged[k], MS)
    ns = build_step_db(build(builder)).limits.ns
    assert ns[:, int(LimitType.INPUT) // 10].tolist() == staged
    assert ns[:, int(LimitType.COMPUTE_HOST) // 10].tolist() == [MS] * STEPS
    assert ns[:, int(LimitType.UNTRACED) // 10].tolist() == [9 * MS - w for w in staged]


def test_work_from_the_end_of_a_wait_on_is_not_waited_for_but_1_ns_in_it_is() -> None:
    builder = XSpaceBuilder("jax")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    pool = host.line(2, "tf_XLAEigen/1")
    after = host.line(3, "tf_Compute/3")
    tick = host.line(4, "tf_inter_op/4")
    for k in range(STEPS):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("PjitFunction(train_step)", t0, MS)
        main.event("CommonPjRtBuffer::Await", t0 + 9_990 * US, 1 * US)
        pool.event("dot", t0 + 2 * MS, 8 * MS)  # computes to the step's end
        after.event("dot", t0 + 10 * MS, MS)  # from there on: after the wait
        if k == STEPS - 1:  # 1 ns in all, while the thread waits
            tick.event("tick", t0 + MS + 500 * US, 1)
    db = build_step_db(build(builder))
    assert db.limits.waited_for == ("tf_XLAEigen", "tf_inter_op")


def test_a_wait_with_nothing_computing_meanwhile_names_nothing() -> None:
    builder = _loop(with_pool=False)
    builder.plane("/host:CPU").line(10, "tf_Compute/9").event("dot", 100 * MS, MS)
    db = build_step_db(build(builder))
    assert db.limits.waited_for == ()


def test_a_gap_is_a_wait_when_a_wait_event_starts_at_most_2_us_after_it() -> None:
    """Step 0: a 1 ms gap, a 2 µs op, then an `Await`: the gap is the thread blocked in
    it. Step 1: an `Await`, then a 0.5 µs gap: ended by no wait (the Await is before it)."""
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    main.event("train", 0, 10 * MS, {"step_num": 0, "_r": 1})
    main.event("aten::mm", 0, 5 * MS)
    main.event("aten::add", 6 * MS, 2 * US)
    main.event("CommonPjRtBuffer::Await", 6 * MS + 2 * US, 1 * US)
    main.event("aten::mm", 6 * MS + 3 * US, 4 * MS - 3 * US)
    t0 = 20 * MS
    main.event("train", t0, 10 * MS, {"step_num": 1, "_r": 1})
    main.event("aten::mm", t0, 5 * MS)
    main.event("CommonPjRtBuffer::Await", t0 + 5 * MS, 1 * US)
    main.event("aten::mm", t0 + 5 * MS + 1_500, 5 * MS - 1_500)
    db = build_step_db(build(builder))
    assert db.limit_ns()["waits"].tolist() == [MS + US, US]
