"""Input-pipeline (tf.data) statistics rebuilt from iterator events (XProf's
``xprof/convert/xplane_to_tf_data_stats.cc``).

Iterator events are host events named ``Iterator::<path>`` with stats ``id`` (the iterator)
and ``parent_id`` (the iterator that reads from it); tf.data writes them, and so does
``stepscope.data.instrument`` for any Python pipeline. A root call (``Iterator::<name>``, two
parts) is one ``next()`` on the pipeline; its calls to upstream iterators are the iterator
events nested in it on the same thread, plus, for asynchronous iterators (Prefetch,
ParallelMap...), the producer events of a child iterator on other threads that overlap it.

Per call tree: an event's self time is its duration minus its children's overlap with it; a
child is *blocking* (on the critical path) when its parent is and it overlaps its parent —
the consumer waited while it ran. Per pipeline, the slowest call is analysed (XProf does the
same): the bottleneck is the blocking iterator with the largest self time in it. All work is
vectorized over events; Python loops run over iterators and pipelines only.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.enclosing import innermost_enclosing
from stepscope.stats.intervals import union_ns
from stepscope.vocab.tensorflow import is_iterator

SLOW_CALL_NS = 50_000  # a pipeline call slower than 50 µs is slow (TF's guide)
ASYNC_ITERATORS = frozenset(
    {
        "Prefetch",
        "ParallelInterleave",
        "ParallelInterleaveV2",
        "ParallelInterleaveV3",
        "ParallelInterleaveV4",
        "ParallelMap",
        "ParallelMapV2",
        "ParseExample",
        "MapAndBatch",
        "DataService",
        "LegacyParallelInterleave",
        "ParallelBatch",
    }
)
_INDEX = re.compile(r"\[\d+\]$")


def iterator_name(long_name: str) -> str:
    """``Iterator::Root::ForeverRepeat[0]::BatchV2::Map`` -> ``Map``."""
    return _INDEX.sub("", long_name.rsplit("::", 1)[-1])


def explain_long_name(long_name: str) -> str:
    """``Iterator::Root::Batch::Map`` -> "Map, read by Batch, read by Root (the output)"."""
    parts = [_INDEX.sub("", p) for p in long_name.split("::")[1:]]
    if not parts:
        return long_name
    if len(parts) == 1:
        return f"{parts[0]} (the pipeline's output)"
    chain = ", ".join(f"read by {p}" for p in reversed(parts[:-1]))
    return f"{parts[-1]}, {chain} (the pipeline's output)"


@record
class IteratorStat:
    """One iterator of an input pipeline and its time."""

    id: int
    parent_id: int | None
    name: str
    long_name: str
    dataset: str  # the dataset op TensorFlow names (``MapDataset:1``); '' for Python stages
    is_async: bool
    start_offset_ns: int  # first start within the analysed call, from the call's start
    duration_ns: int  # summed over its calls
    self_ns: int
    calls: int
    blocking: bool  # on the critical path


@record
class PipelineStats:
    """One input pipeline: its calls, latency and bottleneck iterator."""

    id: int
    name: str  # "Host:0", "Host:1"... in order of first call
    root_long_name: str
    call_count: int
    avg_latency_ns: int
    min_latency_ns: int
    max_latency_ns: int
    slow_call_count: int  # calls over SLOW_CALL_NS
    slowest_call_start_ns: int
    iterators: tuple[IteratorStat, ...]  # of the slowest call, tree order
    bottleneck_id: int | None
    bottleneck_self_ns: int
    python_stages: bool  # recorded by stepscope.data (no tf.data dataset names)


@record
class _Events:
    """The iterator events of a profile, with their ids, parents and times."""

    index: np.ndarray  # event indices, sorted
    iterator: np.ndarray  # int64 iterator id
    parent_id: np.ndarray  # int64, meaningful where has_parent
    has_parent: np.ndarray
    start: np.ndarray
    end: np.ndarray
    parent: np.ndarray  # local index of the parent call, -1 for roots/orphans


def _iterator_events(profile: Profile) -> _Events | None:
    ids = profile.strings.ids_matching(is_iterator)
    if len(ids) == 0:
        return None
    mask = np.isin(profile.name, ids)
    for plane in profile.planes:
        if plane.is_device:
            mask[profile.events_of_plane(plane)] = False
    # the stats of the iterator events only (no dense column over every event)
    candidates = np.flatnonzero(mask)
    id_stat = profile.stat_at("id", candidates)
    mask[candidates[~id_stat.present]] = False
    index = candidates[id_stat.present]
    if len(index) == 0:
        return None
    parent_stat = profile.stat_at("parent_id", index)
    start = profile.start_ns[index]
    end = profile.end_ns[index]
    # Same-thread nesting.
    enclosing = innermost_enclosing(profile, index, mask)
    parent = np.where(enclosing >= 0, np.searchsorted(index, enclosing), -1)
    ev = _Events(
        index,
        id_stat.as_int()[id_stat.present],
        parent_stat.as_int(),
        parent_stat.present,
        start,
        end,
        parent,
    )
    _link_producers(ev)
    return ev


def _link_producers(ev: _Events) -> None:
    """Producer calls on other threads: parent = the overlapping call of their parent_id."""
    orphans = np.flatnonzero((ev.parent < 0) & ev.has_parent)
    if len(orphans) == 0:
        return
    order = np.lexsort((ev.start, ev.iterator))
    keys = ev.iterator[order]
    pids = ev.parent_id[orphans]
    lo = np.searchsorted(keys, pids, "left")
    hi = np.searchsorted(keys, pids, "right")
    # The last call of the parent iterator that starts before each producer ends: one search
    # over the calls' starts shifted so that each iterator's calls have a range of their own
    # (starts sorted within an iterator, iterators in order), instead of three per orphan.
    starts = ev.start[order]
    first, span = int(starts.min()), int(starts.max()) - int(starts.min()) + 2
    group = np.cumsum(np.r_[False, keys[1:] != keys[:-1]])
    if (int(group[-1]) + 1) * span >= 1 << 62:  # too wide to shift: one search per orphan
        k = np.array(
            [
                lo[j] + np.searchsorted(starts[lo[j] : hi[j]], ev.end[o], "left") - 1
                for j, o in enumerate(orphans.tolist())
            ],
            dtype=np.int64,
        )
    else:
        shifted = group * span + (starts - first)
        ends = np.clip(ev.end[orphans], first, first + span - 1) - first
        at = np.minimum(lo, len(keys) - 1)
        k = np.searchsorted(shifted, group[at] * span + ends, "left") - 1
    found = (hi > lo) & (k >= lo)
    cand = order[np.where(found, k, 0)]
    link = found & (ev.end[cand] > ev.start[orphans]) & (cand != orphans)
    ev.parent[orphans[link]] = cand[link]


def _max_hops(n: int) -> int:
    """Rounds of pointer jumping that resolve any chain of ``n`` nodes (each round doubles
    the distance covered). Damaged input can link events in a cycle, which never resolves:
    the rounds are capped so such a file costs O(n log n), not an endless loop."""
    return max(1, int(n).bit_length() + 1)


def _all_ancestors(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """values[e] AND the values of all e's ancestors (pointer jumping, vectorized)."""
    out = values.copy()
    hop = parent.copy()
    for _ in range(_max_hops(len(parent))):
        active = hop >= 0
        if not active.any():
            break
        out[active] &= out[hop[active]]  # right side read before assignment: old values
        hop = np.where(active, hop[np.maximum(hop, 0)], -1)
    return out


