"""Flows (arrows between events) of a profile, found once with vectorized joins.

Kinds:
- ``launch``: a host event -> the device events with the same ``correlation_id`` (CUDA
  launches -> kernels/memcpys). Where several host events carry one id (a runtime call inside
  an op that copied it), the deepest one is the source, as it is the actual launch call.
- ``producer``: an event with ``_p``/``_pt`` -> the events with ``_c``/``_ct`` equal to them
  (TensorFlow producer/consumer context; PyTorch forward -> backward after import).

Flows are kept sorted by source event, with a permutation sorting them by destination (and
the destinations in that order, kept so a query gathers nothing over every flow), so the
flows touching any set of events are found with two binary searches per event.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.model.profile import StatColumn
from stepscope.records import record
from stepscope.stats.arrays import unique_many
from stepscope.stats.trace_index.segments import ranges_to_indices, stable_argsort
from stepscope.stats.trace_index.tracks import is_stream_line
from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_UINT

KIND_LAUNCH = 0
KIND_PRODUCER = 1
KIND_NAMES = ("launch", "producer")


@record(frozen=False)
class FlowTable:
    src: np.ndarray  # int64 event index, sorted
    dst: np.ndarray  # int64 event index
    kind: np.ndarray  # int8: KIND_*
    by_dst: np.ndarray  # int64 permutation: dst[by_dst] is sorted
    dst_sorted: np.ndarray  # int64: dst[by_dst]
    by_span: np.ndarray  # int64 permutation: longest flow first (start to start), stable
    span_ns: np.ndarray  # int64: the spans in that order (descending)

    def __len__(self) -> int:
        return len(self.src)

    def touching(self, events: np.ndarray) -> np.ndarray:
        """Flow numbers whose source or destination is in ``events`` (sorted, unique)."""
        if len(self) == 0 or len(events) == 0:
            return np.zeros(0, dtype=np.int64)
        out_lo = np.searchsorted(self.src, events, side="left")
        out_hi = np.searchsorted(self.src, events, side="right")
        in_lo = np.searchsorted(self.dst_sorted, events, side="left")
        in_hi = np.searchsorted(self.dst_sorted, events, side="right")
        found = np.concatenate(
            [ranges_to_indices(out_lo, out_hi), self.by_dst[ranges_to_indices(in_lo, in_hi)]]
        )
        return unique_many(found)


def _numeric(column: StatColumn) -> np.ndarray:
    kind = column.kind
    return column.present & ((kind == KIND_INT) | (kind == KIND_UINT) | (kind == KIND_DOUBLE))


def _match(src_keys: np.ndarray, src_events: np.ndarray, dst_keys: np.ndarray) -> np.ndarray:
    """Per destination key, the source event with an equal key, -1 when none; ``src_keys``
    sorted, first one wins."""
    if len(src_keys) == 0:
        return np.full(len(dst_keys), -1, np.int64)
    pos = np.searchsorted(src_keys, dst_keys)
    np.minimum(pos, len(src_keys) - 1, out=pos)
    missed = src_keys[pos] != dst_keys
    out = src_events[pos]
    out[missed] = -1
    return out


def _found(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs whose source was found (`_match`'s -1 dropped)."""
    hit = src >= 0
    if hit.all():
        return src, dst
    return src[hit], dst[hit]


