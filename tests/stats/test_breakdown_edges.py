"""The step database at its edges: work no step owns, links a thread declares, ties between
markers, events and steps touching at one instant, steps of one nanosecond or none, late device
work over several steps, the steps' untraced time and staged input. Each test builds the
smallest trace where the rule decides what the overview shows (issue #34: survivors of the
mutation run of ``stats/steps/breakdown.py``, docs/testing.md "Fifth pass")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from stepscope.stats import build_step_db
from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.host.untraced import where_untraced
from stepscope.stats.steps.breakdown import StepDb
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

STEP_MS = 10
# (line, name, start in ms from the step's start, duration in ms, stats)
Event = tuple[str, str, float, float, dict[str, Any]]
LINES = {"main": 1, "worker": 2, "loader": 3}


def _trace(
    events: Sequence[Event], steps: int = 1, gap_ms: float = 0, per_step: bool = True
) -> XSpaceBuilder:
    """``steps`` 10 ms ``train`` markers on ``main`` (``gap_ms`` apart), with ``events`` in
    each step (times from its start), or only in the first with ``per_step=False``."""
    builder = XSpaceBuilder("edges")
    host = builder.plane("/host:CPU")
    lines = {name: host.line(i, name) for name, i in LINES.items()}
    if any(line == "stream" for line, *_ in events):
        lines["stream"] = builder.plane("/device:GPU:0").line(7, "stream")
    for k in range(steps):
        t0 = 1_000 * MS + k * int((STEP_MS + gap_ms) * MS)
        lines["main"].event("train", t0, STEP_MS * MS, {"step_num": k, "_r": 1})
        for line, name, start_ms, dur_ms, stats in events if per_step or k == 0 else ():
            lines[line].event(name, t0 + int(start_ms * MS), int(dur_ms * MS), stats)
    return builder


def _cats(db: StepDb, step: int = 0) -> dict[str, float]:
    return {k: v[step] / MS for k, v in db.category_ns().items() if v[step]}


def _host_ms(db: StepDb) -> list[float]:
    return (db.category_ns()["host_compute"] / MS).tolist()


# --- Work no step owns ----------------------------------------------------------------------


def test_work_reached_from_a_root_that_is_no_step_counts_in_no_step() -> None:
    """TensorFlow's ``SessionRun`` is a root (``_r``) but no step marker: the work it reaches
    is its group's, in no step, even where its time falls inside one (as in XProf)."""
    builder = _trace([("main", "aten::add", 1, 2, {})], steps=3)
    worker = builder.plane("/host:CPU").line(2, "worker")
    for k in (1, 2):  # in the middle step and in the last
        t = 1_000 * MS + k * STEP_MS * MS
        worker.event("SessionRun", t + 4 * MS, 4 * MS, {"_r": 1})
        worker.event("aten::mul", t + 5 * MS, 2 * MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 1, 2]
    assert _host_ms(db) == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("stat", ["_p", "_c"])
def test_a_thread_that_declares_links_is_not_counted_by_time(stat: str) -> None:
    """Outside TensorFlow and JAX, a thread no step reaches counts by time window, unless it
    declares producer/consumer links of its own (a framework thread whose links lead to no
    step): then its work is no step's."""
    loose = build_step_db(
        build(_trace([("main", "aten::add", 1, 2, {}), ("worker", "aten::mul", 4, 3, {})]))
    )
    assert _host_ms(loose) == [5.0]
    events: list[Event] = [
        ("main", "aten::add", 1, 2, {}),
        ("worker", "aten::mul", 4, 3, {}),
        ("worker", "aten::div", 8, 1, {stat: 77, f"{stat}t": 9}),
    ]
    assert _host_ms(build_step_db(build(_trace(events)))) == [2.0]


# --- Markers sharing work -------------------------------------------------------------------


def test_the_longest_marker_takes_the_work_wherever_the_shorter_one_sits() -> None:
    """A short marker late in the step (it starts and ends after the long one's middle)
    still loses the shared work to the longer one."""
    builder = XSpaceBuilder("nested")
    main = builder.plane("/host:CPU").line(1, "main")
    for k in range(2):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("train", t0 + 7 * MS, 2 * MS, {"step_num": 100 + k, "_r": 1})
        main.event("aten::mm", t0 + 7 * MS, MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 1]
    assert _host_ms(db) == [1.0, 1.0]


