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
    found = _positions_native(line, n_lines, order0, depth, start_ns, dur_ns, origin_ns)
    if found is not None:
        return found
    return positions_numpy(line, n_lines, order0, depth, start_ns, dur_ns, origin_ns)


def _positions_native(
    line: np.ndarray,
    n_lines: int,
    order0: np.ndarray,
    depth: np.ndarray,
    start_ns: np.ndarray,
    dur_ns: np.ndarray,
    origin_ns: int,
) -> Positions | None:
    """`positions` by the C pass (`_lod.c`: counting sorts by depth within each line and by
    level within each row, the levels and the segments' running ends in the same walk, no
    full-size NumPy temporary), or None where it is not built, switched off, the columns are
    not of its types, or it stops (events out of line order, a time past int64): the twin
    answers then. The same arrays, byte for byte."""
    native = accelerators.get("_lod")
    n = len(order0)
    if native is None or n != len(line) or n != len(depth) or n >= 1 << 31:
        return None
    wanted: list[tuple[np.ndarray, type[np.signedinteger]]] = [(order0, np.int64)]
    wanted += [(line, np.int32), (depth, np.int32), (start_ns, np.int64), (dur_ns, np.int64)]
    if any(a.dtype != kind for a, kind in wanted) or not -(1 << 63) <= origin_ns < 1 << 63:
        return None
    order = np.empty(n, dtype=index_dtype(n))
    start, end_max = np.empty(n, np.int64), np.empty(n, np.int64)
    # rows and segments: at most one a position; the pages never written are never mapped
    row_line, row_depth = np.empty(n, np.int32), np.empty(n, np.int32)
    seg_row, seg_level, seg_lo = np.empty(n, np.int32), np.empty(n, np.int8), np.empty(n, np.int64)
    inputs = (np.ascontiguousarray(a) for a, _ in wanted)
    outputs = (order, start, end_max, row_line, row_depth, seg_row, seg_level, seg_lo)
    counts = native.positions(*inputs, origin_ns, *outputs) if n else (0, 0)
    if counts is None:
        return None
    rows, segs = counts
    row_line, row_depth = row_line[:rows].copy(), row_depth[:rows].copy()
    line_depths = np.zeros(n_lines, dtype=np.int32)
    np.maximum.at(line_depths, row_line, row_depth + 1)
    return Positions(
        line_depths=line_depths,
        row_line=row_line,
        row_depth=row_depth,
        order=order,
        start_ns=start,
        end_max_ns=end_max,
        seg_row=seg_row[:segs].copy(),
        seg_level=seg_level[:segs].copy(),
        seg_lo=seg_lo[:segs].copy(),
        seg_hi=np.append(seg_lo[1:segs], n).astype(np.int64),
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
    line_depths = np.zeros(n_lines, dtype=np.int32)
    np.maximum.at(line_depths, row_line, row_depth + 1)
    return Positions(
        line_depths=line_depths,
        row_line=row_line,
        row_depth=row_depth,
        order=order,
        start_ns=start_ns[order],
        end_max_ns=segment_running_max(end, seg_starts),
        seg_row=seg_row[seg_starts].astype(np.int32),
        seg_level=seg_level[seg_starts].astype(np.int8),
        seg_lo=seg_starts.astype(np.int64),
        seg_hi=np.append(seg_starts[1:], n).astype(np.int64),
    )