def _numeric_events(profile: Profile, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The events with a numeric stat ``name`` (ascending) and its values as int64, read
    from the stat's rows: no column over every event (three per key and as_int's fourth,
    about 0.06 s per key at 10M events)."""
    events = profile.stat_events(name)
    column = profile.stat_at(name, events)
    numeric, values = _numeric(column), _ints(column)
    if numeric.all():
        return events, values
    return events[numeric], values[numeric]


def _ints(column: StatColumn, default: int = -1) -> np.ndarray:
    """``column.as_int(default)``; the column's own values when all are integers (a column
    read here and dropped: not copied, 24 MB less to fault in per 3M values)."""
    kind = column.kind
    if column.present.all() and bool(np.all((kind == KIND_INT) | (kind == KIND_UINT))):
        return column.value
    return column.as_int(default)


def _launch_flows(profile: Profile, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    events, value = _numeric_events(profile, "correlation_id")
    if not len(events):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    is_device_plane = np.array([p.is_device for p in profile.planes], dtype=bool)
    stream = np.array(
        [profile.planes[line.plane].is_device and is_stream_line(line) for line in profile.lines],
        dtype=bool,
    )
    line = profile.line[events]
    on_device = is_device_plane[profile.line_plane[line]]
    host, host_value = events[~on_device], value[~on_device]
    device = on_device & stream[line]
    # Sort host events by (id, deeper first) and keep the first of each id.
    order = np.lexsort((-depth[host], host_value))
    host, host_value = host[order], host_value[order]
    keep = np.ones(len(host), dtype=bool)
    keep[1:] = host_value[1:] != host_value[:-1]
    src = _match(host_value[keep], host[keep], value[device])
    return _found(src, events[device])  # destinations ascending


def _producer_flows(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(source, destination) pairs, destinations ascending and distinct (a consumer has one
    context)."""
    producers, p_id = _numeric_events(profile, "_p")
    consumers, c_id = _numeric_events(profile, "_c")
    if len(producers) == 0 or len(consumers) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    p_type = _ints(profile.stat_at("_pt", producers), 0)
    c_type = _ints(profile.stat_at("_ct", consumers), 0)
    # A context is a (type, id) pair and a file has a handful of types (TensorFlow: 2 and
    # 15), so the join runs per type on the ids alone: one sort of that type's producers,
    # a binary search per consumer. No sort of the (type, id) pairs of both sides together
    # (`np.unique(axis=0)` hashed rows: 5.4 s of a 6.7 s index build at 10M events). Each
    # consumer's source is written at its place, so the pairs come out in consumer order.
    src = np.full(len(consumers), -1, np.int64)
    for kind in _distinct_small(p_type):
        mine = np.flatnonzero(p_type == kind)
        theirs = np.flatnonzero(c_type == kind)
        if not len(theirs):
            continue
        ids, events = p_id[mine], producers[mine]
        if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            order = np.argsort(ids, kind="stable")  # equal ids: the first event wins
            ids, events = ids[order], events[order]
        src[theirs] = _match(ids, events, c_id[theirs])
    return _found(src, consumers)


def _distinct_small(values: np.ndarray) -> np.ndarray:
    """The distinct values of an array that holds few of them (context types), ascending:
    by a count per value when they are small non-negative ints, else sorted."""
    if len(values) and int(values.min()) >= 0 and int(values.max()) < 1 << 16:
        return np.flatnonzero(np.bincount(values))
    return np.unique(values)


def _members(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_set)`` for a sorted ``sorted_set``, by binary search."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[pos] == values


def _count_at_least(descending: np.ndarray, value: float) -> int:
    """How many leading values of ``descending`` are at least ``value``: a bisection reading
    log2(n) values (``np.searchsorted(-descending, ...)`` negated the whole column first,
    10-100 ms per window for the 3M flows of a 10M-event trace)."""
    lo, hi = 0, len(descending)
    while lo < hi:
        mid = (lo + hi) // 2
        if descending[mid] >= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def window_flows(
    flows: FlowTable, start_ns: np.ndarray, events: np.ndarray, bucket_ns: float, cap: int
) -> tuple[np.ndarray, int]:
    """The flows a window can show: those touching its ``events`` (sorted) whose ends start
    at least one pixel (``bucket_ns``) apart, at most ``cap`` of them (the longest; ties by
    flow number), ascending; and how many there were before the cap.

    An arrow shorter than a pixel lies under its events, so a zoomed-out view leaves it out:
    a full view of a real TensorFlow trace touches a flow per event it draws (190k at 10M
    events), and finding and sending them all cost more than the view itself. Zoomed out, the
    flows long enough are few and are read from the longest-first order, each checked
    against the window's events; zoomed in, the window's events are few and their flows are
    found by search. Both give the same answer. A bucket under 1 ns keeps every flow.
    """
    bucket = bucket_ns if bucket_ns >= 1 else 0.0
    n_long = _count_at_least(flows.span_ns, bucket)  # a prefix of the longest-first order
    if n_long <= 4 * len(events):
        cand = flows.by_span[:n_long]
        hit = _members(flows.src[cand], events) | _members(flows.dst[cand], events)
        found = cand[hit]  # longest first
    else:
        found = flows.touching(events)
        span = np.abs(start_ns[flows.dst[found]] - start_ns[flows.src[found]])
        seen = span >= bucket
        found, span = found[seen], span[seen]
        if len(found) > cap:
            found = found[np.argsort(-span, kind="stable")]
    total = len(found)
    return np.sort(found[:cap]), total


