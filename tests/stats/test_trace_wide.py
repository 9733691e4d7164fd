"""Wide windows answered from a level laid out in event order (`trace_index.wide`): the same
answer, field for field, as the index's searched way, which `test_trace_index` checks
against the window rule's brute force."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_xspace
from stepscope.stats.trace_index import wide, window
from stepscope.stats.trace_index.index import TraceIndex, build_trace_index
from stepscope.stats.trace_index.wide import KEPT, WideLevel, WideLevels, lay_out
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.trace_profiles import BASE, random_profile

FIELDS = ("event", "line", "depth", "start_ns", "dur_ns", "name")


def regular_profile() -> Profile:
    """Equal durations at a regular pitch, nested two deep: every pixel's narrow events tie,
    and the one kept is the first in the index's (row, level, start) order, which is not
    the earliest (a level-5 event after a level-6 one, in one pixel)."""
    builder = XSpaceBuilder("host")
    host = builder.plane("/host:CPU")
    for k in range(2):
        line = host.line(k + 1, f"thread{k}")
        for j in range(600):
            line.event(f"op{j % 7}", BASE + 16 * j + k, 10)
            line.event(f"in{j % 3}", BASE + 16 * j + k + 1, 4)
    for line in host.lines:
        line.sort_events()
    return profile_from_xspace(builder.build())


@pytest.fixture(scope="module", params=["regular", 1, 2])
def traced(request: pytest.FixtureRequest) -> tuple[Profile, TraceIndex]:
    profile = regular_profile() if request.param == "regular" else random_profile(request.param)
    return profile, build_trace_index(profile)


def _windows(index: TraceIndex, rng: np.random.Generator) -> list[tuple[int, int, int]]:
    span = index.end_ns - index.origin_ns
    found = [(index.origin_ns, index.end_ns, 300), (index.origin_ns + 1, index.end_ns, 8000)]
    # 40 ns pixels, 32 ns bins, starting inside a bin: in `regular_profile` the first pixel
    # holds a finer event of the edge piece and a level event of equal duration (the
    # level's is kept)
    found += [
        (index.origin_ns + 16 * 37 + d, index.origin_ns + 16 * 37 + d + 6000, 150)
        for d in (3, 5, 9)
    ]
    for _ in range(25):
        width = int(span * rng.uniform(0.5, 1.3))
        t0 = index.origin_ns + int(rng.integers(-span // 5, span - width // 2 + 1))
        found.append((t0, t0 + width, int(rng.choice([3, 7, 40, 100, 333, 1000]))))
    return found


@pytest.mark.parametrize("compared", [wide.RUNS_COMPARED, 0])
def test_wide_windows_answer_as_the_searched_way(
    traced: tuple[Profile, TraceIndex], compared: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile, index = traced
    # small traces' levels hold more than the share laid out at scale: lay out any
    monkeypatch.setattr(window, "MAX_SHARE", 1)
    monkeypatch.setattr(wide, "RUNS_COMPARED", compared)  # 0: runs' maxima reduced
    rng = np.random.default_rng(7)
    lines = np.unique(profile.line)
    for t0, t1, res in _windows(index, rng):
        asked = None if rng.random() < 0.6 else lines[rng.random(len(lines)) < 0.5]
        laid = window.query_window(profile, index, t0, t1, res, asked)
        with monkeypatch.context() as searched_only:
            searched_only.setattr(window, "_wide_level", lambda *args: None)
            searched = window.query_window(profile, index, t0, t1, res, asked)
        for name in FIELDS:
            got, want = getattr(laid, name), getattr(searched, name)
            assert got.dtype == want.dtype and np.array_equal(got, want), (name, t0, t1, res)
        assert (laid.level, laid.bucket_ns) == (searched.level, searched.bucket_ns)
    assert len(index.wide_levels) > 0  # the laid-out way answered some of them


def test_only_the_last_levels_are_kept() -> None:
    levels = WideLevels()
    made: list[int] = []

    def level(m: int) -> None:
        def build() -> WideLevel:
            made.append(m)
            return lay_out(m, *[np.zeros(0, np.int64)] * 10)

        assert levels.get(m, build).level == m

    for m in range(KEPT + 1):
        level(m)
    assert len(levels) == KEPT and 0 not in levels and KEPT in levels
    level(KEPT)
    level(0)
    assert made == [*range(KEPT + 1), 0]


@pytest.mark.parametrize("longest", [1, 2, 3, wide.RUNS_COMPARED, wide.RUNS_COMPARED + 3])
def test_each_run_keeps_its_largest_value(longest: int) -> None:
    """`_longest_of_runs` against a per-run maximum: runs up to ``longest`` long (the
    neighbour comparisons, or each run's maximum past `RUNS_COMPARED`), and the length."""
    rng = np.random.default_rng(longest)
    sizes = rng.integers(1, longest + 1, 300)
    sizes[7] = longest
    key = np.repeat(np.cumsum(rng.integers(1, 4, len(sizes))), sizes)
    value = rng.permutation(len(key)).astype(np.int32)
    won, found = wide._longest_of_runs(key, value)
    assert found == longest
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    expected = np.zeros(len(key), dtype=bool)
    for a, n in zip(starts, sizes, strict=True):
        expected[a + int(np.argmax(value[a : a + n]))] = True
    assert np.array_equal(won, expected)
    assert wide._longest_of_runs(key[:0], value[:0])[1] == 0


def test_strength_orders_the_comparable_events_as_their_rank() -> None:
    """`_strength` packs (duration, -position): among the events a window may compare
    (durations from 0 up to the cap), the same order as a rank by `np.lexsort`; longer ones
    are clipped to the cap, negative ones to 0 (`wide_answer` then searches the index)."""
    rng = np.random.default_rng(5)
    n_events = 3000
    cap = (1 << (62 - n_events.bit_length())) - 1
    pos = rng.permutation(n_events)[:900]
    dur = rng.integers(0, 40, len(pos)) * (cap // 37)  # ties, 0 and the cap itself
    dur[:5] = [cap, cap - 1, 0, 1, cap]
    got = wide._strength(dur, pos, n_events)
    rank = np.empty(len(pos), dtype=np.int64)
    rank[np.lexsort((-pos, dur))] = np.arange(len(pos))
    comparable = dur <= cap
    assert comparable.sum() > 800
    assert np.array_equal(np.argsort(got[comparable]), np.argsort(rank[comparable]))
    assert got.dtype == np.int64 and int(got.min()) >= 0
    far = wide._strength(np.array([cap + 1, 1 << 60, -5, 0]), np.array([7, 8, 9, 10]), n_events)
    assert far[0] > far[1] and far[2] > far[3]  # clipped: the cap, then position order


def _level(start: list[int], dur: list[int], row: list[int]) -> WideLevel:
    """A level of one segment per row from (start, dur, row) given by row, then start."""
    rows = np.asarray(row, np.int32)
    first = np.r_[0, np.flatnonzero(rows[1:] != rows[:-1]) + 1]
    hi = np.r_[first[1:], len(rows)]
    n = len(start)
    return lay_out(
        0,
        np.zeros(len(first), np.int64),
        first,
        hi,
        rows[first],
        np.arange(n),
        np.asarray(start, np.int64),
        np.asarray(dur, np.int64),
        np.zeros(n, np.int32),
        np.arange(rows.max() + 1, dtype=np.int32),
        np.zeros(rows.max() + 1, np.int32),
    )


def test_level_keys_are_the_window_pixels_and_do_not_decrease() -> None:
    """`_level_keys` (decision 1042): for each event lasting to t0 its row and the window's
    pixel as `window.query_window` counts it (one crossing t0 in pixel 0), and no decrease
    over the level, the events before t0 on negative pixels of their own."""
    rng = np.random.default_rng(11)
    row = np.repeat(np.arange(4), 500)
    gaps = rng.integers(1, 60, len(row))
    start = np.concatenate([np.cumsum(g) for g in np.split(gaps, 4)]) + BASE
    dur = np.minimum(rng.integers(0, 80, len(row)), np.r_[np.diff(start), 80])
    dur[np.r_[np.flatnonzero(np.diff(row)), len(row) - 1]] = 70  # each row's last
    laid = _level(start.tolist(), dur.tolist(), row.tolist())
    assert laid.disjoint
    crossed = 0
    for t0 in (BASE - 5, BASE + 900, BASE + int(start[700]) - BASE + 1, BASE + 20_000):
        for bucket in (3.0, 7.25, 123.5):
            key = wide._level_keys(laid, t0, bucket)
            assert np.all(np.diff(key) >= 0)
            lasting = laid.last_ns >= t0
            pixel = np.floor((np.maximum(laid.start_ns, t0) - t0) / bucket)
            want = laid.row * wide.ROW_KEY + pixel
            assert np.array_equal(key[lasting], want[lasting])
            before = ~lasting
            assert np.all(key[before] < laid.row[before] * wide.ROW_KEY)  # never pixel 0
            crossing = lasting & (laid.start_ns < t0)
            assert crossing.sum() <= 4  # one a row at most
            crossed += int(crossing.sum())
    assert crossed > 0


def test_overlapping_events_in_a_row_are_not_thinned_from_the_level() -> None:
    """Where two events of a row overlap, the level's keys could decrease: `wide_answer`
    declines (the index is searched), and answers where the events only touch."""
    touching = _level([100, 110, 120], [10, 10, 5], [0, 0, 0])
    overlapping = _level([100, 105, 120], [10, 10, 5], [0, 0, 0])
    assert touching.disjoint and not overlapping.disjoint
    edges = wide.Edges(
        row=np.zeros(0, np.int32),
        start_ns=np.zeros(0, np.int64),
        dur_ns=np.zeros(0, np.int64),
        event=np.zeros(0, np.int64),
        name=np.zeros(0, np.int32),
    )
    row_line, row_depth = np.zeros(1, np.int32), np.zeros(1, np.int32)
    args = (edges, 103, 130, 4, 27 / 4, None, 3, row_line, row_depth)
    assert wide.wide_answer(overlapping, *args) is None
    answer = wide.wide_answer(touching, *args)
    assert answer is not None and answer[0].tolist() == [0, 1, 2]
