"""Who issued the dispatched ops (`stepscope.stats.steps.dispatch`): the Python function the
stack sampler saw on at least half of the samples taken inside the dispatch runs (its deepest
public one), or the traced frame around the runs; nothing when neither says."""

from __future__ import annotations

import dataclasses

import numpy as np

from stepscope.model import Profile
from stepscope.model.strings import StringTable
from stepscope.stats import build_step_db
from stepscope.stats.steps.dispatch import DispatchEvidence, DispatchRuns, evidence, find_runs
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder
from tests.support.analysis import MS, build

US = 1_000
STEPS = 6
RUN_AT_US = 1_000  # each step's run of 20 small ops: 1.000 ms to 1.576 ms into the step
RUN_END_US = RUN_AT_US + 20 * 30 - 24


def _loop(main_name: str = "python") -> tuple[XSpaceBuilder, LineBuilder]:
    """6 steps of 10 ms; in each, 20 `PjitFunction` dispatches of 6 µs, 24 µs apart."""
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, main_name)  # the plane's first line
    for k in range(STEPS):
        t0 = k * 10 * MS
        main.event("train", t0, 7 * MS, {"step_num": k, "_r": 1})
        t = t0 + RUN_AT_US * US
        for i in range(20):
            main.event(f"PjitFunction({('multiply', 'add')[i % 2]})", t, 6 * US)
            t += 30 * US
    return builder, main


def _samples(builder: XSpaceBuilder, thread: int = 1) -> LineBuilder:
    line = builder.plane("/host:CPU").line((1 << 48) + thread, "Python samples")
    line.display_id = thread
    return line


def _sample(
    line: LineBuilder, at_ns: int, stack: str, count: int = 1, own: str | None = None
) -> None:
    stats: dict[str, object] = {"stack": stack, "samples": count}
    if own is not None:  # the capture's `own_frames` (decision 1033)
        stats["own_frames"] = own
    line.event(stack.rsplit(";", 1)[-1], at_ns, count * US, stats)  # type: ignore[arg-type]


def _caller(builder: XSpaceBuilder) -> str:
    return build_step_db(build(builder)).limits.dispatch.caller


OUTER = "<module> (loop.py:5);train_step (loop.py:9)"


def test_without_frames_or_samples_no_caller_is_named() -> None:
    builder, _ = _loop()
    db = build_step_db(build(builder))
    assert db.limits.dispatch.ops.tolist() == [20] * (STEPS - 2)
    assert db.limits.dispatch.caller == ""


def test_the_deepest_public_function_on_half_the_samples_in_the_runs_is_named() -> None:
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        t0 = k * 10 * MS + RUN_AT_US * US
        # six samples in the runs, from their first instant to the last: apply_updates on
        # every one, its private helper deeper on three, scale_grads (deeper) on two: a third
        for _ in range(3):
            _sample(samples, t0, f"{OUTER};apply_updates (opt.py:3);_apply (opt.py:8)")
        _sample(samples, t0 + 200 * US, f"{OUTER};apply_updates (opt.py:4)")
        deep = f"{OUTER};apply_updates (opt.py:5);x (opt.py:6);scale_grads (opt.py:7)"
        _sample(samples, t0 + 300 * US, deep)
        _sample(samples, t0 + (RUN_END_US - RUN_AT_US - 1) * US, deep)
        # outside the runs (from the run's end on): not what issued the ops
        for _ in range(7):
            _sample(samples, t0 + (RUN_END_US - RUN_AT_US) * US, f"{OUTER};log_metrics (log.py:3)")
        _sample(samples, t0 + 3 * MS, f"{OUTER};log_metrics (log.py:3)", count=5)
    assert _caller(builder) == "apply_updates (opt.py)"


def test_a_function_on_exactly_half_the_samples_is_named() -> None:
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        t0 = k * 10 * MS + RUN_AT_US * US
        _sample(samples, t0 + 100 * US, "main (loop.py:3);apply_updates (opt.py:3)")
        _sample(samples, t0 + 200 * US, "main (loop.py:3);clip (opt.py:9)")
    # apply_updates and clip are each on half of them, as deep: the first seen wins over
    # main, the outer function (depth 0: its depth counts from 0)
    assert _caller(builder) == "apply_updates (opt.py)"


