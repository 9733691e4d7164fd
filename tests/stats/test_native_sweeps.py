"""The C sweeps (`_sweeps.c`) give exactly the NumPy versions' results: op-stack parents and
per-type step time, on real traces and on crafted lines with partial overlaps, zero-length
events and equal starts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.model import open_file
from stepscope.stats import native
from stepscope.stats.intervals import merge, union_in_order
from stepscope.stats.nesting import events_self_time, nesting_parents, self_time
from stepscope.stats.steps.breakdown import type_time
from tests.support.analysis import c_and_numpy
from tests.support.fixtures import FIXTURES, tf_xplane

pytestmark = pytest.mark.skipif(native.sweeps is None, reason="C sweeps not built")

TRACES = [
    tf_xplane("ctl"),
    tf_xplane("remote"),
    next((FIXTURES / "jax" / "cnn_cpu").rglob("*.xplane.pb")),
    FIXTURES / "xspace" / "gpu_jax_fused_attention.xplane.pb",
    FIXTURES / "kineto" / "a100_triton_tiny.json.gz",
]


def _crafted(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    line = np.sort(rng.integers(0, 4, n))
    start = rng.integers(0, 2000, n)
    dur = rng.choice([0, 0, 1, 5, 50, 400, 1500], n)  # zero-length, nested and overlapping
    return line, start, start + dur


@pytest.mark.parametrize("path", TRACES, ids=lambda p: Path(p).name)
def test_op_stack_parents_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = open_file(str(path))
    fast, slow = c_and_numpy(monkeypatch, lambda: nesting_parents(p.line, p.start_ns, p.end_ns))
    assert (fast >= 0).any()
    assert np.array_equal(fast, slow)


@pytest.mark.parametrize("seed", range(8))
def test_op_stack_parents_on_crafted_lines(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    line, start, end = _crafted(seed)
    shuffled = np.random.default_rng(seed).permutation(len(line))  # also the unsorted path
    for order in (np.arange(len(line)), shuffled):
        fast, slow = c_and_numpy(
            monkeypatch, lambda o=order: nesting_parents(line[o], start[o], end[o])
        )
        assert np.array_equal(fast, slow)


@pytest.mark.parametrize("path", TRACES[:4], ids=lambda p: Path(p).name)  # the fifth: 4 events
def test_self_time_in_place_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = open_file(str(path))
    rng = np.random.default_rng(1)
    every = np.arange(p.n_events)
    for events in (every, every[rng.random(p.n_events) < 0.6], every[::-1]):  # the last: sorted
        fast, slow = c_and_numpy(
            monkeypatch, lambda e=events: events_self_time(e, p.line, p.start_ns, p.end_ns)
        )
        start, end = p.start_ns[events], p.end_ns[events]
        oracle = self_time(end - start, nesting_parents(p.line[events], start, end))
        assert (fast < end - start).any()  # some events have children
        assert np.array_equal(fast, slow) and np.array_equal(fast, oracle)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: Path(p).name)
def test_op_tables_in_c_equal_numpy(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Self time and the per-op sums (exact int64 in C, rounded float64 bincounts in NumPy)."""
    from stepscope.stats.op_metrics import build_op_metrics

    p = open_file(str(path))
    fast, slow = c_and_numpy(monkeypatch, lambda: build_op_metrics(p))
    for f, s in ((fast.host, slow.host), (fast.device, slow.device)):
        assert f.names == s.names and f.types == s.types
        for column in ("occurrences", "total_ns", "self_ns", "eager_self_ns", "flops", "idle_ns"):
            assert np.array_equal(getattr(f, column), getattr(s, column)), column
    assert len(fast.host) + len(fast.device) > 0


