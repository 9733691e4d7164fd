"""The C walk of `stats.enclosing` (`_enclosing.c`) answers as the Python loop it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope import accelerators
from stepscope.stats import enclosing


def _walk(
    starts: np.ndarray, ends: np.ndarray, cand: np.ndarray, queries: np.ndarray
) -> np.ndarray:
    out = np.full(len(queries), -1, np.int64)
    enclosing._scan_line(starts, ends, cand, queries, np.arange(len(queries)), out)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_native_walk_matches_the_python_loop(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    if accelerators.get("_enclosing") is None:
        pytest.skip("C extension not built")
    rng = np.random.default_rng(seed)
    n = 2000
    starts = np.sort(rng.integers(0, 50_000, n)).astype(np.int64)
    # Nested, overlapping, zero-length and tied events, as real host lines have.
    ends = starts + rng.choice([0, 1, 5, 50, 500, 5000], n)
    cand = np.flatnonzero(rng.random(n) < 0.6)
    queries = rng.permutation(np.flatnonzero(rng.random(n) < 0.5))  # some are candidates too
    native = _walk(starts, ends, cand, queries)
    monkeypatch.setenv("STEPSCOPE_PURE_PYTHON", "1")
    python = _walk(starts, ends, cand, queries)
    assert np.array_equal(native, python)
    assert (native >= 0).sum() > n // 10  # the case is not trivial
    assert not np.any(native == queries)  # never its own encloser
