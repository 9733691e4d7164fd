"""The C nesting pass (`stats/_nesting.c`) against its NumPy twin and XProf's op stack.

Profiles give int32 lines and int64 times, the columns the C pass takes: the same parents,
depths and levels as the NumPy path on random lines (in order and shuffled, zero-length
events, shared boundaries, partial overlaps, properly nested lines).
"""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.nesting import Forest, nesting_parents
from tests.support.native import c_and_python
from tests.support.op_stack import stack_parents


def _events(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    line = rng.integers(0, 4, n).astype(np.int32)
    start = rng.integers(0, 300, n).astype(np.int64)
    end = start + rng.integers(0, 80, n) * (rng.random(n) > 0.25)  # some zero-length events
    if seed % 3 == 1:  # properly nested lines: the NumPy path's by-depth pass
        end = np.minimum(end, start + 1 + (300 - start) // 5)
    if seed % 2:  # the usual case: already in (line, start, longest first) order
        order = np.lexsort((-end, start, line))
        line, start, end = line[order], start[order], end[order]
    return line, start, end


def _forest(line: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[list[int], ...]:
    forest = Forest.build(line, start, end)
    return (
        forest.parent.tolist(),
        forest.depth.tolist(),
        *(level.tolist() for level in forest.levels),
    )


@pytest.mark.parametrize("seed", range(60))
def test_the_c_pass_gives_the_numpy_parents_depths_and_levels(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _events(seed)
    fast, slow = c_and_python(monkeypatch, lambda: _forest(*events), "_nesting")
    assert fast == slow
    fast_parents, slow_parents = c_and_python(
        monkeypatch, lambda: nesting_parents(*events).tolist(), "_nesting"
    )
    assert fast_parents == slow_parents == stack_parents(*events).tolist()
    assert fast[0] == fast_parents


def test_the_c_pass_reads_a_line_of_equal_events_as_a_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Equal spans nest in their given order (the op stack's tie: the earlier is the
    parent), and an event ending exactly where its parent ends is inside it."""
    line = np.zeros(4, np.int32)
    start = np.array([0, 0, 0, 5], np.int64)
    end = np.array([10, 10, 10, 10], np.int64)
    fast, slow = c_and_python(monkeypatch, lambda: _forest(line, start, end), "_nesting")
    assert fast == slow
    assert fast[:2] == ([-1, 0, 1, 2], [0, 1, 2, 3])


def test_the_c_pass_leaves_columns_of_other_types_to_numpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """int64 lines (a caller's own arrays) take the NumPy path: the same answer."""
    line, start, end = _events(7)
    wide = line.astype(np.int64)
    fast, slow = c_and_python(monkeypatch, lambda: _forest(wide, start, end), "_nesting")
    assert fast == slow


@pytest.mark.parametrize("seed", range(30))
def test_labels_pushed_down_in_c_equal_the_levels_pass(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Forest.push_down_min_at`: the minimum over each event's ancestors, written through
    an index, by the C pass (events in nesting order) or level by level (shuffled events:
    a parent after its child, which the C pass declines)."""
    line, start, end = _events(seed)
    rng = np.random.default_rng(seed)
    forest = Forest.build(line, start, end)
    index = rng.permutation(3 * len(line))[: len(line)]
    values = rng.integers(0, 50, 3 * len(line)).astype(np.int64)

    def pushed() -> list[int]:
        out = values.copy()
        forest.push_down_min_at(index, out)
        return out.tolist()

    fast, slow = c_and_python(monkeypatch, pushed, "_nesting")
    assert fast == slow
    expected = values.copy()
    for k in range(len(line)):  # each value: the smallest on its chain of ancestors
        up = k
        while up >= 0:
            expected[index[k]] = min(expected[index[k]], values[index[up]])
            up = int(forest.parent[up])
    assert fast == expected.tolist()
