"""The trace index's positions: events sorted by (row, level, start), in segments.

A *row* is one (line, depth); rows are numbered by (line, depth), and a line with events has
rows 0 .. its deepest nesting (a depth d > 0 has its parent at d - 1). Within a row the events
keep `lod.line_order`'s start order; each (row, level) run is a segment. `positions` builds it
by the C pass (`_lod.c`, counting sorts) where it is built, else with NumPy (`positions_numpy`,
its twin: the same arrays, byte for byte; decision 1068).
"""

from __future__ import annotations

import numpy as np

from stepscope import accelerators
from stepscope.records import record
from stepscope.stats.trace_index.lod import detail_levels, segment_running_max
from stepscope.stats.trace_index.search import index_dtype
from stepscope.stats.trace_index.segments import group_starts, stable_argsort


@record
class Positions:
    line_depths: np.ndarray  # int32 per line: its rows (deepest nesting + 1, 0 if empty)
    row_line: np.ndarray  # int32 per row
    row_depth: np.ndarray  # int32 per row
    order: np.ndarray  # int32/int64: the event at each position
    start_ns: np.ndarray  # int64 per position
    end_max_ns: np.ndarray  # int64 per position: running maximum of the ends in its segment
    seg_row: np.ndarray  # int32 per segment
    seg_level: np.ndarray  # int8
    seg_lo: np.ndarray  # int64: first position
    seg_hi: np.ndarray  # int64: one past the last


def positions(
    line: np.ndarray,
    n_lines: int,
    order0: np.ndarray | None,
    depth: np.ndarray,
    start_ns: np.ndarray,
    dur_ns: np.ndarray,
    origin_ns: int,
) -> Positions:
    """The positions of events (profile ``line``, ``start_ns``, ``dur_ns``) in `line_order`'s
    ``order0`` (None: already in that order) with nesting ``depth``; levels count time from
    ``origin_ns``."""
    if order0 is None:
        order0 = np.arange(len(depth), dtype=np.int64)
    # The C pass (`_lod.c`: counting sorts by depth within each line and by level within each
    # row, the levels and the segments' running ends in the same walk, no full-size NumPy
    # temporary) where it is built and the columns are of its types; it hands back None
    # (events out of line order, a time past int64) and the twin answers, the same bytes.
    native = accelerators.get("_lod")
    n = len(order0)
    wanted: list[tuple[np.ndarray, type[np.signedinteger]]] = [(order0, np.int64)]
    wanted += [(line, np.int32), (depth, np.int32), (start_ns, np.int64), (dur_ns, np.int64)]
    if (
        native is None
        or n >= 1 << 31
        or any(len(a) != n or a.dtype != kind for a, kind in wanted)
        or not -(1 << 63) <= origin_ns < 1 << 63
    ):
        return positions_numpy(line, n_lines, order0, depth, start_ns, dur_ns, origin_ns)
    order = np.empty(n, dtype=index_dtype(n))
    start, end_max = np.empty(n, np.int64), np.empty(n, np.int64)
    # rows and segments: at most one a position; the pages never written are never mapped
    row_line, row_depth = np.empty(n, np.int32), np.empty(n, np.int32)
    seg_row, seg_level, seg_lo = np.empty(n, np.int32), np.empty(n, np.int8), np.empty(n, np.int64)
    inputs = (np.ascontiguousarray(a) for a, _ in wanted)
    outputs = (order, start, end_max, row_line, row_depth, seg_row, seg_level, seg_lo)
    counts = native.positions(*inputs, origin_ns, *outputs) if n else (0, 0)
    if counts is None:
        return positions_numpy(line, n_lines, order0, depth, start_ns, dur_ns, origin_ns)
    rows, segs = counts
    return _laid_out(
        n_lines,
        (row_line[:rows].copy(), row_depth[:rows].copy()),
        (order, start, end_max),
        (seg_row[:segs].copy(), seg_level[:segs].copy(), seg_lo[:segs].copy()),
    )


def _laid_out(
    n_lines: int,
    rows: tuple[np.ndarray, np.ndarray],
    at: tuple[np.ndarray, np.ndarray, np.ndarray],
    segments: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> Positions:
    """The `Positions` of rows (line, depth), positions (order, start, running end) and
    segments (row, level, first position) of the final dtypes."""
    row_line, row_depth = rows
    seg_lo = segments[2]
    line_depths = np.zeros(n_lines, dtype=np.int32)
    np.maximum.at(line_depths, row_line, row_depth + 1)
    return Positions(
        line_depths=line_depths,
        row_line=row_line,
        row_depth=row_depth,
        order=at[0],
        start_ns=at[1],
        end_max_ns=at[2],
        seg_row=segments[0],
        seg_level=segments[1],
        seg_lo=seg_lo,
        seg_hi=np.append(seg_lo[1:], len(at[0])).astype(np.int64),
    )


def positions_numpy(
    line: np.ndarray,
    n_lines: int,
    order0: np.ndarray,
    depth: np.ndarray,
    start_ns: np.ndarray,
    dur_ns: np.ndarray,
    origin_ns: int,
) -> Positions:
    """`positions` by NumPy sorts and gathers."""
    n = len(order0)
    max_depth = int(depth.max()) + 1 if n else 1
    row_key = line[order0].astype(np.int64) * max_depth + depth[order0]
    perm = stable_argsort(row_key)
    by_row, row_key = order0[perm], row_key[perm]
    del perm
    row_starts = group_starts(row_key)
    keys = row_key[row_starts]
    row_line, row_depth = (keys // max_depth).astype(np.int32), (keys % max_depth).astype(np.int32)
    row_of_pos = np.repeat(np.arange(len(row_starts)), np.diff(np.append(row_starts, n)))
    del row_key

    level = detail_levels(row_of_pos, start_ns[by_row] - origin_ns, dur_ns[by_row])
    final = stable_argsort(row_of_pos * 64 + level)
    order = by_row[final].astype(index_dtype(n))
    seg_row, seg_level = row_of_pos[final], level[final]
    del by_row, final, row_of_pos, level
    seg_starts = group_starts(seg_row, seg_level)
    end = start_ns[order] + np.maximum(dur_ns[order], 1)
    return _laid_out(
        n_lines,
        (row_line, row_depth),
        (order, start_ns[order], segment_running_max(end, seg_starts)),
        (
            seg_row[seg_starts].astype(np.int32),
            seg_level[seg_starts].astype(np.int8),
            seg_starts.astype(np.int64),
        ),
    )
