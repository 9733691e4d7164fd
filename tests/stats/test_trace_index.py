"""The trace viewer's index: depth, the level-of-detail rule, flows, counters, search, cache.

Every property is checked against a brute-force reference on random synthetic traces.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_bytes, profile_from_xspace
from stepscope.stats.trace_index.counters import KIND_STEP, Counter, sample
from stepscope.stats.trace_index.index import TraceIndex, build_trace_index, load_index, save_index
from stepscope.stats.trace_index.lod import nesting_depth
from stepscope.stats.trace_index.search import build_name_index
from stepscope.stats.trace_index.window import events_in_box, query_window, rows_of_pairs
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import count_step_db_builds
from tests.support.synthetic import synthetic_xspace_bytes
from tests.support.trace_profiles import BASE, random_profile
from tests.support.windows import assert_window_rule, brute_overlapping


@pytest.fixture(scope="module", params=[1, 2, 3])
def traced(request: pytest.FixtureRequest) -> tuple[Profile, TraceIndex]:
    profile = random_profile(request.param)
    return profile, build_trace_index(profile)


def test_depth_is_the_stack_of_running_events(traced: tuple[Profile, TraceIndex]) -> None:
    profile, index = traced
    end = profile.start_ns + np.maximum(profile.dur_ns, 1)
    for line in profile.lines:
        events = np.arange(*profile.events_of_line(line).indices(profile.n_events))
        order = events[np.lexsort((-end[events], profile.start_ns[events]))]
        expected: dict[int, int] = {}
        for pos, i in enumerate(order.tolist()):
            running = [j for j in order[:pos].tolist() if end[j] > profile.start_ns[i]]
            expected[i] = expected[running[-1]] + 1 if running else 0
        assert all(index.depth[i] == d for i, d in expected.items())
        # No two overlapping events of a line share a row.
        for d in np.unique(index.depth[events]):
            row = order[index.depth[order] == d]
            assert np.all(profile.start_ns[row][1:] >= end[row][:-1])


def test_depth_of_nested_line_without_sorting_ties() -> None:
    start = np.array([0, 0, 5, 20])
    dur = np.array([10, 30, 2, 1])  # the longer one at the same start encloses
    order = np.array([1, 0, 2, 3])
    depth = nesting_depth(order, np.zeros(4, np.int32), start, dur)
    assert depth.tolist() == [1, 0, 2, 1]


@pytest.mark.parametrize("res", [1, 7, 300, 4000])
def test_window_lod_rule(traced: tuple[Profile, TraceIndex], res: int) -> None:
    profile, index = traced
    rng = np.random.default_rng(res)
    span = index.end_ns - index.origin_ns
    windows = [(index.origin_ns, index.end_ns)]
    for _ in range(6):
        a = index.origin_ns + int(rng.integers(0, span))
        windows.append((a, a + int(rng.integers(1, span // 3))))
    for t0, t1 in windows:
        assert_window_rule(profile, index, t0, t1, res)


def test_window_response_is_bounded_by_pixels() -> None:
    profile = profile_from_bytes(synthetic_xspace_bytes(200_000, n_lines=4))
    index = build_trace_index(profile)
    for res in (50, 1000):
        got = query_window(profile, index, index.origin_ns, index.end_ns, res)
        wide = np.sum(profile.dur_ns >= (index.end_ns - index.origin_ns) / res)
        assert len(got) <= len(index.row_line) * (res + 1) + wide
        assert len(got) < profile.n_events / 20


def test_window_line_filter_and_box(traced: tuple[Profile, TraceIndex]) -> None:
    profile, index = traced
    got = query_window(profile, index, index.origin_ns, index.end_ns, 500, lines=np.array([1]))
    assert set(got.line.tolist()) == {1}
    t0, t1 = index.origin_ns + 1000, index.origin_ns + 9000
    rows = rows_of_pairs(index, np.array([0, 0, 2]), np.array([0, 1, 0]))
    box = events_in_box(profile, index, t0, t1, rows)
    brute = brute_overlapping(profile, t0, t1)
    chosen = {(0, 0), (0, 1), (2, 0)}
    wanted = [i for i in brute.tolist() if (profile.line[i], index.depth[i]) in chosen]
    assert sorted(box.tolist()) == sorted(wanted)
    everything = events_in_box(profile, index, t0, t1, None)
    assert sorted(everything.tolist()) == brute.tolist()


def test_flows_launch_and_producer_consumer() -> None:
    builder = XSpaceBuilder("host")
    host = builder.plane("/host:CPU").line(1, "main")
    gpu = builder.plane("/device:GPU:0")
    stream = gpu.line(7, "Stream #7")
    derived = gpu.line(100, "XLA Ops")
    host.event("op", BASE, 1000)
    host.event("cudaLaunchKernel", BASE + 10, 20, {"correlation_id": 5})
    host.event("cudaLaunchKernel", BASE + 100, 20, {"correlation_id": 6})
    stream.event("kernel_a", BASE + 500, 100, {"correlation_id": 5})
    stream.event("kernel_b", BASE + 700, 100, {"correlation_id": 6})
    derived.event("xla_op", BASE + 500, 100, {"correlation_id": 5})  # derived: no flow
    host.event("producer", BASE + 2000, 10, {"_p": 42, "_pt": 3})
    host.event("consumer", BASE + 3000, 10, {"_c": 42, "_ct": 3})
    host.event("other_type", BASE + 3100, 10, {"_c": 42, "_ct": 4})
    profile = profile_from_xspace(builder.build())
    index = build_trace_index(profile)
    names = profile.strings
    pairs = {
        (names[int(profile.name[s])], names[int(profile.name[d])], int(k))
        for s, d, k in zip(index.flows.src, index.flows.dst, index.flows.kind, strict=True)
    }
    assert pairs == {
        ("cudaLaunchKernel", "kernel_a", 0),
        ("cudaLaunchKernel", "kernel_b", 1 - 1),
        ("producer", "consumer", 1),
    }
    kernel = int(np.flatnonzero(profile.name == names.id_of("kernel_a"))[0])
    touching = index.flows.touching(np.array([kernel]))
    assert len(touching) == 1 and index.flows.dst[touching[0]] == kernel


def test_counters_memory_is_max_preserving_and_utilization_exact() -> None:
    builder = XSpaceBuilder("host")
    mem = builder.plane("/host:CPU").line(1, "mem")
    values = [100, 5000, 200, 300, 9000, 50]
    for k, v in enumerate(values):
        mem.event(
            "MemoryAllocation",
            BASE + k * 100,
            0,
            {"bytes_allocated": v, "allocator_name": "GPU_0_bfc"},
        )
    stream = builder.plane("/device:GPU:0").line(3, "Stream #3")
    stream.event("k1", BASE, 250)
    stream.event("k2", BASE + 200, 100)  # overlaps k1 on another row
    stream.event("k3", BASE + 400, 100)
    profile = profile_from_xspace(builder.build())
    index = build_trace_index(profile)
    by_name = {c.name: c for c in index.counters}
    memory = by_name["Memory in use (GPU_0_bfc)"]
    times, got = sample(memory, BASE, BASE + 600, 3)
    assert times.tolist() == [BASE, BASE + 200, BASE + 400]
    assert got.tolist() == [5000, 300, 9000]  # each bucket's peak survives downsampling
    _, before = sample(memory, BASE - 200, BASE, 2)
    assert np.isnan(before).all()
    util = by_name["Utilization (/device:GPU:0)"]
    _, pct = sample(util, BASE, BASE + 600, 6)
    assert pct.tolist() == [100.0, 100.0, 100.0, 0.0, 100.0, 0.0]


def test_search_by_name(traced: tuple[Profile, TraceIndex]) -> None:
    profile, index = traced
    groups = index.names.matching_groups(profile, "OP1")
    names = profile.strings
    matching = np.flatnonzero([("op1" in names[int(n)].lower()) for n in profile.name])
    assert int(index.names.sizes(groups).sum()) == len(matching)
    first = index.names.first_by_time(profile, groups, 0, 25)
    expected = matching[np.argsort(profile.start_ns[matching], kind="stable")][:25]
    assert np.array_equal(np.sort(profile.start_ns[first]), profile.start_ns[expected])
    page2 = index.names.first_by_time(profile, groups, 25, 25)
    assert profile.start_ns[page2].min() >= profile.start_ns[first].max()
    t0, t1 = index.origin_ns + 2000, index.origin_ns + 7000
    inside = index.names.in_window(profile, groups, t0, t1)
    brute = np.intersect1d(matching, brute_overlapping(profile, t0, t1))
    assert sorted(inside.tolist()) == brute.tolist()
    assert len(index.names.matching_groups(profile, "no such thing")) == 0


def test_cache_round_trip(tmp_path: Path, traced: tuple[Profile, TraceIndex]) -> None:
    profile, index = traced
    save_index(index, tmp_path / "idx")
    loaded = load_index(tmp_path / "idx")
    assert loaded is not None
    assert isinstance(loaded.order.base, np.memmap)
    a = query_window(profile, index, index.origin_ns, index.end_ns, 333)
    b = query_window(profile, loaded, index.origin_ns, index.end_ns, 333)
    assert np.array_equal(a.event, b.event)
    assert loaded.origin_ns == index.origin_ns
    assert [c.name for c in loaded.counters] == [c.name for c in index.counters]
    assert np.array_equal(loaded.steps.start_ns, index.steps.start_ns)
    assert load_index(tmp_path / "missing") is None


def test_steps_from_step_markers() -> None:
    builder = XSpaceBuilder("host")
    line = builder.plane("/host:CPU").line(1, "python")
    for k in range(3):
        line.event("train", BASE + k * 1000, 900, {"step_num": 10 + k, "_r": 1})
        line.event("op", BASE + k * 1000 + 10, 100)
    index = build_trace_index(profile_from_xspace(builder.build()))
    assert index.steps.number.tolist() == [10, 11, 12]
    assert (index.steps.start_ns - index.origin_ns).tolist() == [0, 1000, 2000]


def test_empty_profile() -> None:
    builder = XSpaceBuilder("host")
    builder.plane("/host:CPU").line(1, "idle")
    profile = profile_from_xspace(builder.build())
    index = build_trace_index(profile)
    assert index.n_events == 0
    assert len(query_window(profile, index, 0, 100, 10)) == 0


def test_name_index_and_steps_are_built_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = count_step_db_builds(monkeypatch)
    profile = profile_from_bytes(synthetic_xspace_bytes(5_000))
    index = build_trace_index(profile)
    assert index._names is None and built == []  # the first window waits for neither
    query_window(profile, index, index.origin_ns, index.end_ns, 500)
    assert index._names is None and built == []
    expected = build_name_index(profile)
    for name in ("name_ids", "events", "offsets", "max_dur_ns"):
        np.testing.assert_array_equal(getattr(index.names, name), getattr(expected, name))
    assert index._profile is not None  # the steps are still to be found from it
    steps = index.steps
    assert built == [1] and len(steps.number) > 0
    assert index.steps is steps and built == [1]  # found once
    assert index._profile is None  # both built: the profile is no longer held
    fresh = build_trace_index(profile)
    save_index(fresh, tmp_path / "entry")  # saving builds both
    loaded = load_index(tmp_path / "entry")
    assert loaded is not None and loaded._names is not None and loaded._steps is not None
    np.testing.assert_array_equal(loaded.names.events, expected.events)
    np.testing.assert_array_equal(loaded.steps.start_ns, steps.start_ns)


def _peaks_point_by_point(counter: Counter, t0: int, t1: int, buckets: int) -> np.ndarray:
    """`sample`'s step values with each point's bucket searched in the edges, point by point
    (the way `sample` did it before it searched the edges in the points)."""
    times, _ = sample(counter, t0, t1, buckets)
    n = len(times)
    edges = np.round(t0 + (np.arange(n + 1, dtype=np.float64) * ((t1 - t0) / n)))
    edges = edges.astype(np.int64)
    held_at = np.searchsorted(counter.a, edges[:-1], side="right") - 1
    values = np.where(held_at >= 0, counter.b[np.maximum(held_at, 0)], np.nan)
    inside = np.flatnonzero((counter.a >= t0) & (counter.a < t1))
    if len(inside):
        bucket = [
            min(max(int(np.searchsorted(edges, counter.a[i], "right")) - 1, 0), n - 1)
            for i in inside
        ]
        peak = np.full(n, np.nan)
        for b in sorted(set(bucket)):  # the max of each bucket's run, NaN propagating
            peak[b] = np.maximum.reduce(counter.b[inside[np.array(bucket) == b]])
        values = np.fmax(values, peak)
    return values


@pytest.mark.parametrize("seed", range(6))
def test_step_counters_keep_each_buckets_peak(seed: int) -> None:
    """Each bucket holds the value held at its start and every point inside it, at the
    largest; points in runs, repeated times, NaN gaps, buckets of 1 ns and epoch times whose
    float64 edges round off t0 and t1 (the points there go to the first and last bucket)."""
    rng = np.random.default_rng(seed)
    base = [0, 1_700_000_000_123_456_789][seed % 2]
    t = np.sort(base + rng.integers(0, 5_000, 60)).astype(np.int64)
    v = rng.integers(0, 100, 60).astype(np.float64)
    v[rng.random(60) < 0.1] = np.nan
    counter = Counter("m", "bytes", KIND_STEP, t, v, np.zeros(0))
    for t0, t1, buckets in [
        (base, base + 5_000, 7),
        (base + 333, base + 4_321, 64),
        (base + 100, base + 140, 4096),  # one bucket per nanosecond
        (base - 3_000, base + 9_000, 1),
        (base + 17, base + 4_999, 333),
    ]:
        _, got = sample(counter, t0, t1, buckets)
        want = _peaks_point_by_point(counter, t0, t1, buckets)
        assert np.array_equal(got, want, equal_nan=True), (t0, t1, buckets)


def test_counters_read_the_same_at_every_zoom() -> None:
    """A window finer than a nanosecond per bucket used to round its bucket edges onto each
    other: a kernel running throughout read 0% and 100% in turn, and the bucket times
    repeated. Buckets are whole nanoseconds: inside one kernel utilization is 100% at a 2 us,
    a 20 ns and a 200 us window alike, and memory holds its value."""
    builder = XSpaceBuilder("host")
    mem = builder.plane("/host:CPU").line(1, "mem")
    mem.event("MemoryAllocation", BASE, 0, {"bytes_allocated": 4096, "allocator_name": "bfc"})
    builder.plane("/device:GPU:0").line(3, "Stream #3").event("kernel", BASE, 1_000_000)
    index = build_trace_index(profile_from_xspace(builder.build()))
    util, memory = (
        c for name in ("Utilization", "Memory") for c in index.counters if name in c.name
    )
    mid = BASE + 500_000
    for span in (200_000, 2_000, 20):
        times, pct = sample(util, mid - span // 2, mid + span // 2, 4096)
        assert set(pct.tolist()) == {100.0}, span
        assert len(times) == min(4096, span) and (np.diff(times) >= 1).all()
        _, held = sample(memory, mid - span // 2, mid + span // 2, 4096)
        assert set(held.tolist()) == {4096.0}, span
