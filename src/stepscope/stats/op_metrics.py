"""Op metrics: per op, on the host and on the devices, occurrences, total and self time.

Which events are ops:
- host: in PyTorch profiles (Kineto categories), the ``cpu_op`` and ``user_annotation``
  events but step markers; else framework ops (`stepscope.vocab.opnames`: TensorFlow,
  tf.data, JAX) plus `stepscope.trace` annotations (type "Annotation"), and in a TensorFlow
  program each eager op's span (``EagerLocalExecute: MatMul``, op ``MatMul`` of type
  ``MatMul``, run eagerly) that holds no op of its own (see `_eager_op_events`), beside
  tf.function calls only the user's eager part (`_eager_op_names`); in profiles with none of
  these, or whose only framework ops are tf.data iterators (a Python loader stepscope
  instrumented, in a JAX loop), every host event but step markers and instants;
- device: every event of a device's stream lines, named after the framework op of its HLO
  instruction for XLA programs with HLO in the profile (`stepscope.stats.xla.xla_ops`; the HLO
  instruction's name when XLA made it up), else after its ``tf_op`` stat when it has one
  (kernels of one TensorFlow/JAX op add up), else after the kernel or copy.

Annotations: PyTorch's ``record_function`` labels that hold ops (``## backward ##``,
``DistributedDataParallel.forward``, ``Optimizer.step#SGD.step``; category
``user_annotation``) are typed "Annotation", as `stepscope.trace` spans are; one holding none
(``nccl:all_reduce``, ``gloo:all_reduce``) is the unit of work it names and keeps its name as
its type. `ranked` puts the annotations that hold ops after the ops (decision 1074).

Self time = duration minus the durations of the op's children: ops nested in it on the same
line (other events do not count). Idle time, as XProf defines it: on the host, per thread, the
time from its first op's start to its last op's end not covered by op self time; on a device,
its span of work not covered by any event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from stepscope.distinct import distinct, member
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import distinct_ids
from stepscope.stats.enclosing import innermost_enclosing
from stepscope.stats.events import (
    NOT_COUNTED,
    EventType,
    classify_events,
    device_work_lines,
    host_lines,
    is_step_marker_name,
)
from stepscope.stats.host.own_work import profiler_work
from stepscope.stats.host.python_samples import (
    PYTHON_OP_TYPE,
    sampled_thread_line,
    untraced_python_time,
)
from stepscope.stats.intervals import merge_sorted, union_ns
from stepscope.stats.nesting import events_self_time
from stepscope.stats.op_sums import KeySums, flops_by_row, host_key_sums, sum_by_row
from stepscope.stats.xla.xla_ops import xla_events
from stepscope.vocab.opnames import TF, TF_DATA, UNKNOWN, device_op, eager_op_type, parse_op
from stepscope.vocab.profiler import STEP_ANCHOR
from stepscope.vocab.tensorflow import EAGER_OP_PREFIX, FUNCTION_PREFIX, is_feed_op_type

_HOST_OP_CATEGORIES = ("cpu_op", "user_annotation")
_USER_ANNOTATION = "user_annotation"  # PyTorch's record_function labels (a Kineto category)
# Written by stepscope's capture on the metadata of `stepscope.trace` names (capture/save.py;
# the stats layer does not import capture, so the name is repeated here).
ANNOTATION_STAT = "stepscope_annotation"
ANNOTATION_TYPE = "Annotation"
_DEVICE_KIND = {
    int(EventType.HOST_TO_DEVICE): "MemcpyHToD",
    int(EventType.DEVICE_TO_HOST): "MemcpyDToH",
    int(EventType.DEVICE_TO_DEVICE): "MemcpyDToD",
    int(EventType.DEVICE_COLLECTIVES): "Collective",
}


@record
class OpTable:
    """Ops of one side ("host" or "device"), one row per (name, type); times int64 ns."""

    side: str
    names: tuple[str, ...]
    types: tuple[str, ...]
    occurrences: np.ndarray
    total_ns: np.ndarray
    self_ns: np.ndarray
    eager_self_ns: np.ndarray  # self time of the occurrences that ran eagerly
    flops: np.ndarray  # float64, sum of the ``flops`` stat (0 where unknown)
    idle_ns: int

    def __len__(self) -> int:
        return len(self.names)

    def without_type(self, op_type: str) -> OpTable:
        """The table without its rows of type ``op_type``."""
        keep = np.array([t != op_type for t in self.types], dtype=bool)
        rows = np.flatnonzero(keep).tolist()
        return OpTable(
            self.side,
            tuple(self.names[i] for i in rows),
            tuple(self.types[i] for i in rows),
            self.occurrences[keep],
            self.total_ns[keep],
            self.self_ns[keep],
            self.eager_self_ns[keep],
            self.flops[keep],
            self.idle_ns,
        )

    @classmethod
    def empty(cls, side: str) -> OpTable:
        z = np.zeros(0, dtype=np.int64)
        return cls(side, (), (), z, z, z, z, np.zeros(0), 0)

    @staticmethod
    def merge(side: str, tables: list[OpTable]) -> OpTable:
        """Rows with the same (name, type) summed over ``tables`` (several hosts)."""
        index: dict[tuple[str, str], int] = {}
        for table in tables:
            for key in zip(table.names, table.types, strict=True):
                index.setdefault(key, len(index))
        n = len(index)
        occurrences, total, own, eager = (np.zeros(n, np.int64) for _ in range(4))
        flops = np.zeros(n)
        for table in tables:
            keys = zip(table.names, table.types, strict=True)
            rows = np.array([index[k] for k in keys], dtype=np.int64)
            np.add.at(occurrences, rows, table.occurrences)
            np.add.at(total, rows, table.total_ns)
            np.add.at(own, rows, table.self_ns)
            np.add.at(eager, rows, table.eager_self_ns)
            np.add.at(flops, rows, table.flops)
        return OpTable(
            side,
            tuple(k[0] for k in index),
            tuple(k[1] for k in index),
            occurrences,
            total,
            own,
            eager,
            flops,
            sum(t.idle_ns for t in tables),
        )


def ranked(types: tuple[str, ...], total_ns: np.ndarray, self_ns: np.ndarray) -> np.ndarray:
    """Row order for a table's ranks: by self time, most first, with the annotations that hold
    ops after the ops (decision 1074). Such an annotation labels a region whose ops are rows
    of their own; its self time is what no op covers on its thread in the region: Python
    there, or its thread waiting for another's ops (``## backward ##`` waits for PyTorch's
    autograd thread: 267 of its 308 ms self time in a100_nccl_rank0), never an op's work. One
    holding no op keeps its place by its self time (a ``stepscope.trace`` around Python)."""
    label = np.array([t == ANNOTATION_TYPE for t in types], dtype=bool) & (total_ns > self_ns)
    return np.lexsort((-self_ns, label))  # stable: ties keep the table's order


@record
class OpMetrics:
    """The host and device op tables of one host."""

    host: OpTable
    device: OpTable


def _host_op_events(profile: Profile, on_host: np.ndarray) -> tuple[np.ndarray, bool]:
    """Host op events, and whether they are framework ops (see module docstring)."""
    strings = profile.strings
    used = distinct_ids(profile.name[on_host], len(strings))
    texts = [strings[i] for i in used.tolist()]
    marker = np.zeros(len(strings), dtype=bool)
    marker[used] = [is_step_marker_name(t) or t == STEP_ANCHOR for t in texts]
    with_category = profile.stat_events("category")
    category = profile.stat_at("category", with_category).string_ids()
    if category.max(initial=-1) >= 0:  # PyTorch: "gloo:all_reduce" is no TF/JAX op
        ids = [strings.id_of(c) for c in _HOST_OP_CATEGORIES]
        ops = np.zeros(profile.n_events, dtype=bool)
        ops[with_category[np.isin(category, [i for i in ids if i >= 0])]] = True
        return np.flatnonzero(ops & on_host & ~marker[profile.name]), False
    framework = np.zeros(len(strings), dtype=bool)
    categories = [parse_op(t).category for t in texts]
    framework[used] = [c != UNKNOWN for c in categories]
    eager, beside = _eager_op_names(profile, on_host, used, texts)
    # Input-pipeline iterators alone do not make the host's work framework ops: stepscope's
    # own `steps`/`data` instrumentation names a Python loader's fetches so (Iterator::
    # Generator), and a JAX loop has no other op XProf's names know; read as framework ops
    # they were the whole table (100%) and the JAX calls were left out.
    if eager is not None or any(c not in (UNKNOWN, TF_DATA) for c in categories):
        # `stepscope.trace` spans (marked on their metadata) are the user's ops too.
        ops = framework[profile.name]
        ops[profile.stat_events(ANNOTATION_STAT)] = True
        ops &= on_host
        if eager is not None:
            spans = on_host & eager[profile.name]
            ops[_eager_op_events(profile, spans, framework, beside)] = True
        return np.flatnonzero(ops), True
    return np.flatnonzero(on_host & (profile.dur_ns > 0) & ~marker[profile.name]), False


def _eager_op_names(
    profile: Profile, on_host: np.ndarray, used: np.ndarray, texts: list[str]
) -> tuple[np.ndarray | None, bool]:
    """Per string id, whether it names an eager op's span counted as an op (`eager_op_type`;
    None when there are none), and whether the program calls tf.functions too.

    XProf counts an eager op through the op event TensorFlow traced inside its span
    (``MatMul:MatMul`` under ``EagerKernelExecute``, marked ``is_eager`` when XProf groups the
    events); TensorFlow 2.21 runs an eager op as a one-op function and traces no op event in
    it (``EagerLocalExecute: MatMul`` > ``EagerKernelExecute`` > ``KernelAndDeviceFunc::Run``),
    so XProf's table of an eager loop is empty: the span names the op, it is the op (decision
    1032). In a program that calls tf.functions (``EagerLocalExecute: __inference_...``, never
    an op: its graph's ops are) the eager ops beside them are the user's eager part and count
    too (decision 1022), but those that feed the function (`is_feed_op_type`: constants, the
    input iterator's ops) and an op type run once before the first call of a function run
    more often, or after its last (the capture's edges: Keras's TensorBoard callback writes
    its summary once at the stop, decision 1026): they are XProf's table's idle time in the
    TF fixtures (tests/stats/test_golden_tf.py)."""
    strings = profile.strings
    types = [eager_op_type(t) for t in texts]
    eager = np.zeros(len(strings), dtype=bool)
    eager[used] = [bool(t) for t in types]
    called = EAGER_OP_PREFIX + FUNCTION_PREFIX
    functions = used[[t.startswith(called) for t in texts]]
    if not eager.any() or not len(functions):
        return (eager if eager.any() else None), False
    counts = np.bincount(profile.name[on_host], minlength=len(strings))
    eager[used] = [
        bool(t) and not is_feed_op_type(t) and counts[i] > 0
        for i, t in zip(used.tolist(), types, strict=True)
    ]
    if counts[functions].max() > 1:  # a function run once has no calls to be between
        eager[_at_the_edges(profile, on_host, eager & (counts == 1), functions)] = False
    return (eager if eager.any() else None), True


def _at_the_edges(
    profile: Profile, on_host: np.ndarray, once: np.ndarray, functions: np.ndarray
) -> np.ndarray:
    """The string ids of ``once`` (per string id: an eager op type run once) whose event lies
    before the first tf.function call's start or after the last one's end: the capture's
    edges (Keras's TensorBoard callback's summary at the stop), not the loop's eager part. An
    op run once between the calls is the loop's (a user's one-off evaluation, 298 ms of a
    540 ms capture's, was host idle: decision 1026)."""
    calls = np.flatnonzero(on_host & member(profile.name, functions))
    events = np.flatnonzero(on_host & once[profile.name])
    if not len(events):
        return np.zeros(0, np.int64)
    first, last = int(profile.start_ns[calls].min()), int(profile.end_at(calls).max())
    outside = (profile.start_ns[events] < first) | (profile.end_at(events) > last)
    return distinct(profile.name[events[outside]])  # not np.unique: numpy.ma (decision 201)


def _eager_op_events(
    profile: Profile, spans: np.ndarray, framework: np.ndarray, beside: bool
) -> np.ndarray:
    """The eager op spans (mask ``spans``) that hold no TensorFlow op event on their thread: an
    older TensorFlow traces the op's kernel inside (``MatMul:MatMul``), and that is the op.
    ``beside`` (a program calling tf.functions): nor any inside another op, which holds it as
    XProf's does (a ``tf.py_function``'s eager ops, in its ``EagerPyFunc``)."""
    events = np.flatnonzero(spans)
    tf_ids = np.flatnonzero(framework)
    tf_ids = tf_ids[[parse_op(profile.strings[i]).category == TF for i in tf_ids.tolist()]]
    inner = np.flatnonzero(np.isin(profile.name, tf_ids) & host_lines(profile)[profile.line])
    holding = innermost_enclosing(profile, inner, spans)
    events = np.setdiff1d(events, holding[holding >= 0], assume_unique=False)
    if beside:
        held = innermost_enclosing(profile, events, framework[profile.name])
        events = events[held < 0]
    return events


def _aggregate(
    profile: Profile,
    events: np.ndarray,
    key: np.ndarray,
    key_text: Callable[[int], tuple[str, str]],
    self_ns: np.ndarray,
    idle_ns: int,
    known_flops: np.ndarray | None = None,
) -> OpTable:
    """The device table: one row per distinct (name, type) text of the (non-empty)
    ``events``; ``key`` (one per event) groups the events cheaply first."""
    # only the events that carry these stats (usually few or none): no column over every
    # event; read before the rows exist (an 8 B/event array less at this step's peak)
    eager, eager_stat = profile.stat_among("is_eager", events)
    eager = eager[eager_stat.as_int(0) != 0]
    with_flops, flops_stat = profile.stat_among("flops", events)
    flops = np.nan_to_num(flops_stat.as_float(), copy=False)
    del eager_stat, flops_stat
    # small non-negative keys (string ids): a lookup table instead of a sort
    small = int(key.min()) >= 0 and int(key.max()) < 4 * len(key) + 4096
    if small:
        uniq = np.flatnonzero(np.bincount(key))
    else:
        uniq, first_row = np.unique(key, return_inverse=True)
    index: dict[tuple[str, str], int] = {}
    remap = np.array(
        [index.setdefault(key_text(k), len(index)) for k in uniq.tolist()], dtype=np.int64
    )
    if small:  # key -> row in one gather per event
        lookup = np.zeros(int(uniq[-1]) + 1, dtype=np.int64)
        lookup[uniq] = remap
        row = lookup[key]
    else:
        row = remap[first_row.reshape(-1)]
        del first_row
    rows = len(index)

    if known_flops is not None:  # from the HLO, where the events have no ``flops`` stat
        dense = np.zeros(len(events))
        dense[with_flops] = flops
        flops_total = np.bincount(
            row, weights=np.where(dense > 0, dense, known_flops), minlength=rows
        )
    else:
        flops_total = np.bincount(row[with_flops], weights=flops, minlength=rows)
    texts = list(index)
    return OpTable(
        "device",
        tuple(t[0] for t in texts),
        tuple(t[1] for t in texts),
        np.bincount(row, minlength=rows).astype(np.int64),
        sum_by_row(row, rows, profile.dur_ns, events),
        sum_by_row(row, rows, self_ns),
        # only the events that have it (usually none: no pass over every event's row)
        sum_by_row(row[eager], rows, self_ns[eager]),
        flops_total,
        idle_ns,
    )


def _host_events(
    profile: Profile, from_ns: int | None = None
) -> tuple[np.ndarray, bool, np.ndarray]:
    """The host op events (ascending), whether they are framework ops, and the positions in
    them of the eagerly run ones (`OpTable.eager_self_ns`'s)."""
    # the profilers' own start/stop work is not the program's (`stats.own_work`)
    on_host = host_lines(profile)[profile.line] & ~profiler_work(profile)
    if from_ns is not None:
        on_host &= profile.start_ns >= from_ns
    events, framework = _host_op_events(profile, on_host)
    del on_host
    if not events.size:
        return events, framework, np.zeros(0, np.int64)
    # only the events that carry these stats (usually few or none): no column over every event
    eager, eager_stat = profile.stat_among("is_eager", events)
    eager = eager[eager_stat.as_int(0) != 0]
    del eager_stat
    strings = profile.strings
    if framework:  # an eager op's span (`_eager_op_names`) ran eagerly, by its name
        spans = [i for i in distinct(profile.name[events]).tolist() if eager_op_type(strings[i])]
        if spans:
            eager = np.union1d(eager, np.flatnonzero(np.isin(profile.name[events], spans)))
    return events, framework, eager


def eager_ns_by_step(profile: Profile, start_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Per step (``start_ns``, ``dur_ns``), the self time of the host ops run eagerly that
    start in it: the host op table's eager time, step by step (decision 1029)."""
    out = np.zeros(len(start_ns), dtype=np.int64)
    events, _, eager = _host_events(profile)
    if not len(eager) or not len(start_ns):
        return out
    own = events_self_time(events, profile.line, profile.start_ns, profile.end_ns)[eager]
    starts = profile.start_ns[events[eager]]
    order = np.argsort(start_ns, kind="stable")
    lo, hi = start_ns[order], (start_ns + dur_ns)[order]
    k = np.searchsorted(lo, starts, "right") - 1
    inside = (k >= 0) & (starts < hi[np.maximum(k, 0)])
    np.add.at(out, order[k[inside]], own[inside])
    return out


def _host_table(profile: Profile, from_ns: int | None = None) -> OpTable:
    events, framework, eager = _host_events(profile, from_ns)
    if not events.size:
        return OpTable.empty("host")
    strings = profile.strings
    sums = host_key_sums(profile, events, eager)
    # `stepscope.trace` spans' names (few): typed as annotations whichever rule chose the ops
    annotated = set(profile.name[profile.stat_events(ANNOTATION_STAT)].tolist())
    if not framework:  # and PyTorch's record_function labels that hold ops (decision 1074)
        annotated |= _labels(profile, events, sums)

    def text(sid: int) -> tuple[str, str]:
        full = strings[sid]
        parsed = parse_op(full)
        if framework and (op_type := eager_op_type(full)):
            return op_type, op_type  # an eager op has no node name: XProf's "MatMul:MatMul"
        if framework:
            if parsed.category == UNKNOWN:  # a user annotation
                return full, ANNOTATION_TYPE
            return parsed.name, parsed.type
        if parsed.category == TF_DATA:  # a loader's iterator among the other events
            return parsed.name, parsed.type
        if sid in annotated:
            return full, ANNOTATION_TYPE
        return full, full  # PyTorch op names are their types ("aten::mm")

    return _table_of_keys(profile, events, sums, text)


def _labels(profile: Profile, events: np.ndarray, sums: KeySums) -> set[int]:
    """The name ids of the PyTorch ``user_annotation`` events among ``events`` whose time
    holds ops nested on their thread (total above self time): labels of regions."""
    category = profile.strings.id_of(_USER_ANNOTATION)
    if category < 0:
        return set()
    with_category, stat = profile.stat_among("category", events)
    names = distinct(profile.name[events[with_category[stat.string_ids() == category]]])
    return {n for n in names.tolist() if sums.total_ns[n] > sums.self_ns[n]}


def _table_of_keys(
    profile: Profile,
    events: np.ndarray,
    sums: KeySums,
    key_text: Callable[[int], tuple[str, str]],
) -> OpTable:
    """The host table's rows from its per-name sums: one row per distinct (name, type) text,
    in the order of the names' first string ids (as `_aggregate` orders its keys)."""
    used = np.flatnonzero(sums.count)
    index: dict[tuple[str, str], int] = {}
    remap = np.array(
        [index.setdefault(key_text(k), len(index)) for k in used.tolist()], dtype=np.int64
    )
    rows = len(index)

    def per_row(per_key: np.ndarray) -> np.ndarray:
        column = np.zeros(rows, dtype=np.int64)
        np.add.at(column, remap, per_key[used])  # exact int64 sums of a few values per row
        return column

    lookup = np.zeros(len(sums.count), dtype=np.int64)
    lookup[used] = remap
    flops_total = flops_by_row(profile, events, lookup, rows)
    texts = list(index)
    return OpTable(
        "host",
        tuple(t[0] for t in texts),
        tuple(t[1] for t in texts),
        per_row(sums.count),
        per_row(sums.total_ns),
        per_row(sums.self_ns),
        per_row(sums.eager_self_ns),
        flops_total,
        sums.idle_ns,
    )


def _device_table(profile: Profile, from_ns: int | None = None) -> OpTable:
    work_lines = device_work_lines(profile)
    if not work_lines.any():  # a host-only profile: no event types to wait for or compute
        return OpTable.empty("device")
    types = classify_events(profile)
    on_device = work_lines.take(profile.line) & (types != NOT_COUNTED)
    if from_ns is not None:
        on_device &= profile.start_ns >= from_ns
    events = np.flatnonzero(on_device)
    if not events.size:
        return OpTable.empty("device")
    own = events_self_time(events, profile.line, profile.start_ns, profile.end_ns)
    idle = 0
    plane = profile.plane[events]
    for p in distinct(plane).tolist():
        m = plane == p
        lo, hi = profile.start_ns[events[m]], profile.end_ns[events[m]]
        idle += int(hi.max() - lo.min()) - union_ns(lo, hi)
    tf_op = profile.stat("tf_op").string_ids()[events]
    display = profile.display_name_ids()[events]
    kind = (types[events].astype(np.int64) // 10).astype(np.int64)
    # one key per (tf_op or kernel name, event type)
    key = np.where(tf_op >= 0, tf_op, display).astype(np.int64) * 64 + kind * 2 + (tf_op >= 0)
    # XLA events: one key per HLO instruction (negative), named after its framework op
    xla = xla_events(profile)
    xla_index = xla.op_index[events]
    key = np.where(xla_index >= 0, -1 - xla_index, key)
    known_flops = None
    if xla:
        per_op = np.array([op.flops for op in xla.ops], dtype=np.float64)
        known_flops = np.where(xla_index >= 0, per_op[np.maximum(xla_index, 0)], 0.0)
    strings = profile.strings

    def text(k: int) -> tuple[str, str]:
        if k < 0:
            op = xla.ops[-1 - k]
            return op.tf_op_name or op.name, op.op_type
        sid, rest = divmod(k, 64)
        event_type, has_tf_op = divmod(rest, 2)
        if has_tf_op:
            return device_op(strings[sid], "")
        return strings[sid], _DEVICE_KIND.get(event_type * 10, "Kernel")

    return _aggregate(profile, events, key, text, own, idle, known_flops)


def _python_table(profile: Profile, from_ns: int | None = None) -> OpTable:
    """Rows of type "Python": time of the sampled threads that no host event covers, by the
    innermost Python function the stack sampler saw (`stepscope.stats.host.python_samples`)."""
    thread_of = sampled_thread_line(profile)
    threads = tuple(sorted({int(t) for t in thread_of if t >= 0}))
    if not threads:
        return OpTable.empty("host")
    samples = np.isin(profile.line, np.flatnonzero(thread_of >= 0))
    if not samples.any():
        return OpTable.empty("host")
    span_lo = np.array([profile.start_ns[samples].min()], np.int64)
    span_hi = np.array([profile.end_ns[samples].max()], np.int64)
    if from_ns is not None:
        span_lo = np.maximum(span_lo, from_ns)
        if span_lo[0] >= span_hi[0]:
            return OpTable.empty("host")
    counted = np.flatnonzero(
        np.isin(profile.line, threads) & (classify_events(profile) != NOT_COUNTED)
    )
    order = counted[np.argsort(profile.start_ns[counted], kind="stable")]
    _, covered_lo, covered_hi = merge_sorted(profile.start_ns[order], profile.end_ns[order])
    found = untraced_python_time(profile, threads, span_lo, span_hi, covered_lo, covered_hi)
    if not len(found):
        return OpTable.empty("host")
    zeros = np.zeros(len(found), np.int64)
    return OpTable(
        "host",
        found.function,
        (PYTHON_OP_TYPE,) * len(found),
        found.samples,
        found.ns,
        found.ns,
        zeros,
        np.zeros(len(found)),
        0,
    )


def build_op_metrics(profile: Profile, from_ns: int | None = None) -> OpMetrics:
    """Host and device op tables of one profile; the host's has the stack sampler's Python
    functions (type "Python") after its ops, for the time no op covers. With ``from_ns``, only
    the events that start then or later (a diff's steps after a warm-up, decision 386)."""
    host = _host_table(profile, from_ns)
    python = _python_table(profile, from_ns)
    if len(python):
        host = OpTable.merge("host", [host, replace(python, idle_ns=0)])
    return OpMetrics(host, _device_table(profile, from_ns))