def test_of_two_markers_of_one_length_the_later_one_takes_the_work_in_every_step() -> None:
    """Two markers of the same span reaching the same work (one nested in the other): the one
    found later in the trace takes it, in every step, so the steps come from one series (a
    sort that breaks ties at random would mix the two series' step numbers)."""
    builder = XSpaceBuilder("twins")
    main = builder.plane("/host:CPU").line(1, "main")
    for k in range(24):
        t0 = 1_000 * MS + k * 10 * MS
        length = (5 + k % 3) * MS  # lengths repeat, so that the sort sees many ties
        main.event("train", t0, length, {"step_num": k, "_r": 1})
        main.event("train", t0, length, {"step_num": 100 + k, "_r": 1})
        main.event("aten::mm", t0 + MS, MS)
    db = build_step_db(build(builder))
    assert db.dropped_ill_formed == 24
    assert db.step_num.tolist() == list(range(101, 123))  # the first and the last dropped


def test_a_step_without_work_of_its_own_gets_none_on_a_device_steps_line() -> None:
    """Steps from a TPU's "Steps" line take work by time window only: a step in which no op
    ran is no step, whichever event the profile lists first."""
    builder = XSpaceBuilder("tpu")
    tpu = builder.plane("/device:TPU:0")
    ops, steps = tpu.line(2, "XLA Ops"), tpu.line(1, "Steps")
    for k in range(4):
        if k:
            ops.event("fusion.1", k * STEP_MS * MS + MS, 5 * MS)
        steps.event(str(k), k * STEP_MS * MS, STEP_MS * MS, {"step_num": k})
    profile = build(builder)
    assert profile.event_name(0) == "fusion.1"  # the first listed: an op of step 1
    db = build_step_db(profile)
    assert (db.source, db.step_num.tolist(), db.dropped_ill_formed) == ("device", [1, 2, 3], 1)
    assert db.category_ns()["device_compute"].tolist() == [5 * MS] * 3


# --- Input waits of the step's thread -------------------------------------------------------


def test_the_steps_own_waits_turn_only_other_threads_waits_by_window_into_work() -> None:
    """When the step's thread waits for input itself, another thread's input wait counted by
    time is that thread's work; a wait the step reaches through a link stays the step's input,
    and other work counted by time keeps its own type."""
    events: list[Event] = [
        ("main", "IteratorGetNext", 0, 2, {}),
        ("main", "aten::linear", 2, 1, {"_pt": 2, "_p": 5}),
        ("worker", "IteratorGetNext", 2, 1, {"_ct": 2, "_c": 5}),  # linked: the step's
        ("loader", "IteratorGetNext", 4, 2, {}),  # by window: the loader's work
        ("loader", "XlaCompile", 7, 1, {}),  # by window: compilation
        ("main", "model/op:Relu", 8, 1, {}),
    ]
    db = build_step_db(build(_trace(events)))
    assert _cats(db) == {
        "input": 3.0,
        "host_compute": 3.0,
        "compilation": 1.0,
        "other": 3.0,
    }


# --- Events and steps touching at one instant -----------------------------------------------


def test_work_touching_a_step_only_at_its_end_does_not_make_it_a_step() -> None:
    """A step is a step when it holds compute: work counted by time that starts at the very
    instant a step ends (in the gap after it) is not in it, and a step before any such work is
    not given the work of the steps after it."""
    builder = _trace([], steps=4, gap_ms=5)
    main, worker = (builder.plane("/host:CPU").line(i) for i in (1, 2))
    period = (STEP_MS + 5) * MS
    for k in (0, 2, 3):
        main.event("aten::add", 1_000 * MS + k * period + MS, 2 * MS)
    worker.event("aten::copy_", 1_000 * MS + 5 * MS, MS)  # in step 0, by window
    worker.event("aten::mul", 1_000 * MS + period + STEP_MS * MS, MS)  # at step 1's end
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 2, 3]
    assert db.dropped_ill_formed == 1
    assert _host_ms(db) == [3.0, 2.0, 2.0]


