"""The segmented search of the trace index against NumPy's searchsorted per segment."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.trace_index import segments


@pytest.mark.parametrize("side", ["left", "right"])
def test_segmented_search_equals_searchsorted_per_segment(side: str) -> None:
    rng = np.random.default_rng(7)
    values = np.sort(rng.integers(0, 50, 400)).astype(np.int64)  # many ties
    cuts = np.sort(rng.integers(0, 401, 120))
    lo, hi = cuts[:-1:2], cuts[1::2]  # non-overlapping segments, some empty
    hi = np.concatenate([hi, [lo[-1]]])[: len(lo)]
    keys = rng.integers(-5, 60, len(lo))  # below, inside and above the values
    expected = np.array(
        [
            a + np.searchsorted(values[a:b], k, side=side)
            for a, b, k in zip(lo, hi, keys, strict=True)
        ]
    )
    expected = np.where(hi <= lo, lo, expected)
    found = segments.segmented_search(values, lo, hi, keys, side)
    assert found.tolist() == expected.tolist()
    through = rng.permutation(len(values))
    inverse = np.argsort(through)
    via = segments.segmented_search(values[inverse], lo, hi, keys, side, through=through)
    assert via.tolist() == expected.tolist()