@pytest.mark.parametrize("seed", range(8))
def test_self_time_in_place_on_crafted_lines(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    line, start, end = _crafted(seed)
    order = np.lexsort((-end, start, line))  # trace order: the C pass, else the sorted path
    line, start, end = line[order].astype(np.int32), start[order], end[order]
    shuffled = np.random.default_rng(seed).permutation(len(line))
    assert native.sweeps is not None
    own = np.empty(len(line), np.int64)
    assert native.sweeps.nest_self_time(np.arange(len(line)), line, start, end, own)  # in place
    assert not native.sweeps.nest_self_time(shuffled, line, start, end, own)  # caller sorts
    for events in (np.arange(len(line)), np.sort(shuffled[:1000]), shuffled):
        fast, slow = c_and_numpy(
            monkeypatch, lambda e=events: events_self_time(e, line, start, end)
        )
        oracle = self_time(
            end[events] - start[events], nesting_parents(line[events], start[events], end[events])
        )
        assert np.array_equal(fast, slow) and np.array_equal(fast, oracle)


@pytest.mark.parametrize("seed", range(6))
def test_union_in_order_equals_the_sorted_merge(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty, touching, nested and overlapping intervals, equal starts: the runs in C are
    NumPy's and the union of the non-empty intervals."""
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 100_000, 4000)
    hi = lo + rng.choice([0, 0, 1, 10, 300], 4000)
    order = np.argsort(lo, kind="stable")
    fast, slow = c_and_numpy(monkeypatch, lambda: union_in_order(lo, hi, order))
    keep = hi > lo
    expected = merge(lo[keep], hi[keep])
    assert len(fast[0]) > 10
    for got in (fast, slow):
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


@pytest.mark.parametrize("seed", range(8))
def test_type_time_on_crafted_steps(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    n, n_steps = 4000, 7
    step = rng.integers(0, n_steps, n)
    lo = rng.integers(0, 10_000, n)
    hi = lo + rng.choice([0, 3, 40, 900, 5000], n)
    types = rng.choice([10, 20, 30, 50, 80, 120], n)
    fast, slow = c_and_numpy(monkeypatch, lambda: type_time(step, lo, hi, types, n_steps))
    assert fast.sum() > 0
    assert np.array_equal(fast, slow)
    # the event types' own int16 and int32 steps, read as such by the C sweep (and cast by
    # the NumPy one: its keys multiply the steps)
    # (times scaled so that step x width passes 2**31: int32 keys would wrap)
    wide_lo, wide_hi = lo * 1_000_000, hi * 1_000_000
    narrow = (step.astype(np.int32), wide_lo, wide_hi, types.astype(np.int16))
    fast, slow = c_and_numpy(monkeypatch, lambda: type_time(*narrow, n_steps))
    expected = type_time(step, wide_lo, wide_hi, types, n_steps)
    assert np.array_equal(fast, slow) and np.array_equal(fast, expected)


class _Events:
    """The columns `breakdown._window_pairs` reads from a profile."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start_ns, self.dur_ns = start, end - start

    def end_at(self, events: np.ndarray) -> np.ndarray:
        return self.start_ns[events] + self.dur_ns[events]


@pytest.mark.parametrize("long_events", [False, True])
def test_window_pairs_equal_every_overlap(
    long_events: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C (in place, then the bounds when an event spans two windows) and NumPy: the head's
    pairs, then every (event, step) that overlaps, the windows' steps given by ``order``."""
    from stepscope.stats.steps import breakdown

    rng = np.random.default_rng(3)
    win_start = np.arange(0, 10_000, 1000, dtype=np.int64)
    win_end = win_start + 900
    start = rng.integers(0, 10_000, 5000)
    end = start + (rng.integers(0, 3000, 5000) if long_events else rng.integers(0, 90, 5000))
    free = rng.random(5000) < 0.7
    order = rng.permutation(len(win_start))
    head = np.array([4, 2], np.int64), np.array([7, 1], np.int32)
    profile = _Events(start, end)
    args = (profile, free, order, win_start, win_end, head)
    fast, slow = c_and_numpy(monkeypatch, lambda: breakdown._window_pairs(*args))  # type: ignore[arg-type]
    # every (event, window) that overlaps, by brute force
    overlap = (start[:, None] < win_end[None, :]) & (end[:, None] > win_start[None, :])
    ev, window = np.nonzero(overlap & free[:, None])
    assert len(ev) > 1000 and (len(ev) > free.sum()) == long_events
    for got in (fast, slow):
        assert got[0].tolist() == [4, 2, *ev.tolist()]
        assert got[1].tolist() == [7, 1, *order[window].tolist()]
        assert got[0].dtype == np.int64 and got[1].dtype == np.int32


def test_window_pairs_into_may_write_over_its_events() -> None:
    assert native.sweeps is not None
    win_start = np.array([0, 100, 200], np.int64)
    reach = win_start + 50
    start = np.array([10, 60, 120, 130, 290, 210], np.int64)
    dur = np.array([5, 10, 1, 80, 3, 0], np.int64)  # event 3 spans two windows
    events = np.array([0, 1, 2, 4, 5], np.int64)
    steps = np.full(5, -9, np.int32)
    step_of_window = np.array([2, 0, 1], np.int32)
    found = native.sweeps.window_pairs_into(
        events, start, dur, reach, win_start, step_of_window, events, steps
    )
    assert found == 3 and events[:3].tolist() == [0, 2, 5] and steps[:3].tolist() == [2, 0, 1]
    events = np.array([0, 3], np.int64)
    assert (
        native.sweeps.window_pairs_into(
            events, start, dur, reach, win_start, step_of_window, events, steps[:2]
        )
        == -1
    )


@pytest.mark.parametrize("seed", range(6))
def test_window_bounds_equal_numpy_searches(seed: int) -> None:
    """The galloping C search gives searchsorted's answers, in time order (one thread's events)
    and shuffled, with windows that overlap, touch and repeat, and times outside all of them."""
    assert native.sweeps is not None
    rng = np.random.default_rng(seed)
    win_start = np.sort(rng.integers(0, 50_000, 40))
    win_end = win_start + rng.choice([0, 10, 700, 4000], 40)
    reach = np.maximum.accumulate(win_end)
    start = rng.integers(-1000, 60_000, 6000)
    end = start + rng.choice([0, 1, 300, 9000], 6000)
    n = len(start)
    for events in (np.argsort(start, kind="stable"), rng.permutation(n), np.arange(n)[::3]):
        events = np.ascontiguousarray(events, np.int64)
        lo, hi = np.empty(len(events), np.int64), np.empty(len(events), np.int64)
        native.sweeps.window_bounds(events, start, end, reach, win_start, lo, hi)
        assert np.array_equal(lo, np.searchsorted(reach, start[events], "right"))
        assert np.array_equal(hi, np.searchsorted(win_start, end[events], "left"))


def test_zero_length_by_chunks_equals_the_durations() -> None:
    from stepscope.stats.steps.breakdown import _zero_length

    p = open_file(str(TRACES[0]))
    ev = np.random.default_rng(4).integers(0, p.n_events, 5000)
    expected = p.dur_ns[ev] == 0
    assert expected.any()
    assert np.array_equal(_zero_length(p, ev, chunk=7), expected)


def test_clipped_by_chunks_equals_the_gathers() -> None:
    from stepscope.stats.steps.breakdown import _clipped

    rng = np.random.default_rng(5)
    times, bound = rng.integers(0, 1000, 50), rng.integers(0, 1000, 6)
    ev, st = rng.integers(0, 50, 300), rng.integers(0, 6, 300)
    for clip in (np.maximum, np.minimum):
        assert np.array_equal(
            _clipped(clip, times.take, ev, bound, st, chunk=7), clip(times[ev], bound[st])
        )


@pytest.mark.parametrize("seed", range(6))
def test_op_sums_equal_the_per_event_self_times(seed: int) -> None:
    """One C pass per key (count, total, self and eager self time) and per line (first start,
    last end) against the per-event self times summed by NumPy; False when out of order."""
    line, start, end = _crafted(seed)
    order = np.lexsort((-end, start, line))
    line, start, end = line[order].astype(np.int32), start[order], end[order]
    rng = np.random.default_rng(seed)
    n_keys = 7
    key = rng.integers(0, n_keys, len(line)).astype(np.int32)
    events = np.sort(rng.permutation(len(line))[: len(line) * 2 // 3])
    flags = (rng.random(len(events)) < 0.3).astype(np.uint8)
    sums = [np.zeros(n_keys, np.int64) for _ in range(4)]
    first = np.full(4, np.iinfo(np.int64).max)
    last = np.full(4, np.iinfo(np.int64).min)
    assert native.sweeps is not None
    args = (events, line, start, end - start, key)
    assert native.sweeps.op_sums(*args, flags, *sums, first, last)
    ev_start, ev_end, ev_key = start[events], end[events], key[events]
    own = self_time(ev_end - ev_start, nesting_parents(line[events], ev_start, ev_end))
    assert (own < ev_end - ev_start).any()  # some events have children
    eager = flags == 1
    oracle = (
        np.bincount(ev_key, minlength=n_keys),
        np.bincount(ev_key, weights=ev_end - ev_start, minlength=n_keys),
        np.bincount(ev_key, weights=own, minlength=n_keys),
        np.bincount(ev_key[eager], weights=own[eager], minlength=n_keys),
    )
    for got, expected in zip(sums, oracle, strict=True):
        assert np.array_equal(got, expected.astype(np.int64))
    for k in range(4):
        on = line[events] == k
        assert first[k] == ev_start[on].min() and last[k] == ev_end[on].max()
    no_flags = np.zeros(0, np.uint8)
    assert native.sweeps.op_sums(*args, no_flags, *sums, first, last)  # no eager events
    assert not native.sweeps.op_sums(events[::-1].copy(), *args[1:], no_flags, *sums, first, last)
    bad = key.copy()
    bad[events[0]] = n_keys
    with pytest.raises(ValueError, match="out of range"):
        native.sweeps.op_sums(events, *args[1:4], bad, no_flags, *sums, first, last)


def test_stat_sums_read_each_events_last_value_of_the_key() -> None:
    """`stat_sums` against the values by hand: the key's last row of each event, ints, uints
    (their int64 bits), doubles (NaN as 0, infinities as the largest float), strings as 0."""
    from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT

    def bits(x: float) -> int:
        return int(np.array([x]).view(np.int64)[0])

    flops, other = 3, 4
    rows = [  # (event, key, kind, value)
        (0, flops, KIND_INT, 10),
        (0, flops, KIND_INT, 12),  # the last row of the key wins
        (1, other, KIND_INT, 99),
        (2, flops, KIND_DOUBLE, bits(float("nan"))),
        (3, flops, KIND_DOUBLE, bits(float("inf"))),
        (4, flops, KIND_UINT, -1),  # 2**64 - 1 as int64 bits: -1.0, as NumPy converts it
        (5, flops, KIND_STR, 7),
        (6, flops, KIND_DOUBLE, bits(2.5)),
        (7, flops, KIND_INT, 1000),  # not among the events asked
    ]
    owner = np.array([r[0] for r in rows])
    start = np.searchsorted(owner, np.arange(9)).astype(np.int64) + 5  # rows start at 5
    key = np.array([r[1] for r in rows], np.int32)
    kind = np.array([r[2] for r in rows], np.int8)
    value = np.array([r[3] for r in rows], np.int64)
    name = np.array([0, 1, 2, 0, 1, 2, 0, 1], np.int32)
    row_of_name = np.array([0, 1, 0], np.int64)
    params = np.array([flops, KIND_INT, KIND_UINT, KIND_DOUBLE], np.int64)
    out = np.zeros(2)
    assert native.sweeps is not None
    events = np.arange(7, dtype=np.int64)
    native.sweeps.stat_sums(events, start, key, kind, value, name, row_of_name, params, out)
    big = np.finfo(np.float64).max
    assert out.tolist() == [12.0 + 0.0 + big + 2.5, 0.0 - 1.0 + 0.0]
    with pytest.raises(ValueError, match="out of range"):
        native.sweeps.stat_sums(
            np.array([8]), start, key, kind, value, name, row_of_name, params, out
        )


def test_hold_walk_equals_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sweep._hold`'s walk of zero-length events: C and Python give the same held spans, on
    random steps, times (ties included), types and clearing times."""
    from stepscope.stats.steps.sweep import _hold

    rng = np.random.default_rng(17)
    for n in (0, 1, 2, 50, 2000):
        step = rng.integers(0, 4, n)
        ns = rng.integers(0, 60, n)
        kind = rng.integers(1, 6, n)
        nxt = ns + rng.integers(0, 30, n)
        fast, slow = c_and_numpy(monkeypatch, lambda: _hold(step, ns, kind, nxt))  # noqa: B023
        for got, want in zip(fast, slow, strict=True):
            assert got.tolist() == want.tolist()