def test_a_marker_of_no_length_is_no_step_and_costs_the_others_nothing() -> None:
    """A marker of 0 ns (a step the capture cut to nothing) with an instant at its time: no
    step, and work spanning the two steps around it still counts in each."""
    builder = _trace([("main", "aten::add", 1, 1, {})], steps=2, gap_ms=10)
    main, worker = (builder.plane("/host:CPU").line(i) for i in (1, 2))
    gap_at = 1_000 * MS + 15 * MS
    main.event("train", gap_at, 0, {"step_num": 7, "_r": 1})
    worker.event("aten::fill_", gap_at, 0)
    worker.event("aten::copy_", 1_000 * MS + 8 * MS, 16 * MS)  # step 0 into step 1
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 1]
    assert _host_ms(db) == [3.0, 4.0]  # step 1: the copy to 4 ms over its own op


def test_steps_of_one_nanosecond_are_steps_and_of_none_are_not() -> None:
    """Without traced work in any step, every marker the user wrote is a step (its time "All
    Others"), down to one of 1 ns; a marker of 0 ns has no time to break down."""
    builder = XSpaceBuilder("tiny")
    main = builder.plane("/host:CPU").line(1, "main")
    for k, dur_ns in enumerate([STEP_MS * MS, 1, 0, STEP_MS * MS]):
        main.event("train", 1_000 * MS + k * STEP_MS * MS, dur_ns, {"step_num": k, "_r": 1})
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 1, 3]
    assert db.dur_ns.tolist() == [STEP_MS * MS, 1, STEP_MS * MS]
    assert db.dropped_ill_formed == 1


def test_an_instant_at_the_steps_start_holds_its_type_and_one_before_it_does_not() -> None:
    """A 0 ns event holds its type current until the next event of that type starts (XProf's
    sweep): one at the step's first instant counts; one grouped with the step but before it
    (an executor that ran before the step opened) holds nothing inside it. The untraced places
    locate the "host" limit, which no instant holds: nothing ran there that the trace saw
    (decision 307)."""
    builder = _trace([("main", "aten::relu", 0, 0, {}), ("main", "aten::add", 5, 1, {})], steps=2)
    assert _host_ms(build_step_db(build(builder))) == [6.0, 6.0]
    db = build_step_db(build(builder))
    text = where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()))
    assert "mostly after '(step start)' and before 'aten::add' (5.00 ms per step" in text

    before = _trace(
        [
            ("main", "FunctionRun", 1, 1, {"_r": 1, "_pt": 2, "_p": 5}),
            ("worker", "EagerExecute", -4, 2, {"_ct": 2, "_c": 5}),
            ("worker", "ThreadpoolListener::StartRegion", -3, 0, {}),
            ("main", "model/op:Relu", 6, 2, {}),
        ]
    )
    assert _host_ms(build_step_db(build(before))) == [2.0]


def test_an_instant_before_an_untraced_gap_holds_no_untraced_place() -> None:
    """An un-jitted JAX loop: a Python generator sleeps between the last update op and the
    next matmul, just after an instant (a 0 ns event such as the `end: wrapped_subtract` XLA's
    CPU client writes). XProf's sweep holds host compute over the sleep (kept in the
    categories), but nothing ran there: it is the "host" limit, and its place is that gap in
    every step (on a real loop the headline said "1.58 ms per step in 14 of 39 steps" where
    the script measured 4.19 ms a step in `next()`)."""
    events = [
        ("main", "PjitFunction(subtract)", 0, 2, {}),
        ("main", "end: wrapped_subtract", 2, 0, {}),
        ("main", "PjitFunction(matmul)", 7, 2, {}),
    ]
    db = build_step_db(build(_trace(events, steps=3)))
    assert _host_ms(db) == [9.0, 9.0, 9.0]  # XProf's: the instant holds 2-7 ms
    text = where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()))
    assert text == (
        "on thread main, mostly after 'end: wrapped_subtract' and before "
        "'PjitFunction(matmul)' (5.00 ms per step in 3 of 3 steps)"
    )


