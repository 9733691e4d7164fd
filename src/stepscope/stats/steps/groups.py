"""Event groups, as XProf forms them: every event reachable from a step root joins its step.

Reachability follows (a) nesting on a thread, (b) producer/consumer context stats
(``_pt``/``_p`` -> ``_ct``/``_c``), (c) an ``ExecutorState::Process`` to the
``IteratorGetNextOp::DoCompute`` sharing its ``id``/``iter_num``, (d) a host launch to the
device events sharing its ``correlation_id``. A ``ThreadpoolListener::StartRegion`` is a
consumer like any other but, as in XProf (checked against its step breakdowns of the
TensorFlow fixtures), it does not adopt the events that follow it up to ``StopRegion``.
tf.data's prefetch produce/consume pairs (``element_id``) link no group: XProf's step
grouping (``GroupTfEvents``) never connects them (only its tf.data tool does), so the work
of a pipeline's background threads is no step's (decision 265). Roots are the events with
an ``_r`` stat (highest level first, then earliest) and the step markers the caller adds; a
root reached from an earlier root does not start a group.

Vectorized as a min-label propagation: root k starts with label k and labels flow down the
nesting forest (level by level) and along the other edges until nothing changes. An event's
final label is the first root that reaches it, which is what XProf's root-by-root
breadth-first search gives.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct, member
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import on_device_plane
from stepscope.stats.nesting import Forest
from stepscope.vocab import tensorflow as tf_names

_TF_DATA_FUNCTIONS = (
    "InstantiatedCapturedFunction::Run",
    "InstantiatedCapturedFunction::RunAsync",
    "InstantiatedCapturedFunction::RunInstantiated",
    "InstantiatedCapturedFunction::RunWithBorrowedArgs",
)
_BIG_CONTEXT = 64  # XProf skips context ids with this many producers and consumers
Edges = tuple[np.ndarray, np.ndarray]


@record
class Groups:
    """The group of each event and the root event of each group."""

    label: np.ndarray  # int64 per event: group id, -1 when no root reaches it
    root: np.ndarray  # int64: event index of each group's root, in group order


def _ids(profile: Profile, names: tuple[str, ...]) -> np.ndarray:
    found = [profile.strings.id_of(n) for n in names]
    return np.array([i for i in found if i >= 0], dtype=np.int32)


def _events_named(profile: Profile, names: tuple[str, ...]) -> np.ndarray:
    ids = _ids(profile, names)
    return np.flatnonzero(np.isin(profile.name, ids)) if ids.size else np.zeros(0, np.int64)


def _pair_codes(*pairs: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """Dense codes for (a, b) int64 pairs, consistent across the given arrays."""
    sizes = [len(a) for a, _ in pairs]
    first = np.concatenate([a for a, _ in pairs]).astype(np.int64)
    second = np.concatenate([b for _, b in pairs]).astype(np.int64)
    order = np.lexsort((second, first))
    a, b = first[order], second[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    codes = np.empty(len(a), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return np.split(codes, np.cumsum(sizes)[:-1])


def _join(
    src_key: np.ndarray, src: np.ndarray, dst_key: np.ndarray, dst: np.ndarray, limit: int = 0
) -> Edges:
    """All (src, dst) pairs with equal keys; with ``limit``, keys having at least that many
    sources and destinations are skipped."""
    if not len(src_key) or not len(dst_key):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(src_key, kind="stable")
    keys = src_key[order]
    lo = np.searchsorted(keys, dst_key, "left")
    counts = np.searchsorted(keys, dst_key, "right") - lo
    if limit:
        uniq, inverse, dst_counts = np.unique(dst_key, return_inverse=True, return_counts=True)
        del uniq
        counts[(counts >= limit) & (dst_counts[inverse.reshape(-1)] >= limit)] = 0
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    offsets = np.repeat(lo - first, counts) + np.arange(total)
    return src[order[offsets]], np.repeat(dst, counts)


def _pair_order(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """An order of (first, second) pairs by first, then second; equal pairs in any order.
    Context ids (second) are 64-bit values, so a stable sort of them (a merge sort: 0.25 s
    at 2.5M pairs, `np.lexsort` more) costs four times NumPy's quicksort; the pair types
    (first) are few and small, sorted after by a stable radix sort."""
    order = np.argsort(second)
    lo = int(first.min())
    if int(first.max()) - lo < 1 << 15:
        return order[np.argsort((first[order] - lo).astype(np.int16), kind="stable")]
    return order[np.argsort(first[order], kind="stable")]


def _join_pairs(
    src_pair: tuple[np.ndarray, np.ndarray],
    src: np.ndarray,
    dst_pair: tuple[np.ndarray, np.ndarray],
    dst: np.ndarray,
    limit: int = 0,
) -> Edges:
    """`_join` on (a, b) pair keys, from one sort of both sides' pairs: the sort that
    numbers the pairs also groups the sources by pair, so the join needs no second sort or
    search, and the pairs' counts per key are counted, not found again (`_pair_codes` then
    `_join` sorted and searched three times). The edges come in no particular order: the
    labels they carry are minima, the same in any order."""
    n_src = len(src_pair[0])
    if not n_src or not len(dst_pair[0]):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = np.concatenate((src_pair[0], dst_pair[0])).astype(np.int64)
    second = np.concatenate((src_pair[1], dst_pair[1])).astype(np.int64)
    order = _pair_order(first, second)
    a, b = first[order], second[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    code_sorted = np.cumsum(new) - 1
    from_src = order < n_src
    src_by_code = order[from_src]  # sources grouped by key, in their given order within one
    codes = np.empty(len(a), dtype=np.int64)
    codes[order] = code_sorted
    dst_code = codes[n_src:]
    n_codes = int(code_sorted[-1]) + 1
    src_count = np.bincount(code_sorted[from_src], minlength=n_codes)
    lo = (np.cumsum(src_count) - src_count)[dst_code]
    counts = src_count[dst_code]
    if limit:
        dst_count = np.bincount(dst_code, minlength=n_codes)
        counts[((src_count >= limit) & (dst_count >= limit))[dst_code]] = 0
    total = int(counts.sum())
    offsets = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
    return src[src_by_code[offsets]], np.repeat(dst, counts)


def _with_both(profile: Profile, first: str, second: str) -> np.ndarray:
    """Events that have both stats, ascending: the sorted lists intersected by binary
    searches (``np.intersect1d`` sorts them again together)."""
    a, b = profile.stat_events(first), profile.stat_events(second)
    if not len(a) or not len(b):
        return np.zeros(0, np.int64)
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    return a[b[at] == a]


def _context_edges(profile: Profile) -> Edges:
    # the stats of the events that have them (no dense column per stat over every event)
    producers = _with_both(profile, "_pt", "_p")
    consumers = _with_both(profile, "_ct", "_c")
    return _join_pairs(
        (profile.stat_at("_pt", producers).as_int(), profile.stat_at("_p", producers).as_int()),
        producers,
        (profile.stat_at("_ct", consumers).as_int(), profile.stat_at("_c", consumers).as_int()),
        consumers,
        limit=_BIG_CONTEXT,
    )


def _executor_edges(profile: Profile) -> Edges:
    """ExecutorState::Process -> IteratorGetNext*Op::DoCompute with the same id and iter_num."""
    parents = _events_named(profile, (tf_names.EXECUTOR_PROCESS,))
    children = _events_named(profile, tf_names.GET_NEXT_KERNELS)
    p_id, p_iter = profile.stat_at("id", parents), profile.stat_at("iter_num", parents)
    c_id, c_iter = profile.stat_at("id", children), profile.stat_at("iter_num", children)
    p_ok, c_ok = p_id.present & p_iter.present, c_id.present & c_iter.present
    parents, children = parents[p_ok], children[c_ok]
    if not parents.size or not children.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    p_code, c_code = _pair_codes(
        (p_id.as_int()[p_ok], p_iter.as_int()[p_ok]), (c_id.as_int()[c_ok], c_iter.as_int()[c_ok])
    )
    # One parent per key, the last in event order, as XProf's connect map keeps the last
    # Process it meets for (id, iter_num): when only some of a step's Process events are
    # reached, that one decides whether the iterator's wait is the step's (decision 266).
    _, from_end = np.unique(p_code[::-1], return_index=True)
    last = len(p_code) - 1 - from_end
    return _join(p_code[last], parents[last], c_code, children)


def _correlation_edges(profile: Profile) -> Edges:
    """Host launch -> device events with the same correlation_id."""
    events = profile.stat_events("correlation_id")
    if not events.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    on_device = on_device_plane(profile, events)
    values = profile.stat_at("correlation_id", events).as_int()
    return _join(values[~on_device], events[~on_device], values[on_device], events[on_device])


def _roots(profile: Profile, step_roots: np.ndarray) -> np.ndarray:
    """All roots, in XProf's order: root level descending, then start time.

    As in XProf, every event with an ``_r`` stat is a root, whatever its value, and its
    level is the value (0 when it is no integer); a step root the caller adds without
    ``_r`` ranks as level 1 (decision 267)."""
    roots = profile.stat_events("_r")  # few: no dense column over every event
    tf_data_ids = profile.stat_at("id", _events_named(profile, _TF_DATA_FUNCTIONS)).as_int()
    ids = profile.stat_at("id", roots)
    roots = roots[~(ids.present & member(ids.as_int(), tf_data_ids))]
    roots = distinct(np.concatenate((roots, step_roots)))
    level = profile.stat_at("_r", roots)
    rank = np.where(level.present, level.as_int(0), 1)
    return roots[np.lexsort((roots, profile.start_ns[roots], -rank))]


def build_groups(profile: Profile, step_roots: np.ndarray) -> Groups:
    """Groups of ``profile`` with ``step_roots`` (event indices) added to its ``_r`` roots."""
    n = profile.n_events
    roots = _roots(profile, np.asarray(step_roots, dtype=np.int64))
    if not roots.size:
        return Groups(np.full(n, -1, np.int64), np.zeros(0, np.int64))
    edges = [_context_edges(profile), _executor_edges(profile), _correlation_edges(profile)]
    # Nesting is needed only on lines that can receive a label.
    touched = np.concatenate([roots, *(dst for _, dst in edges)])
    lines = distinct(profile.line[touched])
    candidate = np.isin(profile.line, lines)
    candidate[profile.stat_events("_a")] = False
    nested = np.flatnonzero(candidate)
    del candidate
    forest = Forest.build(profile.line[nested], profile.start_ns[nested], profile.end_at(nested))
    src = np.concatenate([s for s, _ in edges])
    dst = np.concatenate([d for _, d in edges])

    unreached = len(roots)
    label = np.full(n, unreached, dtype=np.int64)
    np.minimum.at(label, roots, np.arange(len(roots)))
    while True:
        forest.push_down_min_at(nested, label)
        if not src.size:
            break
        before = label[dst].copy()
        np.minimum.at(label, dst, label[src])
        if np.array_equal(before, label[dst]):
            break
    valid = np.flatnonzero(label[roots] == np.arange(len(roots)))
    group_of_rank = np.full(len(roots) + 1, -1, dtype=np.int64)
    group_of_rank[valid] = np.arange(len(valid))
    return Groups(group_of_rank[label], roots[valid])
