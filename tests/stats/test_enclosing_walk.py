"""The enclosing-op walk of `stats.enclosing` against a brute-force search."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats import enclosing
from tests.support.op_stack import stack_enclosers


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


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("climbs", [0, 1, 8])
def test_walk_gives_the_op_stacks_answers(
    seed: int, climbs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The array walk (a search, then a climb up the candidates' nesting: a level at a time,
    then by powers of two) against a stack walked one event at a time: short and long
    lines, candidates sharing starts and ends, zero-length events, queries that are
    candidates, unsorted events."""
    monkeypatch.setattr(enclosing, "_CLIMBS", climbs)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    span = int(rng.choice([10, 100, 1000, 20_000]))
    starts = rng.integers(0, span, n).astype(np.int64)
    if seed % 2:
        starts = np.sort(starts)
    ends = starts + rng.choice([0, 1, 2, 5, 50, 500, 5000], n)
    cand = np.flatnonzero(rng.random(n) < rng.random())
    queries = rng.permutation(np.flatnonzero(rng.random(n) < 0.5))
    assert _walk(starts, ends, cand, queries).tolist() == stack_enclosers(
        starts, ends, cand, queries
    )


@pytest.mark.parametrize("climbs", [0, 8])
def test_walk_climbs_a_deep_stack(climbs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line nested 2,000 levels deep (each event inside the one before), some events
    short: the queries' enclosers are found far up the stack."""
    monkeypatch.setattr(enclosing, "_CLIMBS", climbs)
    n = 2000
    starts = np.arange(n, dtype=np.int64)
    ends = 2 * n - starts
    ends[::7] = starts[::7] + 1
    cand = np.flatnonzero(np.arange(n) % 3 != 0)
    queries = np.arange(0, n, 5)
    found = _walk(starts, ends, cand, queries)
    assert found.tolist() == stack_enclosers(starts, ends, cand, queries)
    assert (found >= 0).sum() > len(queries) // 2
