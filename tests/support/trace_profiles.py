"""Random nested traces for the trace index's tests (`tests/stats/test_trace_index.py`,
`tests/stats/test_trace_wide.py`)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile, profile_from_xspace
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder

BASE = 1_000_000_000


def _nested(line: LineBuilder, rng: np.random.Generator, start: int, end: int, level: int) -> None:
    """Random properly nested events filling [start, end) with gaps."""
    t = start
    while t < end:
        dur = int(rng.integers(1, max(2, (end - start) // 2)))
        dur = min(dur, end - t)
        line.event(f"op{int(rng.integers(0, 30))}", t, dur)
        if level < 4 and dur > 8 and rng.random() < 0.6:
            _nested(line, rng, t + 1, t + dur - 1, level + 1)
        t += dur + int(rng.integers(0, 50))


def random_profile(seed: int, events_per_line: int = 400) -> Profile:
    rng = np.random.default_rng(seed)
    builder = XSpaceBuilder("host")
    host = builder.plane("/host:CPU")
    for k in range(3):
        line = host.line(k + 1, f"thread{k}")
        _nested(line, rng, BASE, BASE + events_per_line * 60, 0)
    # Overlapping, not nested (async work), with zero-length instants.
    odd = host.line(10, "async")
    for _ in range(events_per_line):
        t = BASE + int(rng.integers(0, events_per_line * 60))
        odd.event(f"async{int(rng.integers(0, 5))}", t, int(rng.integers(0, 300)))
    for line in host.lines:
        line.sort_events()
    return profile_from_xspace(builder.build())
