"""Zero-length events held current (``stats/steps/sweep.py``), the per-type sweep
(``type_sweep.py``) and input fetched before a step (``feeds.py``), at their edges: each test
builds the smallest trace where the rule decides what the overview shows (issue #34,
survivors of their mutation runs, docs/testing.md "Fifth pass")."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import build_step_db
from stepscope.stats.events import EventType
from stepscope.stats.host.untraced import where_untraced
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.type_sweep import type_time
from stepscope.vocab.profiler import END_OF_SEQUENCE_STAT, STEP_HOLDS_FETCH_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.native import c_and_python, module

WAIT = "IteratorGetNext"
DATALOADER_NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _steps(events: list[tuple[str, float, float]], steps: int = 1) -> StepDb:
    """10 ms ``train`` steps on one thread, each with ``events`` (name, start ms, ms)."""
    builder = XSpaceBuilder("held")
    main = builder.plane("/host:CPU").line(1, "main")
    for k in range(steps):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        for name, start_ms, dur_ms in events:
            main.event(name, t0 + int(start_ms * MS), int(dur_ms * MS))
    return build_step_db(build(builder))


def _ms(db: StepDb, category: str) -> list[float]:
    return (db.category_ns()[category] / MS).tolist()


def _where(db: StepDb) -> str:
    return where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()))


# --- Zero-length events held current --------------------------------------------------------


def test_an_instant_that_is_the_steps_last_event_holds_nothing() -> None:
    """XProf's sweep measures between boundaries only: after the step's last one, nothing is
    held (XProf 2.24 on this trace: 2.0 ms host compute, 8.0 ms all others; decision 740)."""
    db = _steps([("aten::add", 1, 2), ("aten::relu", 6, 0)], steps=2)
    assert _ms(db, "host_compute") == [2.0, 2.0]  # 1-3 ms only


def test_an_instant_holds_its_type_up_to_the_steps_last_boundary() -> None:
    """Two instants: the first holds host compute to the second, the last holds nothing
    (XProf 2.24: 4.0 ms host compute)."""
    db = _steps([("aten::add", 1, 2), ("aten::relu", 6, 0), ("aten::relu", 8, 0)])
    assert _ms(db, "host_compute") == [4.0]  # 1-3 ms, 6-8 ms


def test_an_instant_as_an_event_ends_holds_its_type_until_the_next_one() -> None:
    db = _steps([("aten::add", 1, 2), ("aten::relu", 3, 0), ("aten::mul", 7, 1)])
    assert _ms(db, "host_compute") == [7.0]  # 1-8 ms


def test_an_instant_of_a_higher_type_takes_over_a_held_one() -> None:
    """A 0 ns host op holds host compute from 1 ms; a 0 ns wait for input at 3 ms takes
    over (input ranks higher) and holds to the step's last boundary, the op ending at 6 ms:
    no later wait starts (XProf 2.24: 2.0 ms host compute, 3.0 ms input)."""
    db = _steps([("aten::relu", 1, 0), (WAIT, 3, 0), ("aten::add", 5, 1)])
    assert (_ms(db, "host_compute"), _ms(db, "input")) == ([2.0], [3.0])


def test_an_instant_inside_an_event_of_its_type_holds_nothing() -> None:
    """Covered by a running op, a 0 ns op changes nothing: not the breakdown, nor where the
    untraced time sits."""
    db = _steps([("aten::add", 1, 4), ("aten::relu", 2, 0), ("aten::mul", 8, 1)])
    assert _ms(db, "host_compute") == [5.0]
    assert _where(db) == (
        "on thread main, mostly after 'aten::add' and before 'aten::mul' (3.00 ms in the one step)"
    )


def test_two_steps_starting_together_keep_their_own_time() -> None:
    """Two loops on two threads open a step at the same instant: the first (10 ms) has an op
    and then two 0 ns ops, the second after every other event of the profile, the second
    (4 ms) an op from its first instant. Each step's time stays its own (the sweeps key every
    step apart): the first instant holds to the second, the step's last boundary."""
    builder = XSpaceBuilder("together")
    host = builder.plane("/host:CPU")
    a, b = host.line(1, "loop_a"), host.line(2, "loop_b")
    t0 = 1_000 * MS
    a.event("train", t0, 10 * MS, {"step_num": 0, "_r": 1})
    a.event("aten::add", t0 + MS, 2 * MS)
    a.event("aten::relu", t0 + 6 * MS, 0)
    a.event("aten::relu", t0 + 8 * MS, 0)
    b.event("train", t0, 4 * MS, {"step_num": 1, "_r": 1})
    b.event("aten::mul", t0, 2 * MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 1]
    assert db.dur_ns.tolist() == [10 * MS, 4 * MS]
    assert _ms(db, "host_compute") == [4.0, 2.0]
    assert _ms(db, "other") == [6.0, 2.0]