def test_samples_of_another_thread_do_not_name_the_caller() -> None:
    builder, _ = _loop()
    builder.plane("/host:CPU").line(2, "loader").event("read", 0, MS)
    mine, other = _samples(builder, 1), _samples(builder, 2)
    for k in range(STEPS):
        t0 = k * 10 * MS + RUN_AT_US * US
        _sample(mine, t0 + 100 * US, f"{OUTER};apply_updates (opt.py:3)")
        _sample(other, t0 + 100 * US, "<module> (data.py:1);load (data.py:4)", count=3)
    assert _caller(builder) == "apply_updates (opt.py)"


def test_samples_only_outside_the_runs_or_without_a_public_function_name_nothing() -> None:
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        t0 = k * 10 * MS
        _sample(samples, t0 + 3 * MS, f"{OUTER};log_metrics (log.py:3)")
    assert _caller(builder) == ""
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        _sample(samples, k * 10 * MS + (RUN_AT_US + 100) * US, "<module> (loop.py:5)")
    assert _caller(builder) == ""


def test_a_traced_frame_around_later_runs_names_the_caller() -> None:
    # the first steps' runs have no frame around them; the traced function holds the others
    builder, main = _loop()
    for k in range(3, STEPS):
        main.event("$opt.py:3 apply_updates", k * 10 * MS + (RUN_AT_US - 10) * US, MS)
    assert _caller(builder) == "apply_updates (opt.py)"


def test_no_steps_have_no_ops_per_step() -> None:
    assert DispatchEvidence().ops_per_step() == 0.0


def test_a_call_of_100_us_whose_name_usually_takes_that_long_computes_inside_a_run() -> None:
    """`PjitFunction(step)` runs 100, 20 and 100 µs (its lower median: 100 µs, the limit):
    its two 100 µs calls are holes in the run of small ops; the 20 µs one is dispatch."""
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "python")
    long_at = {5: 100, 8: 20, 12: 100}
    t, holes = 0, []
    for i in range(20):
        dur = long_at.get(i, 6) * US
        main.event("PjitFunction(step)" if i in long_at else "PjitFunction(add)", t, dur)
        if dur == 100 * US:
            holes.append((t, t + dur))
        t += dur + 24 * US
    profile = build(builder)
    runs = find_runs(profile, np.ones(len(profile.lines), bool), has_device=False)
    assert (runs.lo.tolist(), runs.hi.tolist()) == ([0], [t - 24 * US])
    assert list(zip(runs.holes_lo.tolist(), runs.holes_hi.tolist(), strict=True)) == holes
    assert len(runs.events) == 18


def _ops(line: LineBuilder, t: int, count: int, gap_us: int, name: str = "aten::add") -> int:
    """``count`` ops of 5 µs, ``gap_us`` apart, from ``t``; the end of the last."""
    for _ in range(count):
        line.event(name, t, 5 * US)
        t += (5 + gap_us) * US
    return t - gap_us * US


def _runs(builder: XSpaceBuilder) -> list[tuple[int, int]]:
    profile = build(builder)
    runs = find_runs(profile, np.ones(len(profile.lines), bool), has_device=True)
    return list(zip(runs.lo.tolist(), runs.hi.tolist(), strict=True))


def test_a_run_of_exactly_8_ops_and_a_pause_of_exactly_200_us_between_runs() -> None:
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    end = _ops(main, 0, 8, 10)
    second = end + 200 * US
    second_end = _ops(main, second, 8, 10)
    assert _runs(builder) == [(0, end), (second, second_end)]


def test_back_to_back_ops_and_ops_with_a_child_at_their_start_are_one_op_each() -> None:
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    t = 0
    for _ in range(10):  # no gap: each op starts where the previous one ends
        main.event("aten::linear", t, 20 * US)
        main.event("aten::addmm", t, 5 * US)  # its child, starting with it
        t += 20 * US
    profile = build(builder)
    runs = find_runs(profile, np.ones(len(profile.lines), bool), has_device=True)
    assert (runs.lo.tolist(), runs.hi.tolist()) == ([0], [t])
    assert {profile.event_name(int(e)) for e in runs.events} == {"aten::linear"}
    assert len(runs.events) == 10


def test_a_pause_after_a_long_op_and_a_small_one_still_breaks_the_run() -> None:
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "python")
    end = _ops(main, 0, 8, 10, "PjitFunction(add)")
    main.event("PjitFunction(grad)", end + 10 * US, 200 * US)  # computes: a hole
    small = end + 220 * US
    main.event("PjitFunction(add)", small, 5 * US)
    later = small + 305 * US  # a 300 µs pause: a new run
    later_end = _ops(main, later, 8, 10, "PjitFunction(add)")
    assert _runs(builder) == [(0, small + 5 * US), (later, later_end)]


