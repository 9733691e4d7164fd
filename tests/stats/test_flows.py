"""Producer/consumer flows joined per context type, and the flows a window sends.

Both against brute force on random traces: the join (a consumer's producer is the first
event with its (type, id)) and `window_flows` (the flows touching the window's events whose
ends start at least a pixel apart, the longest kept under the cap), whichever of its two
paths (longest-first scan or per-event search) answers.
"""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_xspace
from stepscope.stats.trace_index.flows import KIND_PRODUCER, build_flows, window_flows
from stepscope.xspace.builder import XSpaceBuilder

BASE = 1_000_000_000


def _contexts(seed: int, types: tuple[int, ...]) -> Profile:
    """Producers and consumers on three threads with random (type, id) contexts: repeated
    ids (the first producer wins), consumers nobody produced, ids in no order."""
    rng = np.random.default_rng(seed)
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    lines = [plane.line(k + 1, f"thread{k}") for k in range(3)]
    for k in range(600):
        start = BASE + k * 50 + int(rng.integers(0, 40))
        stats: dict[str, int] = {}
        roll = rng.random()
        context = int(rng.integers(0, 120)) * 7919 + (1 << 40) * int(rng.integers(0, 3))
        kind = types[int(rng.integers(0, len(types)))]
        if roll < 0.4:
            stats = {"_p": context, "_pt": kind}
        elif roll < 0.85:
            stats = {"_c": context, "_ct": kind}
        lines[int(rng.integers(0, 3))].event(f"op{k % 7}", start, int(rng.integers(1, 30)), stats)
    for line in lines:
        line.sort_events()
    return profile_from_xspace(builder.build())


def _brute_producer_pairs(profile: Profile) -> set[tuple[int, int]]:
    first: dict[tuple[int, int], int] = {}
    consumers: list[tuple[int, tuple[int, int]]] = []
    for event in range(profile.n_events):
        stats = dict(profile.event_stats(event))
        if "_p" in stats:
            first.setdefault((int(stats.get("_pt", 0)), int(stats["_p"])), event)
        if "_c" in stats:
            consumers.append((event, (int(stats.get("_ct", 0)), int(stats["_c"]))))
    return {(first[key], event) for event, key in consumers if key in first and first[key] != event}


@pytest.mark.parametrize(
    ("seed", "types"),
    [(1, (2, 15)), (2, (0,)), (3, (1, 2, 3, 4, 5)), (4, (-3, 7)), (5, (70_000, 2))],
)
def test_producer_flows_match_brute_force(seed: int, types: tuple[int, ...]) -> None:
    profile = _contexts(seed, types)
    flows = build_flows(profile, np.zeros(profile.n_events, np.int32))
    found = {
        (int(s), int(d))
        for s, d, k in zip(flows.src, flows.dst, flows.kind, strict=True)
        if k == KIND_PRODUCER
    }
    assert found == _brute_producer_pairs(profile) and found
    assert np.all(np.diff(flows.src) >= 0)
    assert np.array_equal(flows.dst_sorted, np.sort(flows.dst))
    span = np.abs(profile.start_ns[flows.dst] - profile.start_ns[flows.src])
    assert np.array_equal(flows.span_ns, span[flows.by_span])
    assert np.all(np.diff(flows.span_ns) <= 0)


def _brute_window(
    profile: Profile, src: np.ndarray, dst: np.ndarray, events: np.ndarray, bucket: float, cap: int
) -> tuple[list[int], int]:
    wanted = set(events.tolist())
    spans = np.abs(profile.start_ns[dst] - profile.start_ns[src])
    least = bucket if bucket >= 1 else 0  # under 1 ns a pixel: every flow
    found = [
        f
        for f in range(len(src))
        if (int(src[f]) in wanted or int(dst[f]) in wanted) and spans[f] >= least
    ]
    longest = sorted(found, key=lambda f: (-int(spans[f]), f))[:cap]
    return sorted(longest), len(found)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_window_flows_are_the_visible_ones_whichever_path(seed: int) -> None:
    profile = _contexts(seed, (2, 15))
    flows = build_flows(profile, np.zeros(profile.n_events, np.int32))
    rng = np.random.default_rng(seed)
    for n_events, bucket, cap in [
        (5, 0.5, 1000),  # zoomed in: every flow of the few events (search path)
        (400, 0.5, 1000),
        (400, 200.0, 1000),  # zoomed out: only flows at least a pixel long (scan path)
        (20, 200.0, 1000),
        (400, 60.0, 7),  # capped: the 7 longest
        (600, 1e9, 1000),  # nothing is that long
    ]:
        events = np.sort(rng.choice(profile.n_events, n_events, replace=False)).astype(np.int64)
        got, total = window_flows(flows, profile.start_ns, events, bucket, cap)
        want, want_total = _brute_window(profile, flows.src, flows.dst, events, bucket, cap)
        assert got.tolist() == want and total == want_total, (n_events, bucket, cap)
