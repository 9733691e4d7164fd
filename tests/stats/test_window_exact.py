"""The window's answer, event for event, against an oracle of its rule written without the
index's segments, searches or dense pick (issue #30, decision 205).

The oracle reads every position of the index: the candidates are the events overlapping
[t0, t1) whose level is at least the window's, then, in the two bins cut by the window's
edges, those of lower levels; every candidate at least a pixel long is returned, and of the
narrower ones, per (row, pixel), the longest, the first candidate on ties (candidates in
index position order: main ones first, then the left edge's, then the right edge's).
"""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_bytes, profile_from_xspace
from stepscope.stats.trace_index.index import TraceIndex, build_trace_index
from stepscope.stats.trace_index.window import level_for, query_window
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder
from tests.support.fixtures import tf_xplane
from tests.support.synthetic import synthetic_xspace_bytes

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

BASE = 1_000_000_000


def _nested(line: LineBuilder, rng: np.random.Generator, start: int, end: int, depth: int) -> None:
    t = start
    while t < end:
        dur = min(int(rng.integers(1, max(2, (end - start) // 2))), end - t)
        line.event(f"op{int(rng.integers(0, 30))}", t, dur)
        if depth < 4 and dur > 8 and rng.random() < 0.6:
            _nested(line, rng, t + 1, t + dur - 1, depth + 1)
        t += dur + int(rng.integers(0, 50))


def nested_profile(seed: int, per_line: int, equal: bool = False) -> Profile:
    """Nested calls on three threads and overlapping async events with instants; ``equal``:
    durations rounded to a few values, so that many events tie."""
    rng = np.random.default_rng(seed)
    builder = XSpaceBuilder("host")
    host = builder.plane("/host:CPU")
    for k in range(3):
        _nested(host.line(k + 1, f"thread{k}"), rng, BASE, BASE + per_line * 60, 0)
    odd = host.line(10, "async")
    for _ in range(per_line):
        t = BASE + int(rng.integers(0, per_line * 60))
        dur = int(rng.integers(0, 300))
        odd.event(f"async{int(rng.integers(0, 5))}", t, dur // 100 * 100 if equal else dur)
    for line in host.lines:
        line.sort_events()
    return profile_from_xspace(builder.build())


def oracle(profile: Profile, index: TraceIndex, t0: int, t1: int, res: int) -> np.ndarray:
    """The events the rule returns for [t0, t1) at ``res`` pixels, ascending."""
    t1 = max(t1, t0 + 1)
    bucket = (t1 - t0) / max(res, 1)
    level_m = level_for(bucket)
    seg = np.repeat(np.arange(len(index.seg_lo)), index.seg_hi - index.seg_lo)
    level, row = index.seg_level[seg].astype(np.int64), index.seg_row[seg].astype(np.int64)
    event = index.order.astype(np.int64)
    start, dur = profile.start_ns[event], profile.dur_ns[event]
    end = start + np.maximum(dur, 1)

    def overlapping(a: int, b: int) -> np.ndarray:
        return (start < b) & (end > a)

    groups = [overlapping(t0, t1) & (level >= level_m)]
    if level_m > 0:
        width, origin = 1 << level_m, index.origin_ns
        left = min(t1, origin + -(-(t0 - origin) // width) * width)
        right = max(t0, origin + ((t1 - origin) // width) * width)
        for a, b in ((t0, left), (right, t1)):
            if b > a:
                groups.append(overlapping(a, b) & (level < level_m))
    cand = np.concatenate([np.flatnonzero(g) for g in groups])
    d = dur[cand]
    wide = cand[d >= bucket]
    narrow = np.flatnonzero(d < bucket)
    pixel = ((np.maximum(start[cand[narrow]], t0) - t0) / bucket).astype(np.int64)
    key = row[cand[narrow]] * (res + 2) + np.minimum(pixel, res)
    # by key, longest first, then candidate order: each key's first is its pick
    ranked = np.lexsort((narrow, -d[narrow], key))
    first = np.ones(len(ranked), dtype=bool)
    first[1:] = key[ranked][1:] != key[ranked][:-1]
    picked = cand[narrow[ranked[first]]]
    return np.sort(np.concatenate([event[wide], event[picked]]))


def windows(index: TraceIndex, seed: int) -> list[tuple[int, int, int]]:
    """Full views, windows anywhere, narrow ones (inside one bin), and ones past the ends."""
    rng = np.random.default_rng(seed)
    o, e = index.origin_ns, index.end_ns
    span = e - o
    out = [(o, e, res) for res in (1, 333, 2000, 8000)]
    for _ in range(12):
        a = o + int(rng.integers(-span // 10, span))
        out.append((a, a + int(rng.integers(1, max(2, span // 3))), int(rng.integers(1, 9000))))
    for _ in range(6):
        a = o + int(rng.integers(0, span))
        out.append((a, a + int(rng.integers(1, 5000)), int(rng.integers(50, 4000))))
    out.append((o - span // 2, e + span // 2, 1000))
    return out


def assert_exact(profile: Profile, index: TraceIndex, seed: int) -> None:
    for t0, t1, res in windows(index, seed):
        got = query_window(profile, index, t0, t1, res)
        want = oracle(profile, index, t0, t1, res)
        assert got.event.tolist() == want.tolist(), (t0, t1, res)
        assert np.array_equal(got.line, profile.line[want])
        assert np.array_equal(got.depth, index.depth[want])
        assert np.array_equal(got.start_ns, profile.start_ns[want])
        assert np.array_equal(got.dur_ns, profile.dur_ns[want])
        assert np.array_equal(got.name, profile.name[want])


@pytest.mark.parametrize("seed", [1, 2])
def test_window_is_the_rule_on_nested_and_async_lines(seed: int) -> None:
    profile = nested_profile(seed, per_line=300)
    assert_exact(profile, build_trace_index(profile), seed)


def test_window_is_the_rule_with_equal_durations() -> None:
    profile = nested_profile(4, per_line=400, equal=True)
    assert_exact(profile, build_trace_index(profile), 4)


def test_window_is_the_rule_on_a_synthetic_trace() -> None:
    profile = profile_from_bytes(synthetic_xspace_bytes(20_000, n_lines=4, seed=5))
    assert_exact(profile, build_trace_index(profile), 5)


@pytest.mark.integration
def test_window_is_the_rule_on_a_real_trace() -> None:
    profile = profile_from_bytes(tf_xplane("big_ctl").read_bytes())
    assert_exact(profile, build_trace_index(profile), 11)