def test_runs_on_a_later_thread_are_found_after_threads_without_one() -> None:
    builder = XSpaceBuilder("torch")
    host = builder.plane("/host:CPU")
    _ops(host.line(1, "few"), 0, 3, 10)  # too few ops
    _ops(host.line(2, "apart"), 0, 9, 400)  # each op alone
    end = _ops(host.line(3, "busy"), 0, 8, 10)
    assert _runs(builder) == [(0, end)]


def _two_threads_of_runs() -> tuple[Profile, DispatchRuns, np.ndarray, np.ndarray]:
    """Steps [0, 1 ms) and [2, 3 ms); per step on thread 1: a run of 9 ops 10 µs apart, a
    pause, a run of 9 ops 40 µs apart; on threads 2-4 a run of 8 ops named by the thread."""
    builder = XSpaceBuilder("torch")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    others = [host.line(k, f"worker{k}") for k in (2, 3, 4)]
    for t0 in (0, 2 * MS):
        end = _ops(main, t0, 9, 10, "aten::add")
        _ops(main, end + 300 * US, 9, 40, "aten::mul")
        for k, line in enumerate(others):
            _ops(line, t0, 8, 10, f"aten::op{k}" if k else "aten::mul")
    profile = build(builder)
    runs = find_runs(profile, np.ones(len(profile.lines), bool), has_device=True)
    return profile, runs, np.array([0, 2 * MS]), np.array([MS, 3 * MS])


def test_the_evidence_of_runs_on_four_threads() -> None:
    profile, runs, lo, hi = _two_threads_of_runs()
    d = evidence(profile, runs, lo, hi)
    assert d.ops.dtype == np.int64 and d.ops.tolist() == [42, 42]
    # gaps inside runs only: 8 of 10 µs and 8 of 40 µs on the main thread, 7 of 10 µs
    # on each worker: the pause between two runs is no gap
    assert d.median_gap_ns == 10 * US
    assert d.median_op_ns == 5 * US
    assert d.top_ops == (("aten::mul", 34), ("aten::add", 18), ("aten::op1", 16))
    assert d.threads == ("MainThread", "worker2", "worker3")


def test_the_median_gap_of_one_thread_with_two_runs_leaves_the_pause_out() -> None:
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    end = _ops(main, 0, 9, 10, "aten::add")
    _ops(main, end + 300 * US, 9, 40, "aten::mul")
    profile = build(builder)
    runs = find_runs(profile, np.ones(len(profile.lines), bool), has_device=True)
    d = evidence(profile, runs, np.array([0]), np.array([MS]))
    assert d.median_gap_ns == 25 * US  # 8 gaps of 10 µs and 8 of 40 µs


def test_ops_starting_at_a_step_end_or_outside_every_step_are_no_steps() -> None:
    profile, runs, _, _ = _two_threads_of_runs()
    # a step ending where the runs' first op starts on every thread, one after them all
    d = evidence(profile, runs, np.array([-MS, 5 * MS]), np.array([0, 6 * MS]))
    assert d.ops.tolist() == [0, 0] and d.median_op_ns == 0 and d.top_ops == ()
    # a step holding one op of each thread's run: no gap
    d = evidence(profile, runs, np.array([0, 5 * MS]), np.array([US, 6 * MS]))
    assert d.ops.tolist() == [4, 0] and d.median_gap_ns == 0


def test_no_runs_or_no_steps_give_no_ops() -> None:
    profile, runs, lo, hi = _two_threads_of_runs()
    empty = np.zeros(0, np.int64)
    assert evidence(profile, runs, empty, empty).ops.tolist() == []
    none = DispatchRuns(empty, empty, empty, empty, empty, empty)
    d = evidence(profile, none, lo, hi)
    assert d.ops.dtype == np.int64 and d.ops.tolist() == [0, 0]