def test_the_untraced_gap_is_named_by_the_steps_first_event() -> None:
    """The largest untraced gap of a step sits after its first traced event and before the
    next one: both are named, the first one too."""
    db = build_step_db(
        build(_trace([("main", "aten::add", 1, 2, {}), ("main", "aten::mul", 8, 1, {})]))
    )
    text = where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()))
    assert text == (
        "on thread main, mostly after 'aten::add' and before 'aten::mul' (5.00 ms in the one step)"
    )


def test_device_work_at_the_markers_edges_keeps_the_markers_span() -> None:
    """A kernel (no launch recorded: its own start counts) that starts as the marker starts,
    or ends as it ends, is inside the marker: the step is the marker, not the kernel."""
    builder = _trace([], steps=2)
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    stream.event("volta_sgemm", 1_000 * MS, MS)
    stream.event("volta_sgemm", 1_000 * MS + 19 * MS, MS)
    db = build_step_db(build(builder))
    assert db.dur_ns.tolist() == [STEP_MS * MS] * 2
    assert [_cats(db, k) for k in range(2)] == [{"device_compute": 1.0, "other": 9.0}] * 2


def test_a_step_whose_device_work_is_an_instant_after_it_keeps_its_marker() -> None:
    """A device span of no length (the step's only kernel recorded as 0 ns, after the marker
    ended) says nothing of when the step ran: the step keeps its marker's span instead of
    becoming an instant, which would drop it as ill-formed."""
    builder = _trace([], steps=3, gap_ms=5)
    launcher = builder.plane("/host:CPU").line(5, "launcher")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    for k, run_ms, dur_ns in [(0, 3, MS), (1, 11, 0), (2, 3, MS)]:
        t0 = 1_000 * MS + k * 15 * MS
        launcher.event("cudaLaunchKernel", t0 + MS, MS, {"correlation_id": k + 1})
        stream.event("volta_sgemm", t0 + run_ms * MS, dur_ns, {"correlation_id": k + 1})
    db = build_step_db(build(builder))
    assert (db.step_num.tolist(), db.dropped_ill_formed) == ([0, 1, 2], 0)
    assert db.dur_ns.tolist() == [STEP_MS * MS] * 3
    assert db.category_ns()["device_compute"].tolist() == [MS, 0, MS]


def test_a_launch_that_is_the_profiles_first_event_still_places_its_kernel() -> None:
    """A kernel belongs to the step that launched it, even when it runs in the next step's
    window, also when its launch is the first event of the profile."""
    builder = XSpaceBuilder("launch")
    host = builder.plane("/host:CPU")
    launcher, main = host.line(5, "launcher"), host.line(1, "main")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    launcher.event("cudaLaunchKernel", 1_002 * MS, MS, {"correlation_id": 1})
    stream.event("volta_sgemm", 1_011 * MS, MS, {"correlation_id": 1})  # in step 1's window
    launcher.event("cudaLaunchKernel", 1_013 * MS, MS, {"correlation_id": 2})
    stream.event("volta_sgemm", 1_015 * MS, MS, {"correlation_id": 2})
    for k in range(2):
        main.event("train", 1_000 * MS + k * 10 * MS, 10 * MS, {"step_num": k, "_r": 1})
    profile = build(builder)
    assert profile.event_name(0) == "cudaLaunchKernel"
    db = build_step_db(profile)
    assert db.step_num.tolist() == [0, 1]
    assert db.category_ns()["device_compute"].tolist() == [MS, MS]


def test_steps_stay_sequential_behind_a_device_running_late_over_two_steps() -> None:
    """The GPU runs behind: step 1's kernel runs past step 2's marker, so step 1 runs from its
    marker's start to its device work's end (its host time before the kernel stays in it:
    decision 1056) and step 2 starts when step 1 ended, not when its marker did."""
    builder = _trace([], steps=3)
    host = builder.plane("/host:CPU")
    launcher = host.line(5, "launcher")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    t = 1_000 * MS
    for corr, launch_ms, run_ms, dur_ms in [(1, 1, 2, 1), (2, 15, 18, 7), (3, 25, 26, 2)]:
        launcher.event("cudaLaunchKernel", t + launch_ms * MS, MS, {"correlation_id": corr})
        stream.event("volta_sgemm", t + run_ms * MS, dur_ms * MS, {"correlation_id": corr})
    db = build_step_db(build(builder))
    assert ((db.start_ns - t) / MS).tolist() == [0.0, 10.0, 25.0]
    assert (db.dur_ns / MS).tolist() == [10.0, 15.0, 5.0]


