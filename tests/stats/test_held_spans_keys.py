"""`sweep.held_spans` keys its events by time offset where steps x span fit in int64, else by
the times' ranks: both give the same held spans."""

from __future__ import annotations

import numpy as np

from stepscope.stats.steps.sweep import held_spans

TYPES = np.array([10, 20, 30, 110, 160], np.int64)


def test_offset_keys_and_rank_keys_agree() -> None:
    held = sum(_agree(seed) for seed in range(12))
    assert held > 12  # the cases hold spans


def _agree(seed: int) -> int:
    rng = np.random.default_rng(seed)
    n, nz, steps = int(rng.integers(0, 150)), int(rng.integers(1, 25)), int(rng.integers(1, 5))
    span = 1 << 22  # with a step number past 2**40, steps x span is past int64's keys
    step = rng.integers(0, steps, n).astype(np.int64)
    lo = rng.integers(0, span, n).astype(np.int64)
    hi = lo + rng.integers(0, span // 8, n)
    types = rng.choice(TYPES, n)
    z_step = rng.integers(0, steps, nz).astype(np.int64)
    z_ns = rng.integers(0, span, nz).astype(np.int64)
    z_type = rng.choice(TYPES, nz)
    near = held_spans(step, lo, hi, types, z_step, z_ns, z_type)
    far = 1 << 41
    wide = held_spans(step + far, lo, hi, types, z_step + far, z_ns, z_type)
    assert (wide[0] - far).tolist() == near[0].tolist()
    for a, b in zip(near[1:], wide[1:], strict=True):
        assert a.tolist() == b.tolist()
    return len(near[0])