def build_flows(profile: Profile, depth: np.ndarray) -> FlowTable:
    parts = [
        (*_launch_flows(profile, depth), KIND_LAUNCH),
        (*_producer_flows(profile), KIND_PRODUCER),
    ]
    parts = [(s, d, k) for s, d, k in parts if len(s)]
    src = _joined([s for s, _, _ in parts], np.int64)
    dst = _joined([d for _, d, _ in parts], np.int64)
    kind = _joined([np.full(len(s), k, np.int8) for s, _, k in parts], np.int8)
    keep = src != dst
    if not keep.all():
        src, dst, kind = src[keep], dst[keep], kind[keep]
    # Ordered by (source, destination), ties in part order: each part's destinations
    # ascend, so a stable sort by destination (a merge of the parts' runs) and then one by
    # source give what `np.lexsort((dst, src))` gives, at a third of its cost.
    if len(parts) > 1:
        by_d = np.argsort(dst, kind="stable")
        src, dst, kind = src[by_d], dst[by_d], kind[by_d]
    dst_sorted = dst
    order = np.argsort(src, kind="stable")
    src, dst, kind = src[order], dst[order], kind[order]
    if len(dst_sorted) < 2 or bool(np.all(dst_sorted[1:] > dst_sorted[:-1])):
        # distinct destinations: the flow now at each destination's place is the only one
        by_dst = np.empty(len(order), np.int64)
        by_dst[order] = np.arange(len(order), dtype=np.int64)
    else:
        by_dst = stable_argsort(dst).astype(np.int64)
        dst_sorted = dst[by_dst]
    span = profile.start_ns[dst]
    span -= profile.start_ns[src]
    np.abs(span, out=span)
    by_span = _longest_first(span)
    return FlowTable(src, dst, kind, by_dst, dst_sorted, by_span, span[by_span])


def _joined(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    """The arrays one after another, as ``dtype`` (one alone is not copied)."""
    if len(arrays) == 1:
        return arrays[0].astype(dtype, copy=False)
    return np.concatenate([a.astype(dtype, copy=False) for a in arrays] or [np.zeros(0, dtype)])


def _longest_first(span: np.ndarray) -> np.ndarray:
    """``np.argsort(-span, kind="stable")`` for non-negative spans, as int64: a stable sort
    of ``max - span`` by its 16-bit digits (NumPy radix-sorts those in linear time), on
    32-bit keys where they fit (a 10M-event trace's flows span at most milliseconds)."""
    if not len(span):
        return np.zeros(0, np.int64)
    top = int(span.max())
    if top >= 1 << 32:
        return stable_argsort(top - span).astype(np.int64)
    key = np.subtract(top, span, dtype=np.int64).astype(np.uint32)
    order = np.argsort(key.astype(np.uint16), kind="stable")  # the low digit (truncated)
    if top >> 16:
        key >>= 16
        order = order[np.argsort(key.astype(np.uint16)[order], kind="stable")]
    return order.astype(np.int64, copy=False)