def test_each_step_keeps_its_own_dispatch_time_from_its_first_instant() -> None:
    """Steps of 8, 12 and 16 ops, each step exactly its run: dispatch all of it."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    lengths = []
    for k in range(3):
        t0 = k * 10 * MS
        end = _ops(main, t0, 8 + 4 * k, 10)  # the run starts with the step
        main.event("train", t0, end - t0, {"step_num": k, "_r": 1})
        lengths.append(end - t0)
    db = build_step_db(build(builder))
    assert db.limit_ns()["dispatch"].tolist() == lengths
    assert db.limits.ns.dtype == np.int64 and (db.limits.ns >= 0).all()
    assert db.limits.ns.sum(axis=1).tolist() == lengths


def _all(profile: Profile) -> np.ndarray:
    return np.ones(len(profile.lines), bool)


def test_no_dispatch_events_or_no_run_give_empty_runs() -> None:
    builder = XSpaceBuilder("torch")
    builder.plane("/host:CPU").line(1, "main").event("load", 0, MS)
    profile = build(builder)
    builder2 = XSpaceBuilder("torch")
    _ops(builder2.plane("/host:CPU").line(1, "main"), 0, 3, 10)  # too few for a run
    for p in (profile, build(builder2)):
        runs = find_runs(p, _all(p), has_device=True)
        for part in (runs.lo, runs.hi, runs.events, runs.run_of, runs.holes_lo, runs.holes_hi):
            assert part.dtype == np.int64 and part.tolist() == []


def test_only_long_ops_inside_a_run_are_holes() -> None:
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "python")
    main.event("PjitFunction(grad)", 0, 300 * US)  # before the first run
    end = _ops(main, 500 * US, 8, 10, "PjitFunction(add)")
    main.event("PjitFunction(grad)", end, 300 * US)  # from the run's end, then a pause
    main.event("PjitFunction(grad)", end + 600 * US, 300 * US)  # between the two runs
    inside = end + 1_200 * US  # the second run, with one inside it
    t = _ops(main, inside, 4, 10, "PjitFunction(add)")
    main.event("PjitFunction(grad)", t + 10 * US, 300 * US)
    _ops(main, t + 320 * US, 4, 10, "PjitFunction(add)")
    profile = build(builder)
    runs = find_runs(profile, _all(profile), has_device=False)
    assert runs.lo.tolist() == [500 * US, inside]
    assert list(zip(runs.holes_lo.tolist(), runs.holes_hi.tolist(), strict=True)) == [
        (t + 10 * US, t + 310 * US)
    ]


def test_frames_around_no_run_name_no_caller() -> None:
    builder, main = _loop()
    for k in range(STEPS):
        main.event("$log.py:3 log_metrics", k * 10 * MS + 3 * MS, MS)  # after the runs
    assert _caller(builder) == ""


def test_the_innermost_frame_holding_a_whole_run_is_the_caller() -> None:
    builder, main = _loop()
    for k in range(STEPS):
        t0 = k * 10 * MS
        lo, hi = t0 + RUN_AT_US * US, t0 + RUN_END_US * US
        main.event("$/home/me/my project/train.py:9 train_step", lo - 50 * US, 2 * MS)
        main.event("$/home/me/my project/opt.py:3 apply_updates", lo, hi - lo)  # the run
        main.event("$/home/me/my project/opt.py:7 prepare", lo - 20 * US, 100 * US)  # part
    assert _caller(builder) == "apply_updates (/home/me/my project/opt.py)"


def test_the_function_holding_the_most_dispatch_time_is_the_caller() -> None:
    builder, main = _loop()
    for k, name in ((1, "$a.py:1 early"), (2, "$a.py:1 early"), (4, "$b.py:1 late")):
        main.event(name, k * 10 * MS + (RUN_AT_US - 10) * US, MS)
    assert _caller(builder) == "early (a.py)"


def test_the_caller_of_runs_on_the_third_thread() -> None:
    builder = XSpaceBuilder("torch")
    host = builder.plane("/host:CPU")
    lines = [host.line(k, f"thread{k}") for k in (1, 2, 3)]
    for k in range(STEPS):
        t0 = k * 10 * MS
        lines[0].event("train", t0, 9 * MS, {"step_num": k, "_r": 1})
        for j, line in enumerate(lines):
            _ops(line, t0 + (1 + 2 * j) * MS, 8, 10)
        lines[2].event("$opt.py:3 apply_updates", t0 + 5 * MS - 10 * US, MS)
    assert _caller(builder) == "apply_updates (opt.py)"


def test_samples_of_every_run_count_not_only_the_last() -> None:
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        t0 = k * 10 * MS + (RUN_AT_US + 100) * US
        last = k == STEPS - 2  # the last step kept
        _sample(
            samples, t0, f"{OUTER};clip (opt.py:9)" if last else f"{OUTER};apply_updates (opt.py:3)"
        )
    assert _caller(builder) == "apply_updates (opt.py)"


def test_a_function_seen_at_two_depths_is_as_deep_as_its_deepest() -> None:
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        t0 = k * 10 * MS + RUN_AT_US * US
        _sample(samples, t0 + 100 * US, "main (a.py:1);clip (a.py:2);apply (a.py:3)")
        _sample(samples, t0 + 200 * US, "main (a.py:1);apply (a.py:4)")
    assert _caller(builder) == "apply (a.py)"


def test_the_caller_sums_its_runs_over_the_steps() -> None:
    builder, main = _loop()
    for k, name in ((1, "$b.py:1 first"), (2, "$a.py:1 most"), (3, "$a.py:1 most")):
        main.event(name, k * 10 * MS + (RUN_AT_US - 10) * US, MS)
    assert _caller(builder) == "most (a.py)"


def test_a_sample_without_a_stack_counts_but_names_no_function() -> None:
    """Half of the samples in the runs carry no stack stat: they count among the samples
    (apply_updates is on exactly half) but hold no function, whatever string the profile's
    table happens to end with (here a deeper stack no event uses)."""
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        t0 = k * 10 * MS + RUN_AT_US * US
        _sample(samples, t0 + 100 * US, "main (loop.py:3);apply_updates (opt.py:3)")
        samples.event("apply_updates", t0 + 200 * US, US, {"samples": 1})  # no stack
    profile = build(builder)
    unused = "main (loop.py:3);apply_updates (opt.py:3);clip (opt.py:9)"
    profile = dataclasses.replace(profile, strings=StringTable([*profile.strings.strings, unused]))
    assert build_step_db(profile).limits.dispatch.caller == "apply_updates (opt.py)"


def test_ops_a_loader_issues_while_it_makes_a_batch_are_no_dispatch_evidence() -> None:
    """A ``TensorDataset`` behind a DataLoader indexes one sample at a time: 40 small
    ``aten::select`` ops inside the loader's ``__next__`` (input), then the model's 12 small
    ops. The input time is the input's; the dispatch advice (fuse the model's small ops)
    cites the model's ops only."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(STEPS):
        t0 = k * 10 * MS
        fetch = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        main.event(fetch, t0, 2 * MS)
        t = t0 + 50 * US
        for _ in range(40):
            main.event("aten::select", t, 4 * US)
            t += 40 * US
        main.event("aten::linear", t0 + 2500 * US, 400 * US)  # the model starts
        t = t0 + 3 * MS
        for i in range(12):
            main.event(("aten::t", "aten::detach")[i % 2], t, 6 * US)
            t += 30 * US
        main.event("aten::mm", t, 5 * MS)
    db = build_step_db(build(builder))
    d = db.limits.dispatch
    assert len(d.ops) and set(d.ops.tolist()) == {12}
    assert {name for name, _ in d.top_ops} == {"aten::t", "aten::detach"}