# --- The per-type sweep ---------------------------------------------------------------------


def test_the_step_table_is_int64_nanoseconds() -> None:
    db = _steps([("aten::add", 1, 2), (WAIT, 4, 1)], steps=2)
    assert db.type_ns.dtype == np.int64
    assert all(v.dtype == np.int64 for v in db.category_ns().values())
    assert _ms(db, "input") == [1.0, 1.0]


def test_a_thread_with_a_broken_clock_does_not_spoil_the_other_steps() -> None:
    """One thread's step written at time 1 ms (its clock broken) beside steps at the epoch
    (1.7e18 ns) on another: the steps span more than int64 can key at once, so the sweep goes
    step by step; every step still gets its own time, to the nanosecond."""
    builder = XSpaceBuilder("broken clock")
    host = builder.plane("/host:CPU")
    early, main = host.line(2, "early"), host.line(1, "main")
    epoch = 1_700_000_000_000_000_000
    starts = [(early, MS)] + [(main, epoch + k * 10 * MS) for k in range(1, 7)]
    for k, (line, t0) in enumerate(starts):
        line.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        line.event("aten::add", t0 + MS, 2 * MS + k)
        line.event(WAIT, t0 + 5 * MS, MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [1, 2, 3, 4, 5]  # the first and the last dropped
    assert db.category_ns()["host_compute"].tolist() == [2 * MS + k for k in range(1, 6)]
    assert _ms(db, "input") == [1.0] * 5
    assert np.array_equal(sum(db.category_ns().values()), db.dur_ns)


def test_the_sweep_keeps_steps_apart_whatever_their_times() -> None:
    """`type_time` keys each interval by step and time in one int64; steps whose times lie
    further apart than that can key (step 11 about 1.5e18 ns after step 0: their keys would
    wrap onto each other) are swept step by step, and so is one step far from zero (2^62 ns
    and later). Each step keeps its own time."""
    length = 5_000
    far = -(-(2**64 - 11 * length - 11) // 12)  # step 11's start: its key wraps into step 0's
    step = np.array([0, 11], np.int64)
    lo = np.array([0, far], np.int64)
    hi = lo + length
    types = np.full(2, int(EventType.HOST_COMPUTE), np.int16)
    table = type_time(step, lo, hi, types, 12)
    column = int(EventType.HOST_COMPUTE) // 10
    assert table[:, column].tolist() == [length] + [0] * 10 + [length]
    late = type_time(np.zeros(1, np.int64), lo[:1] + 2**62, hi[:1] + 2**62, types[:1], 1)
    assert late[0, column] == length


# --- Input fetched before a step ------------------------------------------------------------


def _loop(steps: int = 3) -> XSpaceBuilder:
    """10 ms iterations on ``python``: the marker from 4 ms to 9 ms with 5 ms of compute; the
    tests add waits for input in the gaps."""
    builder = XSpaceBuilder("loop")
    line = builder.plane("/host:CPU").line(1, "python")
    for k in range(steps):
        t = 1_000 * MS + k * 10 * MS
        line.event("train", t + 4 * MS, 5 * MS, {"step_num": k, "_r": 1})
        line.event("compute", t + 4 * MS, 5 * MS)
    return builder


def _starts(db: StepDb) -> list[float]:
    return ((db.start_ns - 1_000 * MS) / MS).tolist()


def test_the_fetch_of_a_step_after_the_profiles_first_marker_feeds_it() -> None:
    """The first step (its marker the profile's first event) has no fetch; the second's
    fetch, in the gap before it, makes it start there."""
    builder = _loop()
    builder.plane("/host:CPU").line(1).event(WAIT, 1_011 * MS, 3 * MS)
    profile = build(builder)
    assert profile.event_name(0) == "train"
    db = build_step_db(profile)
    assert _starts(db) == [4.0, 11.0, 24.0]
    assert _ms(db, "input") == [0.0, 3.0, 0.0]


def test_a_fetch_starting_as_the_previous_step_ends_feeds_the_next() -> None:
    builder = _loop()
    builder.plane("/host:CPU").line(1).event(WAIT, 1_009 * MS, 4 * MS)
    db = build_step_db(build(builder))
    assert _starts(db) == [4.0, 9.0, 24.0]
    assert _ms(db, "input") == [0.0, 4.0, 0.0]


def test_a_fetch_begun_inside_the_step_before_feeds_no_step() -> None:
    """Begun inside step 1 (its thread waits on past the marker's end): no fetch for step 2,
    though it starts after step 0 ended."""
    builder = _loop()
    builder.plane("/host:CPU").line(1).event(WAIT, 1_018 * MS, 4 * MS)
    db = build_step_db(build(builder))
    assert _starts(db) == [4.0, 14.0, 24.0]
    assert _ms(db, "input") == [0.0, 0.0, 0.0]


def test_a_wait_after_the_last_step_feeds_no_step() -> None:
    builder = _loop()
    builder.plane("/host:CPU").line(1).event(WAIT, 1_031 * MS, 3 * MS)
    db = build_step_db(build(builder))
    assert _starts(db) == [4.0, 14.0, 24.0]
    assert db.dur_ns.tolist() == [5 * MS] * 3
    assert _ms(db, "input") == [0.0, 0.0, 0.0]
    assert db.limit_ns()["input"].tolist() == [0, 0, 0]


def test_a_wait_after_the_last_step_names_no_gap_of_it() -> None:
    """The step's largest untraced gap ends where another thread's work starts; nothing of
    the step's thread follows it in the step. A wait after the last step (no step's fetch)
    does not name it: the gap runs to the step's end on its thread."""
    builder = XSpaceBuilder("after")
    host = builder.plane("/host:CPU")
    main, worker = host.line(1, "main"), host.line(2, "worker")
    main.event("train", 1_000 * MS, 10 * MS, {"step_num": 0, "_r": 1})
    main.event("aten::add", 1_001 * MS, MS)
    worker.event("aten::mul", 1_007 * MS, MS)
    main.event(WAIT, 1_012 * MS, MS)
    db = build_step_db(build(builder))
    assert _where(db) == (
        "on thread main, mostly after 'aten::add' and before '(step end)' (5.00 ms in the one step)"
    )


def test_only_a_wait_for_input_in_the_gap_is_a_fetch() -> None:
    """Other work in the gap before a step (logging, the optimizer of the last step) is no
    step's: the step starts at its marker."""
    builder = _loop()
    builder.plane("/host:CPU").line(1).event("aten::zero_", 1_011 * MS, 2 * MS)
    db = build_step_db(build(builder))
    assert _starts(db) == [4.0, 14.0, 24.0]
    assert _ms(db, "host_compute") == [5.0] * 3


def test_a_wait_a_step_reaches_by_a_link_is_no_fetch_for_the_next() -> None:
    """A wait in the gap before step 1 but linked to step 0 (its consumer of step 0's
    producer) is step 0's: it feeds no other step."""
    builder = _loop()
    line = builder.plane("/host:CPU").line(1)
    line.event("aten::linear", 1_005 * MS, MS, {"_pt": 1, "_p": 42})
    line.event(WAIT, 1_011 * MS, 2 * MS, {"_ct": 1, "_c": 42})
    db = build_step_db(build(builder))
    assert _starts(db) == [4.0, 14.0, 24.0]
    assert _ms(db, "input") == [0.0, 0.0, 0.0]


def test_a_fetch_that_found_the_pass_over_feeds_no_step() -> None:
    """The loop's last `next()` (a non-persistent DataLoader joining its workers: 16-22 ms
    of /tmp/loops15's epochs) is no step's, nor is the DataLoader's own wait inside it: a
    script timing its epochs counts it in none. The next pass's fetch still feeds its step
    (decision 636)."""
    builder = _loop()
    line = builder.plane("/host:CPU").line(1)
    line.event(WAIT, 1_010 * MS, 2 * MS, {END_OF_SEQUENCE_STAT: 1})
    line.event(DATALOADER_NEXT, 1_010 * MS + MS // 10, MS)
    line.event(WAIT, 1_012 * MS, MS)
    db = build_step_db(build(builder))
    assert _starts(db) == [4.0, 12.0, 24.0]
    assert _ms(db, "input") == [0.0, 1.0, 0.0]


def test_a_step_whose_marker_holds_its_fetch_is_fed_by_no_wait() -> None:
    """A trainer callback's step begins where the trainer last finished other work, its
    fetch inside (`STEP_HOLDS_FETCH_STAT`): the validation loop's fetches and forward ops in
    the gap before it are no training step's (a Lightning epoch's first step read 801.02 ms
    for the script's 366.97; decision 638). Without the stat the fetch feeds it."""
    for holds, starts in ((True, [4.0, 14.0, 24.0]), (False, [4.0, 11.0, 24.0])):
        builder = XSpaceBuilder("trainer")
        line = builder.plane("/host:CPU").line(1, "python")
        for k in range(3):
            t = 1_000 * MS + k * 10 * MS
            stats: dict[str, object] = {"step_num": k, "_r": 1}
            if holds:
                stats[STEP_HOLDS_FETCH_STAT] = 1
            line.event("train", t + 4 * MS, 5 * MS, stats)
            line.event("compute", t + 4 * MS, 5 * MS)
        line.event(WAIT, 1_011 * MS, MS)  # the validation's fetch
        line.event("aten::linear", 1_012 * MS, MS)  # ... and its forward
        db = build_step_db(build(builder))
        assert _starts(db) == starts, holds


def test_inferred_steps_take_no_fetch() -> None:
    """Steps inferred from a repeating event have no markers and cover the time from one
    repeat to the next: a wait before the first repeat is no step's."""
    builder = XSpaceBuilder("inferred")
    line = builder.plane("/host:CPU").line(1, "python")
    line.event(WAIT, 1_000 * MS, 2 * MS)
    for k in range(6):
        line.event("train_step", 1_005 * MS + k * 10 * MS, 8 * MS)
    db = build_step_db(build(builder))
    assert db.source == "inferred"
    assert _starts(db) == [5.0, 15.0, 25.0, 35.0, 45.0]
    assert _ms(db, "input") == [0.0] * 5


# --- The per-type sweep in C (stats/_nesting.c type_unions, decision 443) --------------------


def _intervals(seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    n_steps = int(rng.integers(1, 6))
    step = rng.integers(0, n_steps, n).astype(np.int64)
    lo = rng.integers(0, 500, n).astype(np.int64)
    hi = lo + rng.integers(0, 60, n)  # some empty: dropped by type_time
    # every fourth: two types only (a threshold that takes every interval)
    kinds = [20, 40] if seed % 4 == 0 else [int(t) for t in EventType]
    types = rng.choice(kinds, n)
    return step, lo, hi, types.astype(np.int16), np.int64(n_steps)


@pytest.mark.parametrize("seed", range(80))
def test_the_c_sweep_gives_the_numpy_per_type_time(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    step, lo, hi, types, n_steps = _intervals(seed)
    fast, slow = c_and_python(
        monkeypatch, lambda: type_time(step, lo, hi, types, int(n_steps)).tolist(), "_nesting"
    )
    assert fast == slow


def test_the_c_sweep_leaves_unsorted_intervals_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    nest = module(monkeypatch, "_nesting")
    ones = np.ones(3, np.int64)
    sums = np.zeros(2, np.float64)
    lo, hi = np.array([0, 5, 2], np.int64), np.array([4, 9, 3], np.int64)
    assert nest.type_unions(lo, hi, ones * 0, ones * 20, np.array([40, 20]), sums) is False
    assert sums.tolist() == [0.0, 0.0]
    lo, hi = np.sort(lo), np.array([3, 4, 9], np.int64)
    assert nest.type_unions(lo, hi, ones * 0, ones * 20, np.array([40, 20]), sums) is True
    assert sums.tolist() == [0.0, 8.0]  # [0, 4) and [5, 9) for the lower threshold only
