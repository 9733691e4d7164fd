"""The host op table's sums per event name: occurrences, total, self and eager self time, and
the idle time of the threads (`stepscope.stats.op_metrics`).

The sums are taken per name string id, not per event: the op table's rows group names
afterwards (several ids can name one op), and no per-event array of self times, keys or rows
is made. In C (`_sweeps.op_sums`) one pass over the events in trace order reads the columns
in place; an event's self time is added to its own name's sum as its duration and taken off
its parent's, which sums to the same as the duration less its direct children's. The NumPy
version (no C build, or events out of trace order) computes each event's self time first.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile, StatColumn
from stepscope.records import record
from stepscope.stats import native
from stepscope.stats.nesting import events_self_time
from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_UINT

_SLICE = 1 << 20  # events per slice where a per-event column is read by slices
# stat_start, the stats' key, kind and value, the event names: as `_sweeps.stat_sums` reads them
_STAT_DTYPES = tuple(np.dtype(t) for t in (np.int64, np.int32, np.int8, np.int64, np.int32))


@record
class KeySums:
    """Per name string id (int64): the sums over the op events of that name."""

    count: np.ndarray
    total_ns: np.ndarray
    self_ns: np.ndarray
    eager_self_ns: np.ndarray
    idle_ns: int  # per thread, first op start to last op end less the ops' self time


def sum_by_row(
    row: np.ndarray, rows: int, values: np.ndarray, take: np.ndarray | None = None
) -> np.ndarray:
    """Per row, the int64 sum of ``values`` (``values[take]`` when given) of its events. In C
    the values are read in place: a float64 ``np.bincount`` would gather and convert them."""
    sweeps = native.sweeps
    if sweeps is not None and values.dtype == np.int64:
        out = np.zeros(rows, dtype=np.int64)
        picks = np.zeros(0, np.int64) if take is None else np.ascontiguousarray(take, np.int64)
        columns = (np.ascontiguousarray(row, np.int64), np.ascontiguousarray(values))
        sweeps.sum_by_row(*columns, picks, out)
        return out
    weights = values if take is None else values[take]
    return np.bincount(row, weights=weights, minlength=rows).round().astype(np.int64)


def _line_bounds(n_lines: int) -> tuple[np.ndarray, np.ndarray]:
    """Initial (first start, last end) per line: no op seen yet."""
    return (
        np.full(n_lines, np.iinfo(np.int64).max, dtype=np.int64),
        np.full(n_lines, np.iinfo(np.int64).min, dtype=np.int64),
    )


def _idle(first: np.ndarray, last: np.ndarray, own_ns: int) -> int:
    used = last >= first
    return max(int((last[used] - first[used]).sum()) - own_ns, 0)


def host_key_sums(profile: Profile, events: np.ndarray, eager: np.ndarray) -> KeySums:
    """Sums per name id over ``events`` (ascending host op events, nested among themselves);
    ``eager``: the positions in ``events`` of the eagerly run ones."""
    n_keys, n_lines = len(profile.strings), len(profile.lines)
    sweeps = native.sweeps
    columns = (profile.line, profile.start_ns, profile.dur_ns, profile.name)
    if sweeps is not None and tuple(c.dtype for c in columns) == (
        np.int32,
        np.int64,
        np.int64,
        np.int32,
    ):
        count, total, own, eager_own = (np.zeros(n_keys, dtype=np.int64) for _ in range(4))
        first, last = _line_bounds(n_lines)
        flags = np.zeros(len(events) if len(eager) else 0, dtype=np.uint8)
        flags[eager] = 1
        picks = np.ascontiguousarray(events, np.int64)
        contiguous = (np.ascontiguousarray(c) for c in columns)
        if sweeps.op_sums(picks, *contiguous, flags, count, total, own, eager_own, first, last):
            return KeySums(count, total, own, eager_own, _idle(first, last, int(own.sum())))
    return _numpy_key_sums(profile, events, eager, n_keys, n_lines)


def _numpy_key_sums(
    profile: Profile, events: np.ndarray, eager: np.ndarray, n_keys: int, n_lines: int
) -> KeySums:
    own = events_self_time(events, profile.line, profile.start_ns, profile.end_ns)
    line = profile.line[events]
    first, last = _line_bounds(n_lines)
    np.minimum.at(first, line, profile.start_ns[events])
    np.maximum.at(last, line, profile.end_ns[events])
    del line
    profile.release_end_ns()  # not read below: 8 B/event less at the sums' peak
    key = profile.name[events]
    return KeySums(
        np.bincount(key, minlength=n_keys).astype(np.int64),
        sum_by_row(key, n_keys, profile.dur_ns, events),
        sum_by_row(key, n_keys, own),
        # only the events that have it (usually none: no pass over every event's key)
        sum_by_row(key[eager], n_keys, own[eager]),
        _idle(first, last, int(own.sum())),
    )


def flops_by_row(
    profile: Profile, events: np.ndarray, row_of_name: np.ndarray, rows: int
) -> np.ndarray:
    """Per row, the float64 sum of the ``flops`` stat of the ``events`` that carry it, in
    event order (as one bincount adds them), by slices: no gathered names, rows or float
    values of every such event at once (every second op has one in real profiles). In C
    the events' stat rows are read in place (no positions, rows or owners of the stat)."""
    out = np.zeros(rows)
    key = profile.strings.id_of("flops")
    sweeps = native.sweeps
    if key < 0:
        return out
    stats = profile.stats
    columns = (profile.stat_start, stats.key, stats.kind, stats.value, profile.name)
    if (
        sweeps is not None
        and tuple(c.dtype for c in columns) == _STAT_DTYPES
        and not profile.in_metadata("flops")
    ):
        params = np.array([key, KIND_INT, KIND_UINT, KIND_DOUBLE], dtype=np.int64)
        picks = np.ascontiguousarray(events, np.int64)
        contiguous = (np.ascontiguousarray(c) for c in columns)
        sweeps.stat_sums(picks, *contiguous, np.ascontiguousarray(row_of_name), params, out)
        return out
    with_flops, stat = profile.stat_among("flops", events)
    for a in range(0, len(with_flops), _SLICE):
        part = slice(a, a + _SLICE)
        flops = StatColumn(stat.present[part], stat.kind[part], stat.value[part]).as_float()
        row = row_of_name[profile.name[events[with_flops[part]]]]
        np.add.at(out, row, np.nan_to_num(flops, copy=False))
    return out