# torch's backward under the user's step: library frames (own_frames "0,1": the first two)
BACKWARD = f"{OUTER};backward (__init__.py:200);_engine_run_backward (graph.py:8)"


def test_the_users_own_function_is_named_not_the_librarys() -> None:
    """The caller read "backward (__init__.py)" (torch's, deepest public on every sample) in
    a user's PyTorch loop: with the capture's own frames it is the user's train_step."""
    for own, caller in (("0,1", "train_step (loop.py)"), (None, "backward (__init__.py)")):
        builder, _ = _loop()
        samples = _samples(builder)
        for k in range(STEPS):
            _sample(samples, k * 10 * MS + (RUN_AT_US + 100) * US, BACKWARD, own=own)
        assert _caller(builder) == caller  # without the stat (older captures), as before


def test_a_top_level_loop_calling_a_library_is_named_by_its_script() -> None:
    builder, _ = _loop()
    samples = _samples(builder)
    for k in range(STEPS):
        at = k * 10 * MS + (RUN_AT_US + 100) * US
        _sample(samples, at, "<module> (loop.py:5);tree_map (tree_util.py:3)", own="0")
    assert _caller(builder) == "<module> (loop.py)"


def test_a_traced_library_frame_is_passed_over_for_the_users() -> None:
    builder, main = _loop()
    plane = builder.plane("/host:CPU")
    plane.event_metadata_id("$loop.py:9 train_step", stats={"own_code": 1})
    for k in range(STEPS):
        t0 = k * 10 * MS + RUN_AT_US * US
        main.event("$loop.py:9 train_step", t0 - 100 * US, 2 * MS)
        main.event("$__init__.py:200 backward", t0 - 50 * US, MS)
    assert _caller(builder) == "train_step (loop.py)"
