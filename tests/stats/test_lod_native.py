"""The trace index's C build passes (`stats/trace_index/_lod.c`) against their NumPy twins.

Depths, parents and levels of detail must be the same bytes either way: on random lines
(properly nested, overlapping without nesting, ties of start and of duration, zero-length
events, many lines, empty), on profiles whose events are out of line order, and on ends past
int64 (the C pass hands those to the twin).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from stepscope.stats.trace_index import lod
from stepscope.stats.trace_index.layout import positions
from tests.support.native import c_and_python, module


def _events(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(line int32, start int64, dur int64) of a random profile; the seed picks its shape."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400)) if seed % 7 else int(rng.integers(0, 3))
    n_lines = int(rng.choice([1, 2, 5, 60]))
    line = rng.integers(0, n_lines, n).astype(np.int32)
    span = int(rng.choice([20, 1000, 1 << 40]))
    start = rng.integers(0, span, n).astype(np.int64)
    dur = rng.integers(0, max(span // 4, 2), n).astype(np.int64)
    dur[rng.random(n) < 0.2] = 0  # instants
    if seed % 5 == 1:  # ties: a few starts and durations only
        start, dur = start % 7, dur % 3
    if seed % 5 == 2:  # calls: each event inside the previous one or after it
        start, dur = _nested(rng, n)
    if seed % 2:  # the usual profile: each line's events in start order
        keep = np.lexsort((start, line))
        line, start, dur = line[keep], start[keep], dur[keep]
    return line, start, dur


def _nested(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    start, dur = np.zeros(n, np.int64), np.zeros(n, np.int64)
    open_: list[tuple[int, int]] = []
    t = 0
    for k in range(n):
        while open_ and (rng.random() < 0.4 or open_[-1][1] - t < 2):
            t = max(t, open_.pop()[1])
        room = open_[-1][1] - t if open_ else 1000
        start[k], dur[k] = t, int(rng.integers(0, max(room, 1)))
        open_.append((t, t + int(dur[k])))
        t += int(rng.integers(0, 2))
    return start, dur


def _depths(line: np.ndarray, start: np.ndarray, dur: np.ndarray) -> list[list[int]]:
    order = lod.line_order(line, start, start + dur)
    return [
        lod.nesting_depth(order, line, start, dur).tolist(),
        lod.nesting_parents(order, line, start, dur).tolist(),
        [str(lod.nesting_depth(order, line, start, dur).dtype)],
    ]


def _positions(line: np.ndarray, start: np.ndarray, dur: np.ndarray) -> list[bytes]:
    order = lod.line_order(line, start, start + dur)
    depth = lod.nesting_depth(order, line, start, dur)
    origin = int(start.min()) if len(start) else 0
    at = positions(line, int(line.max()) + 1 if len(line) else 0, order, depth, start, dur, origin)
    arrays = [getattr(at, f.name) for f in fields(at)]
    return [a.dtype.str.encode() + a.tobytes() for a in arrays]


@pytest.mark.parametrize("seed", range(80))
def test_depths_and_parents_are_the_twins(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events(seed)
    fast, slow = c_and_python(monkeypatch, lambda: _depths(*events), "_lod")
    assert fast == slow


@pytest.mark.parametrize("seed", range(80))
def test_positions_and_levels_are_the_twins(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _events(seed)
    fast, slow = c_and_python(monkeypatch, lambda: _positions(*events), "_lod")
    assert fast == slow


def test_overlapping_events_that_do_not_nest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A staircase of events each overlapping the next (no two nested): each is the next
    one's parent, so the depths climb; an event after all of them ends is back at 0."""
    start = np.array([0, 10, 20, 30, 100], np.int64)
    dur = np.array([15, 15, 15, 15, 5], np.int64)
    line = np.zeros(5, np.int32)
    fast, slow = c_and_python(monkeypatch, lambda: _depths(line, start, dur), "_lod")
    assert fast == slow == [[0, 1, 2, 3, 0], [-1, 0, 1, 2, -1], ["int32"]]


def test_levels_of_ties_and_bits_past_the_doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal durations (the earlier one beats), zero durations, and starts whose XOR is past
    2**53, where the twin's bit length counts the double's rounding up."""
    row = np.array([0, 0, 0, 0, 1, 1, 1, 2], np.int64)
    start = np.array([0, 4, 5, (1 << 54) - 1, 0, 1, 2, 9], np.int64)
    dur = np.array([3, 2, 0, 3, 1, 1, 1, 0], np.int64)
    fast, slow = c_and_python(
        monkeypatch, lambda: lod.detail_levels(row, start, dur).tolist(), "_lod"
    )
    assert fast == slow == lod.detail_levels_numpy(row, start, dur).tolist()
    assert fast[3] == 54  # (2**54 - 1) XOR 0 rounds to 2**54: 55 bits, level 54


def test_an_end_past_int64_is_left_to_the_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    line = np.zeros(3, np.int32)
    start = np.array([0, 1, np.iinfo(np.int64).max - 1], np.int64)
    dur = np.array([5, 2, 9], np.int64)
    fast, slow = c_and_python(monkeypatch, lambda: _depths(line, start, dur), "_lod")
    assert fast == slow


def test_events_out_of_line_order_are_left_to_the_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    line = np.array([1, 0, 0], np.int32)
    start = np.array([0, 5, 1], np.int64)
    dur = np.array([5, 2, 9], np.int64)
    order = np.arange(3, dtype=np.int64)  # not line_order's: the C pass stops
    fast, slow = c_and_python(
        monkeypatch, lambda: lod.nesting_depth(order, line, start, dur).tolist(), "_lod"
    )
    assert fast == slow


def test_the_c_positions_write_an_int64_order_as_an_int32_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above 2**31 events the index's order is int64 (`search.index_dtype`): the C pass
    writes either width, the same events."""
    native = module(monkeypatch, "_lod")
    line, start, dur = _events(11)
    order0 = lod.line_order(line, start, start + dur)
    depth = lod.nesting_depth(order0, line, start, dur)
    n = len(order0)
    written = []
    for kind in (np.int32, np.int64):
        outs = [np.zeros(n, kind), np.zeros(n, np.int64), np.zeros(n, np.int64)]
        outs += [np.zeros(n, np.int32) for _ in range(3)] + [np.zeros(n, np.int8)]
        outs.append(np.zeros(n, np.int64))
        counts = native.positions(order0, line, depth, start, dur, int(start.min()), *outs)
        written.append((counts, outs[0].tolist(), *(a.tobytes() for a in outs[1:])))
    assert written[0] == written[1]
    assert written[0][0][1] > 1  # more than one segment
