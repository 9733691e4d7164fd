"""Stat values as Arrow columns: the ``stats`` table (long form) and ``events.trace_args``.

A profile's stats are rows (key, kind, value) in the event table's CSR layout (the stats of
event i are rows ``stat_start[i]:stat_start[i+1]``), plus the stats of each event's metadata,
shared by every event of that metadata. Both are turned into text, integer and float columns
with vectorized Arrow kernels: no Python object per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stepscope.sql import arrow
from stepscope.xspace.wire import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT,
    KIND_STR,
    KIND_UINT,
    row_owners,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.model import Profile

COLUMNS = {
    "host": "the host (profile file) of the event",
    "event_id": "the event (`events.event_id`)",
    "name": "the stat's name (`correlation_id`, `kernel_details`, `step_num`, Kineto args...)",
    "source": "`event` (the event's own stat) or `metadata` (its metadata's, shared by every "
    "event of the same name)",
    "value": "the value as text (every kind)",
    "int_value": "the value when an integer, else NULL",
    "float_value": "the value when a number (integers too, as DOUBLE), else NULL",
    "str_value": "the value when text, else NULL",
}


def value_columns(profile: Profile, kind: np.ndarray, value: np.ndarray) -> dict[str, pa.Array]:
    """``value``, ``int_value``, ``float_value``, ``str_value`` of stat rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_int = kind == KIND_INT
    is_uint = kind == KIND_UINT
    is_double = kind == KIND_DOUBLE
    is_str = (kind == KIND_STR) | (kind == KIND_BYTES)
    integer = is_int | is_uint
    floats = value.view(np.float64)
    as_float = np.where(is_double, floats, value.astype(np.float64))
    unsigned = value.view(np.uint64).astype(np.float64)
    as_float = np.where(is_uint, unsigned, as_float)
    texts_of = arrow.strings(profile)
    str_ids = np.where(is_str, value, 0).astype(np.int32)
    str_value = arrow.text(str_ids, texts_of, is_str)
    text = pc.cast(arrow.numbers(value), pa.string())
    if is_uint.any():
        unsigned_text = pc.cast(arrow.numbers(value.view(np.uint64)), pa.string())
        text = pc.if_else(arrow.numbers(is_uint), unsigned_text, text)
    if is_double.any():
        double_text = pc.cast(arrow.numbers(floats), pa.string())
        text = pc.if_else(arrow.numbers(is_double), double_text, text)
    if is_str.any():
        text = pc.if_else(arrow.numbers(is_str), str_value.cast(pa.string()), text)
    known = integer | is_double | is_str
    if not known.all():
        text = pc.if_else(arrow.numbers(known), text, arrow.nulls(len(value), "text"))
    return {
        "value": text,
        "int_value": arrow.numbers(value, integer),
        "float_value": arrow.numbers(as_float, integer | is_double),
        "str_value": str_value,
    }


def event_stat_rows(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(every event stat row, the event owning it)."""
    rows = np.arange(len(profile.stats), dtype=np.int32 if len(profile.stats) < 2**31 else np.int64)
    return rows, row_owners(profile.stat_start, rows).astype(np.int64)


def metadata_stat_rows(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(metadata stat rows repeated once per event of their metadata, those events)."""
    n_meta_rows = len(profile.meta_stats)
    if not n_meta_rows or not profile.n_events:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    owner = np.searchsorted(profile.meta_stat_start, np.arange(n_meta_rows), side="right") - 1
    by_meta = np.argsort(profile.meta, kind="stable")
    counts = np.bincount(profile.meta, minlength=len(profile.meta_id))
    first = np.cumsum(counts) - counts
    sizes = counts[owner]
    total = int(sizes.sum())
    rows = np.repeat(np.arange(n_meta_rows), sizes)
    within = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    events = by_meta[np.repeat(first[owner], sizes) + within]
    return rows, events.astype(np.int64)


def stats_table(host: str, profile: Profile) -> pa.Table:
    import pyarrow as pa

    ev_rows, ev_events = event_stat_rows(profile)
    md_rows, md_events = metadata_stat_rows(profile)
    parts = []
    for source, table, rows, events in (
        ("event", profile.stats, ev_rows, ev_events),
        ("metadata", profile.meta_stats, md_rows, md_events),
    ):
        n = len(rows)
        columns = {
            "host": arrow.constant(host, n),
            "event_id": arrow.numbers(events),
            "name": arrow.text(table.key[rows], arrow.strings(profile)),
            "source": arrow.constant(source, n),
            **value_columns(profile, table.kind[rows], table.value[rows]),
        }
        parts.append(arrow.table(columns))
    return pa.concat_tables(parts)


def trace_args(profile: Profile, skip: frozenset[str]) -> pa.Array:
    """Per event, its own stats as ``key=value`` joined by ``,`` (the stats named in ``skip``,
    which have columns of their own, left out); NULL for an event with none."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = profile.n_events
    stats = profile.stats
    keep = np.ones(len(stats), dtype=bool)
    for name in skip:
        key = profile.strings.id_of(name)
        if key >= 0:
            keep &= stats.key != key
    rows, owner = event_stat_rows(profile)
    rows, owner = rows[keep], owner[keep]
    if not len(rows):
        return arrow.nulls(n, "text")
    keys = arrow.text(stats.key[rows], arrow.strings(profile)).cast(pa.string())
    values = value_columns(profile, stats.kind[rows], stats.value[rows])["value"]
    empty = arrow.constant("", len(rows)).cast(pa.string())
    # separators as arrays: a Python str becomes a pa.scalar, which imports pandas
    equals = arrow.constant("=", len(rows)).cast(pa.string())
    pairs = pc.binary_join_element_wise(keys, pc.coalesce(values, empty), equals)
    counts = np.bincount(owner, minlength=n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    lists = pa.LargeListArray.from_arrays(arrow.numbers(offsets), pairs)
    joined = pc.binary_join(lists, arrow.constant(",", n).cast(pa.string()))
    return pc.if_else(arrow.numbers(counts > 0), joined, arrow.nulls(n, "text"))
