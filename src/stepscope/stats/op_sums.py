"""The host op table's sums per event name: occurrences, total, self and eager self time, and
the idle time of the threads (`stepscope.stats.op_metrics`).

The sums are taken per name string id, not per event: the op table's rows group names
afterwards (several ids can name one op), and no per-event array of keys or rows is made.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile, StatColumn
from stepscope.records import record
from stepscope.stats.nesting import events_self_time

_SLICE = 1 << 20  # events per slice where a per-event column is read by slices


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
    """Per row, the int64 sum of ``values`` (``values[take]`` when given) of its events."""
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
    values of every such event at once (every second op has one in real profiles)."""
    out = np.zeros(rows)
    if profile.strings.id_of("flops") < 0:
        return out
    with_flops, stat = profile.stat_among("flops", events)
    for a in range(0, len(with_flops), _SLICE):
        part = slice(a, a + _SLICE)
        flops = StatColumn(stat.present[part], stat.kind[part], stat.value[part]).as_float()
        row = row_of_name[profile.name[events[with_flops[part]]]]
        np.add.at(out, row, np.nan_to_num(flops, copy=False))
    return out
