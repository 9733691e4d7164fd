"""The window's one-narrow-event-per-pixel pick: the longest, the first on ties."""

from __future__ import annotations

import numpy as np

from stepscope.stats.trace_index.window import longest_per_key


def _brute(key: np.ndarray, dur: np.ndarray) -> list[int]:
    out = []
    for k in sorted(set(key.tolist())):
        members = np.flatnonzero(key == k)
        out.append(int(members[np.argmax(dur[members])]))  # argmax: the first maximum
    return out


def test_longest_per_key_both_ways() -> None:
    rng = np.random.default_rng(3)
    bucket = 37.5
    key = rng.integers(0, 60, 2000)
    dur = rng.integers(0, 38, 2000)  # under the bucket, with many ties
    assert longest_per_key(key, dur, bucket).tolist() == _brute(key, dur)  # a slot per key
    # far from 0, still a short range: slots from the smallest key
    assert longest_per_key(key + (1 << 46), dur, bucket).tolist() == _brute(key, dur)
    # keys spread too far for a slot each: one radix sort of (key, longest first)
    assert longest_per_key(key << 20, dur, bucket).tolist() == _brute(key, dur)
    # keys too wide to share 48 bits with the duration: the sort-then-maximum way
    assert longest_per_key(key << 44, dur, bucket).tolist() == _brute(key, dur)
    assert len(longest_per_key(key[:0], dur[:0], bucket)) == 0