def _roots(parent: np.ndarray) -> np.ndarray:
    """The top ancestor of every node (for a node on a cycle, some node of that cycle)."""
    anc = np.where(parent >= 0, parent, np.arange(len(parent)))
    for _ in range(_max_hops(len(parent))):
        nxt = anc[anc]
        if np.array_equal(nxt, anc):
            break
        anc = nxt
    return anc


def build_tf_data_stats(profile: Profile) -> tuple[PipelineStats, ...]:
    ev = _iterator_events(profile)
    if ev is None:
        return ()
    names = profile.name[ev.index]
    has_parent = ev.parent >= 0
    p = np.maximum(ev.parent, 0)
    overlap = np.where(
        has_parent, np.minimum(ev.end, ev.end[p]) - np.maximum(ev.start, ev.start[p]), 0
    ).clip(min=0)
    # a root call's name is ``Iterator::<stage>``: judged once per distinct name
    name_ids, name_of = distinct_inverse(names)
    root_name = [len(profile.strings[i].split("::")) == 2 for i in name_ids.tolist()]
    is_root = np.array(root_name, dtype=bool)[name_of]
    # Blocking: every link up to a root call overlaps (the consumer waited while it ran).
    blocking = _all_ancestors(ev.parent, (is_root & ~has_parent) | (has_parent & (overlap > 0)))
    call_root = _roots(ev.parent)
    # Times inside a call: a producer of an asynchronous iterator that ran before or after
    # the call it fed (a prefetch thread working ahead) counts only while the call lasted,
    # so no iterator has more time in a call than the call itself.
    c_start = np.clip(ev.start, ev.start[call_root], ev.end[call_root])
    c_end = np.clip(ev.end, ev.start[call_root], ev.end[call_root])
    c_overlap = np.where(
        has_parent, np.minimum(c_end, c_end[p]) - np.maximum(c_start, c_start[p]), 0
    ).clip(min=0)
    self_ns = (c_end - c_start).astype(np.int64)
    np.add.at(self_ns, ev.parent[has_parent], -c_overlap[has_parent])
    self_ns = self_ns.clip(min=0)
    ev = dataclasses.replace(ev, start=c_start, end=c_end)
    datasets = profile.stat("name").string_ids()[ev.index]

    roots = np.flatnonzero(is_root & (ev.parent < 0))
    pipelines = []
    pipeline_ids = list(dict.fromkeys(ev.iterator[roots[np.argsort(ev.start[roots])]].tolist()))
    for number, pid in enumerate(pipeline_ids):
        calls = roots[ev.iterator[roots] == pid]
        latency = ev.end[calls] - ev.start[calls]
        slowest = int(calls[int(np.argmax(latency))])
        members = np.flatnonzero(call_root == slowest)
        iterators = _iterator_stats(
            profile, ev, members, names, datasets, self_ns, blocking, slowest
        )
        blocking_its = [it for it in iterators if it.blocking]
        bottleneck = max(blocking_its, key=lambda it: it.self_ns, default=None)
        pipelines.append(
            PipelineStats(
                id=int(pid),
                name=f"Host:{number}",
                root_long_name=profile.strings[int(names[slowest])],
                call_count=len(calls),
                avg_latency_ns=int(latency.mean()),
                min_latency_ns=int(latency.min()),
                max_latency_ns=int(latency.max()),
                slow_call_count=int((latency > SLOW_CALL_NS).sum()),
                slowest_call_start_ns=int(ev.start[slowest]),
                iterators=iterators,
                bottleneck_id=bottleneck.id if bottleneck and bottleneck.self_ns > 0 else None,
                bottleneck_self_ns=bottleneck.self_ns if bottleneck else 0,
                python_stages=not bool((datasets[members] >= 0).any()),
            )
        )
    return tuple(pipelines)


