"""Nesting depth of properly nested lines without pointer jumping (`lod._laminar`, issue #30):
the same parents and depths as `lod._parents`, and no answer where a line is not nested."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.trace_index import lod


def _calls(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Properly nested calls with instants, equal starts and identical intervals, in
    `line_order`'s order (start, longer first)."""
    starts: list[int] = []
    ends: list[int] = []

    def fill(a: int, b: int, depth: int) -> None:
        t = a
        while t < b and len(starts) < n:
            end = min(b, t + int(rng.integers(1, max(2, (b - a) // 2 + 1))))
            starts.append(t)
            ends.append(end)
            if rng.random() < 0.2:  # the same interval twice: the second nests in the first
                starts.append(t)
                ends.append(end)
            if depth < 6 and end - t > 2 and rng.random() < 0.7:
                fill(t + int(rng.integers(0, 2)), end, depth + 1)  # may start with its parent
            t = end + int(rng.integers(0, 3))

    fill(0, 40 * n, 0)
    start, end = np.array(starts, np.int64), np.array(ends, np.int64)
    order = np.lexsort((-end, start))
    return start[order], end[order]


def _pointer_jumping(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    parent = lod._parents(start, end)
    return parent, lod._hops_to_root(parent)


@pytest.mark.parametrize("seed", range(6))
def test_nested_calls_give_the_pointer_jumping_answer(seed: int) -> None:
    start, end = _calls(np.random.default_rng(seed), 3000)
    found = lod._laminar(start, end)
    assert found is not None
    parent, depth = _pointer_jumping(start, end)
    assert depth.max() >= 3
    assert found[0].tolist() == parent.tolist()
    assert found[1].tolist() == depth.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_one_partial_overlap_is_refused(seed: int) -> None:
    rng = np.random.default_rng(seed)
    start, end = _calls(rng, 2000)
    # Stretch one event past its parent's end (it starts after its parent): the two overlap
    # without nesting.
    parent, _ = _pointer_jumping(start, end)
    later = np.flatnonzero((parent >= 0) & (start > start[np.maximum(parent, 0)]))
    child = int(rng.choice(later))
    end = end.copy()
    end[child] = end[parent[child]] + 5
    order = np.lexsort((-end, start))
    start, end = start[order], end[order]
    assert lod._laminar(start, end) is None