def test_a_step_begins_after_the_earlier_work_its_device_was_still_running() -> None:
    """The device still runs a warm-up kernel no step holds when step 0's marker opens: the
    step begins when that kernel ended, not at its marker (the device was busy, not waiting
    for the step's host work); with the device idle, it begins at its marker (decision 1056)."""
    for warm_ms, start_ms in ((6, 5.0), (0.5, 0.0)):
        builder = _trace([], steps=2)
        host = builder.plane("/host:CPU")
        launcher = host.line(5, "launcher")
        stream = builder.plane("/device:GPU:0").line(7, "stream")
        t = 1_000 * MS
        stream.event("warmup_sgemm", t - MS, int(warm_ms * MS))  # launched before the capture
        for corr, launch_ms, run_ms in [(1, 1, 8), (2, 11, 18)]:
            launcher.event("cudaLaunchKernel", t + launch_ms * MS, MS, {"correlation_id": corr})
            stream.event("volta_sgemm", t + run_ms * MS, 4 * MS, {"correlation_id": corr})
        db = build_step_db(build(builder))
        assert ((db.start_ns - t) / MS).tolist() == [start_ms, 12.0]
        assert ((db.start_ns + db.dur_ns - t) / MS).tolist() == [12.0, 22.0]


def test_the_devices_backlog_at_the_capture_is_no_steps_and_agrees_with_the_diagnostics() -> None:
    """Work queued before the capture (no launch in the trace) runs into step 0's marker until
    the step's first launched kernel (an MI300X trace: 30 ms of its previous step's
    all-reduces): no step's, so step 0 begins when it ends, and the diagnostics place it in
    none either (decision 1072). A kernel without a launch after the first launched one
    still goes by its own start."""
    builder = _trace([], steps=2)
    host = builder.plane("/host:CPU")
    launcher = host.line(5, "launcher")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    t = 1_000 * MS
    stream.event("backlog_sgemm", t + MS // 2, 6 * MS)  # starts inside step 0's marker
    for corr, launch_ms, run_ms in [(1, 1, 8), (2, 11, 14)]:
        launcher.event("cudaLaunchKernel", t + launch_ms * MS, MS, {"correlation_id": corr})
        stream.event("volta_sgemm", t + run_ms * MS, 2 * MS, {"correlation_id": corr})
    stream.event("graph_sgemm", t + 17 * MS, MS)  # no launch, after the first launched one
    profile = build(builder)
    db = build_step_db(profile)
    assert ((db.start_ns - t) / MS).tolist() == [6.5, 10.0]
    assert (db.category_ns()["device_compute"] / MS).tolist() == [2.0, 3.0]
    data = HostData("edges", profile, db, build_kernel_db(profile))
    ev = data.device_events[np.argsort(profile.start_ns[data.device_events])]
    steps = data.step_of_device_events(ev).tolist()
    assert [(profile.event_name(int(e)), k) for e, k in zip(ev, steps, strict=True)] == [
        ("backlog_sgemm", -1),
        ("volta_sgemm", 0),
        ("volta_sgemm", 1),
        ("graph_sgemm", 1),
    ]


# --- What the database says about its steps -------------------------------------------------


def test_dropped_steps_are_said_after_how_the_steps_were_found() -> None:
    db = build_step_db(build(_trace([("main", "aten::add", 1, 1, {})], steps=6)))
    assert db.description == (
        "6 step markers ('train' with _r and step_num); the first and the last dropped as "
        "possibly cut off by the capture window (XProf's rule for more than 5 steps)"
    )


def test_each_step_keeps_its_marker_event() -> None:
    profile = build(_trace([("main", "aten::add", 1, 1, {})], steps=6))
    db = build_step_db(profile)
    assert [profile.event_name(e) for e in db.event.tolist()] == ["train"] * 4
    assert profile.start_ns[db.event].tolist() == db.start_ns.tolist()


def test_input_staged_in_a_step_beyond_its_input_wait() -> None:
    """The batch is built in the step (2 ms up to the model's first op), 1 ms of it waiting
    for the loader: the input category has the wait, staged input the rest, in each step."""
    events: list[Event] = [
        ("main", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 1, {}),
        ("main", "$batches.py:10 make_batch", 1, 1, {}),
        ("main", "aten::to", 2, 1, {}),
        ("main", "nn.Module: Net", 3, 5, {}),
    ]
    db = build_step_db(build(_trace(events, steps=3)))
    assert db.category_ns()["input"].tolist() == [MS] * 3
    assert db.staged_ns.tolist() == [2 * MS] * 3


def test_on_a_device_profile_a_long_call_of_a_usually_short_op_is_dispatch() -> None:
    """With a GPU, ``aten::mm`` queues a kernel: a few 5 ms calls among many 20 µs ones are
    calls that waited (for the GIL, a core, a full launch queue), so the run is dispatch; on
    the CPU alone they would be the op computing (tests/stats/test_dispatch_bound.py)."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    for k in range(6):
        t0 = k * 30 * MS
        main.event("train", t0, 30 * MS, {"step_num": k, "_r": 1})
        stream.event("volta_sgemm", t0 + 20 * MS, MS)
        t = t0
        for i in range(40):
            dur = 5 * MS if i in (10, 20, 30) else 20_000
            main.event("aten::mm", t, dur)
            t += dur + 5_000
    db = build_step_db(build(builder))
    assert db.has_device
    limits = db.limit_ns()
    assert limits["dispatch"].min() >= 15 * MS
    assert limits["compute"].tolist() == [MS] * 4


def test_times_far_from_zero_are_counted_to_the_nanosecond() -> None:
    """Profiles hold times since the epoch (1.7e18 ns): the breakdown stays in integers, so
    a 1 ns event and an odd step length are exact (a float64 is off by up to 128 ns there)."""
    builder = XSpaceBuilder("epoch")
    main = builder.plane("/host:CPU").line(1, "main")
    t0 = 1_700_000_000_123_456_789
    main.event("train", t0, 10 * MS + 7, {"step_num": 0, "_r": 1})
    main.event("aten::add", t0 + 3, 1)
    main.event("aten::mul", t0 + MS + 1, 2 * MS + 3)
    db = build_step_db(build(builder))
    assert db.start_ns.tolist() == [t0]
    assert db.dur_ns.tolist() == [10 * MS + 7]
    assert db.category_ns()["host_compute"].tolist() == [2 * MS + 4]
    assert np.array_equal(sum(db.category_ns().values()), db.dur_ns)


def test_markers_of_two_threads_are_steps_in_time_order() -> None:
    """The breakdown reads the markers as windows in time order: markers of two threads,
    the later thread listed first, still make steps in the order they ran, each with its
    own launches' kernels."""
    builder = XSpaceBuilder("two loops")
    host = builder.plane("/host:CPU")
    late, early = host.line(2, "loop_b"), host.line(1, "loop_a")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    for k in range(3):
        for line, offset_ms, base in ((late, 5, 10), (early, 0, 0)):
            t0 = 1_000 * MS + (k * 10 + offset_ms) * MS
            line.event("train", t0, 4 * MS, {"step_num": base + k, "_r": 1})
            line.event("cudaLaunchKernel", t0 + MS, MS, {"correlation_id": 100 * base + k + 1})
            stream.event(
                "volta_sgemm",
                t0 + 2 * MS,
                (1 + base // 10) * MS,
                {"correlation_id": 100 * base + k + 1},
            )
    db = build_step_db(build(builder))
    # six steps: the first and the last dropped (XProf's rule)
    assert db.step_num.tolist() == [10, 1, 11, 2]
    assert ((db.start_ns - 1_000 * MS) / MS).tolist() == [5, 10, 15, 20]
    assert (db.category_ns()["device_compute"] / MS).tolist() == [2, 1, 2, 1]
