"""The trace index's positions in C (`_segsearch.layout`) equal the NumPy reference's."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.trace_index import layout, segments
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
    lib = segments._segsearch
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
