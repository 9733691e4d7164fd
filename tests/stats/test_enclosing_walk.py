"""The enclosing-op walk of `stats.enclosing` against a brute-force search."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import enclosing


def _walk(
    starts: np.ndarray, ends: np.ndarray, cand: np.ndarray, queries: np.ndarray
) -> np.ndarray:
    out = np.full(len(queries), -1, np.int64)
    enclosing._scan_line(starts, ends, cand, queries, np.arange(len(queries)), out)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_walk_finds_an_innermost_encloser(seed: int) -> None:
    """Nested, overlapping, zero-length and tied events, as real host lines have: each answer
    contains its query and starts last among the candidates that do (none: no candidate
    does); never the query itself."""
    rng = np.random.default_rng(seed)
    n = 600
    starts = np.sort(rng.integers(0, 20_000, n)).astype(np.int64)
    ends = starts + rng.choice([0, 1, 5, 50, 500, 5000], n)
    cand = np.flatnonzero(rng.random(n) < 0.6)
    queries = rng.permutation(np.flatnonzero(rng.random(n) < 0.5))  # some are candidates too
    found = _walk(starts, ends, cand, queries)
    assert (found >= 0).sum() > n // 10  # the case is not trivial
    for q, f in zip(queries.tolist(), found.tolist(), strict=True):
        holds = cand[(starts[cand] <= starts[q]) & (ends[cand] >= ends[q]) & (cand != q)]
        if f < 0:
            assert not len(holds), q
        else:
            assert f in holds and starts[f] == starts[holds].max(), q
