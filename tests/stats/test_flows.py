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
from stepscope.stats.trace_index.flows import (
    KIND_PRODUCER,
    _longest_first,
    build_flows,
    window_flows,
)
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


def _reference_table(profile: Profile, depth: np.ndarray) -> list[np.ndarray]:
    """The flow table's arrays by brute force and the plain sorts the build avoids: the pairs
    (launch: a device event's source is the deepest host event with its correlation id, the
    first of those; producer: the first event with the consumer's (type, id)), pairs of an
    event with itself dropped, `np.lexsort((dst, src))`, the stable sorts by destination and
    by descending span."""
    host_of: dict[int, int] = {}
    first: dict[tuple[int, int], int] = {}
    pairs: list[tuple[int, int, int]] = []
    consumers: list[tuple[int, tuple[int, int]]] = []
    device_events: list[tuple[int, int]] = []
    for event in range(profile.n_events):
        stats = profile.event_stats(event)
        line = profile.lines[int(profile.line[event])]
        plane = profile.planes[line.plane]
        if "correlation_id" in stats:
            cid = int(stats["correlation_id"])
            if not plane.is_device:
                best = host_of.get(cid)
                if best is None or depth[event] > depth[best]:
                    host_of[cid] = event
            elif line.name.startswith("Stream"):
                device_events.append((event, cid))
        if "_p" in stats:
            first.setdefault((int(stats.get("_pt", 0)), int(stats["_p"])), event)
        if "_c" in stats:
            consumers.append((event, (int(stats.get("_ct", 0)), int(stats["_c"]))))
    pairs += [(host_of[c], e, 0) for e, c in device_events if c in host_of]
    pairs += [(first[key], e, 1) for e, key in consumers if key in first]
    pairs = [p for p in pairs if p[0] != p[1]]
    src = np.array([p[0] for p in pairs], np.int64)
    dst = np.array([p[1] for p in pairs], np.int64)
    kind = np.array([p[2] for p in pairs], np.int8)
    order = np.lexsort((dst, src))
    src, dst, kind = src[order], dst[order], kind[order]
    by_dst = np.argsort(dst, kind="stable").astype(np.int64)
    span = np.abs(profile.start_ns[dst] - profile.start_ns[src])
    by_span = np.argsort(-span, kind="stable").astype(np.int64)
    return [src, dst, kind, by_dst, dst[by_dst], by_span, span[by_span]]


def _launches_and_contexts(seed: int) -> tuple[Profile, np.ndarray]:
    """Host ops nesting runtime calls that share correlation ids (the deepest is the launch),
    kernels on two streams and a derived line, and producer/consumer contexts on the same
    events: a kernel both launched and consumed from one host event (two flows with one
    source and destination), an event consuming its own context (no flow), ids repeated and
    in no order."""
    rng = np.random.default_rng(seed)
    builder = XSpaceBuilder("host")
    host = builder.plane("/host:CPU").line(1, "thread")
    gpu = builder.plane("/device:GPU:0")
    streams = [gpu.line(7, "Stream #7"), gpu.line(8, "Stream #8")]
    derived = gpu.line(9, "XLA Ops")
    for k in range(60):
        t0 = BASE + k * 3000  # spans past 2**16 ns: both digits of the span sort
        cid = int(rng.integers(0, 25))
        context = {"_p": int(rng.integers(0, 20)), "_pt": int(rng.integers(1, 3))}
        host.event("op", t0, 500, {"correlation_id": cid, **context})
        if rng.random() < 0.7:
            host.event("cudaLaunchKernel", t0 + 10, 50, {"correlation_id": cid})
        if rng.random() < 0.2:
            host.event("self", t0 + 100, 5, {"_p": 99, "_pt": 1, "_c": 99, "_ct": 1})
        stats = {"correlation_id": int(rng.integers(0, 25))}
        if rng.random() < 0.5:
            stats |= {"_c": int(rng.integers(0, 20)), "_ct": int(rng.integers(1, 3))}
        streams[int(rng.integers(0, 2))].event("kernel", t0 + int(rng.integers(0, 9000)), 80, stats)
        derived.event("xla_op", t0 + 600, 80, {"correlation_id": cid})
    for line in [host, *streams, derived]:
        line.sort_events()
    profile = profile_from_xspace(builder.build())
    depth = np.zeros(profile.n_events, np.int32)
    depth[np.flatnonzero(profile.strings.lookup(profile.name) == "cudaLaunchKernel")] = 1
    return profile, depth


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_flow_table_is_the_plain_sorts_of_the_brute_force_pairs(seed: int) -> None:
    profile, depth = _launches_and_contexts(seed)
    flows = build_flows(profile, depth)
    names = ["src", "dst", "kind", "by_dst", "dst_sorted", "by_span", "span_ns"]
    want = _reference_table(profile, depth)
    assert len(flows) and set(flows.kind.tolist()) == {0, 1}
    for name, expected in zip(names, want, strict=True):
        got = getattr(flows, name)
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist(), name
    for seed_contexts in (1, 3):  # producer flows alone (one part, distinct destinations)
        alone = _contexts(seed_contexts, (2, 15))
        zeros = np.zeros(alone.n_events, np.int32)
        for got, expected in zip(
            (getattr(build_flows(alone, zeros), n) for n in names),
            _reference_table(alone, zeros),
            strict=True,
        ):
            assert got.dtype == expected.dtype and got.tolist() == expected.tolist()


@pytest.mark.parametrize("top", [0, 7, 1 << 16, (1 << 16) + 3, (1 << 32) - 1, 1 << 32, 1 << 50])
def test_longest_first_is_the_stable_sort_of_negated_spans(top: int) -> None:
    rng = np.random.default_rng(top % 1000)
    span = rng.integers(0, top + 1, 5000, dtype=np.int64)
    span[rng.integers(0, 5000, 50)] = top  # ties, at the largest too
    span[::7] = span[3]
    got = _longest_first(span)
    assert got.dtype == np.int64
    assert got.tolist() == np.argsort(-span, kind="stable").tolist()
    assert _longest_first(np.zeros(0, np.int64)).tolist() == []
