"""The timeline's window rule (`stepscope.stats.trace_index.window`), checked against a brute
force: for the fixed windows of the trace index tests and the generated ones of the property
tests."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.trace_index.index import TraceIndex
from stepscope.stats.trace_index.window import query_window


def brute_overlapping(profile: Profile, t0: int, t1: int) -> np.ndarray:
    end = profile.start_ns + np.maximum(profile.dur_ns, 1)
    return np.flatnonzero((profile.start_ns < t1) & (end > t0))


def assert_window_rule(profile: Profile, index: TraceIndex, t0: int, t1: int, res: int) -> None:
    """What `query_window` returns for [t0, t1) at ``res`` pixels obeys the rule."""
    got = query_window(profile, index, t0, t1, res)
    bucket = (t1 - t0) / res
    overlapping = brute_overlapping(profile, t0, t1)
    returned = set(got.event.tolist())
    assert returned <= set(overlapping.tolist())
    # Every event at least one pixel wide is there.
    wide = overlapping[profile.dur_ns[overlapping] >= bucket]
    assert set(wide.tolist()) <= returned
    # Narrow ones: every (row, pixel) in which an event starts has a returned event of
    # the row in that pixel or a neighbour; at most one narrow event per (row, pixel).
    starts = np.maximum(profile.start_ns[overlapping], t0)
    pixel = ((starts - t0) / bucket).astype(np.int64)
    wanted = set(
        zip(
            profile.line[overlapping].tolist(),
            index.depth[overlapping].tolist(),
            pixel.tolist(),
            strict=True,
        )
    )
    got_pixel = ((np.maximum(got.start_ns, t0) - t0) / bucket).astype(np.int64)
    got_keys = list(zip(got.line.tolist(), got.depth.tolist(), got_pixel.tolist(), strict=True))
    have = set(got_keys)
    for line, depth, p in wanted:
        assert {(line, depth, p - 1), (line, depth, p), (line, depth, p + 1)} & have
    narrow_keys = [k for k, n in zip(got_keys, (got.dur_ns < bucket).tolist(), strict=True) if n]
    assert len(narrow_keys) == len(set(narrow_keys))
    # Events in the bins cut by the window's edges are represented in their own pixel.
    width = 1 << got.level
    left = index.origin_ns + -(-(t0 - index.origin_ns) // width) * width
    right = index.origin_ns + ((t1 - index.origin_ns) // width) * width
    edge = overlapping[
        (profile.start_ns[overlapping] < left) | (profile.start_ns[overlapping] >= right)
    ]
    for i in edge.tolist():
        p = int((max(int(profile.start_ns[i]), t0) - t0) / bucket)
        assert (int(profile.line[i]), int(index.depth[i]), p) in have
    # The columns describe the returned events.
    assert np.array_equal(got.start_ns, profile.start_ns[got.event])
    assert np.array_equal(got.name, profile.name[got.event])
    assert np.array_equal(got.depth, index.depth[got.event])
