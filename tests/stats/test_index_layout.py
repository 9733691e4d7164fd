"""The trace index's positions in C (`_segsearch.layout`) equal the NumPy reference's."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.trace_index import layout, lod, segments
from stepscope.stats.trace_index.lod import line_order, nesting_depth


def _events(seed: int, n: int, n_lines: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nested and overlapping events on every other line (odd lines stay empty), not in line
    order, with zero-length instants and ties."""
    rng = np.random.default_rng(seed)
    line = (rng.integers(0, n_lines // 2, n) * 2).astype(np.int32)
    start = 1_700_000_000_000 + rng.integers(0, 50_000, n) * 7
    dur = rng.choice([0, 1, 3, 50, 400, 5000, 70_000], n).astype(np.int64)
    return line, start, dur


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_c_layout_equals_numpy(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STEPSCOPE_PURE_PYTHON", raising=False)
    lib = segments.native()
    if lib is None or not hasattr(lib, "layout"):
        pytest.skip("the C extension is not built")
    n_lines = 9
    line, start, dur = _events(seed, 20_000, n_lines)
    order0 = line_order(line, start, start + dur)
    assert not np.array_equal(order0, np.arange(len(line)))  # the sorted case is not the only one
    depth = nesting_depth(order0, line, start, dur)
    assert depth.max() > 3
    origin = int(start.min())
    fast = layout.positions(line, n_lines, order0, depth, start, dur, origin)
    slow = layout.positions_numpy(line, n_lines, order0, depth, start, dur, origin)
    for name in layout.Positions.__dataclass_fields__:
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert fast.line_depths[1::2].tolist() == [0] * (n_lines // 2)  # empty lines have no rows


def test_c_layout_rejects_lines_out_of_range() -> None:
    lib = segments.native()
    if not hasattr(lib, "layout"):
        pytest.skip("the C extension is not built")
    n = 3
    order = np.arange(n, dtype=np.int64)
    out = [np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)]
    with pytest.raises(ValueError, match="out of range"):
        lib.layout(
            order,
            np.array([0, 5, 0], np.int32),
            np.zeros(n, np.int32),
            order,
            order,
            2,
            0,
            *out,
            np.empty(2, np.int32),
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_depths_of_events_in_line_order(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STEPSCOPE_PURE_PYTHON", raising=False)
    if not hasattr(segments.native(), "depths"):
        pytest.skip("the C extension is not built")
    line, start, dur = _events(seed, 20_000, 9)
    assert lod.depths_in_line_order(line, start, dur) is None  # not in line order: sorted
    order = line_order(line, start, start + dur)
    line, start, dur = line[order], start[order], dur[order]  # now they are
    found = lod.depths_in_line_order(line, start, dur)
    assert found is not None
    depth, first, last = found
    expected = nesting_depth(np.arange(len(line)), line, start, dur)
    assert expected.max() > 3
    np.testing.assert_array_equal(depth, expected)
    assert depth.dtype == expected.dtype
    assert (first, last) == (int(start.min()), int((start + dur).max()))
    # a tie in the wrong order (the shorter event first) is not line order
    tie = np.flatnonzero((start[1:] == start[:-1]) & (line[1:] == line[:-1]) & (dur[1:] < dur[:-1]))
    k = int(tie[0])
    dur[k], dur[k + 1] = dur[k + 1], dur[k]
    assert lod.depths_in_line_order(line, start, dur) is None


def test_c_layout_of_events_in_line_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events already in line order (``order0`` None): lines without nesting are read in place,
    nested ones through the row order; both as NumPy places them."""
    monkeypatch.delenv("STEPSCOPE_PURE_PYTHON", raising=False)
    if not hasattr(segments.native(), "layout"):
        pytest.skip("the C extension is not built")
    line, start, dur = _events(4, 20_000, 9)
    flat = line == 2  # one line back to back, as a GPU stream: no nesting
    dur[flat] = 3
    start[flat] = start.min() + np.arange(int(flat.sum())) * 5
    order = line_order(line, start, start + dur)
    line, start, dur = line[order], start[order], dur[order]
    depth = nesting_depth(np.arange(len(line)), line, start, dur)
    assert depth[line == 2].max() == 0 and depth.max() > 3
    origin = int(start.min())
    fast = layout.positions(line, 9, None, depth, start, dur, origin)
    slow = layout.positions_numpy(line, 9, np.arange(len(line)), depth, start, dur, origin)
    for name in layout.Positions.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)


def test_c_layout_is_the_same_with_any_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are shared among STEPSCOPE_THREADS workers above 2**20 events: same positions."""
    monkeypatch.delenv("STEPSCOPE_PURE_PYTHON", raising=False)
    if not hasattr(segments.native(), "layout"):
        pytest.skip("the C extension is not built")
    per_line, n_lines = 200_000, 6
    rng = np.random.default_rng(5)
    line = np.repeat(np.arange(n_lines, dtype=np.int32), per_line)
    start = np.tile(np.arange(per_line, dtype=np.int64) * 100, n_lines) + 1_000_000_000
    dur = rng.integers(1, 99, len(line)).astype(np.int64)
    nested = (line % 2 == 1) & (np.arange(len(line)) % 2 == 0)  # odd lines: parent, child
    dur[nested] = 150  # reaches into the next event, which starts inside it
    found = lod.depths_in_line_order(line, start, dur)
    assert found is not None
    depth, origin, _ = found
    assert depth.max() == 1
    answers = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("STEPSCOPE_THREADS", threads)
        answers.append(layout.positions(line, n_lines, None, depth, start, dur, origin))
    slow = layout.positions_numpy(line, n_lines, np.arange(len(line)), depth, start, dur, origin)
    for name in layout.Positions.__dataclass_fields__:
        for fast in answers:
            np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