def _iterator_stats(
    profile: Profile,
    ev: _Events,
    members: np.ndarray,
    names: np.ndarray,
    datasets: np.ndarray,
    self_ns: np.ndarray,
    blocking: np.ndarray,
    call: int,
) -> tuple[IteratorStat, ...]:
    ids = ev.iterator[members]
    unique, group = np.unique(ids, return_inverse=True)
    k = len(unique)
    duration = np.array(  # wall time inside the call (parallel producers overlap)
        [union_ns(ev.start[members[group == g]], ev.end[members[group == g]]) for g in range(k)],
        dtype=np.int64,
    )
    selft = np.bincount(group, weights=self_ns[members], minlength=k)
    calls = np.bincount(group, minlength=k)
    blocks = np.bincount(group, weights=blocking[members], minlength=k) > 0
    first = np.full(k, np.iinfo(np.int64).max)
    np.minimum.at(first, group, ev.start[members])
    rep = np.full(k, len(members))
    np.minimum.at(rep, group, np.arange(len(members)))
    out = []
    for g in np.argsort(first, kind="stable").tolist():
        m = int(members[rep[g]])
        long_name = profile.strings[int(names[m])]
        dataset = int(datasets[m])
        out.append(
            IteratorStat(
                id=int(unique[g]),
                parent_id=int(ev.parent_id[m]) if ev.has_parent[m] else None,
                name=iterator_name(long_name),
                long_name=long_name,
                dataset=profile.strings[dataset] if dataset >= 0 else "",
                is_async=iterator_name(long_name) in ASYNC_ITERATORS,
                start_offset_ns=int(first[g] - ev.start[call]),
                duration_ns=int(duration[g]),
                # parallel producers overlap: their self times add up to more wall time than
                # the iterator was busy in the call, which bounds it
                self_ns=int(min(selft[g], duration[g])),
                calls=int(calls[g]),
                blocking=bool(blocks[g]),
            )
        )
    return tuple(out)
