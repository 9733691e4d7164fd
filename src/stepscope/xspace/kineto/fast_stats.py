"""Stat rows of the events `fast_route` emits, built with numpy, in the Kineto rules' order.

Per event: its arguments as `categories.convert_args` keeps them (null values and bookkeeping
args dropped, XSpace renames, bools as ints, lists and objects as their JSON text), then the
stats the router appends (``step_num``; for device events ``device_id`` / ``stream`` when the
args lack them and ``kernel_details`` / ``memcpy_details`` / ``memset_details``; last an
event-level ``category`` where the event's category differs from its metadata's). Values are
in the `StatCodec`'s terms (key ids, string ids, float indexes), as `ColumnLine` keeps them.
Kernel details and memcpy names are computed once per distinct combination of their inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from stepscope.distinct import distinct
from stepscope.vocab.serving import is_serving_annotation
from stepscope.xspace.kineto.categories import (
    DROPPED_ARGS,
    KERNEL_DROPPED_ARGS,
    RENAMES,
    Kind,
    _json_text,
    json_text_of_raw,
    kernel_details,
    memcpy_details,
    memcpy_name,
    memset_details,
    step_number,
)
from stepscope.xspace.kineto.devices import ANNOTATION_LINE_BASE, SYNC_LINE_BASE, stream_of
from stepscope.xspace.kineto.scan import (
    A_BOOL,
    A_FLOAT,
    A_INT,
    A_JSON,
    A_NULL,
    A_STR,
    A_UINT,
    F_PID_STR,
    F_TID_STR,
    NO_ID,
    ScannedTrace,
    first_seen,
    native,
)
from stepscope.xspace.kineto.stat_codec import StatCodec
from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT

if TYPE_CHECKING:
    from stepscope.xspace.kineto.classified import Classified

_KERNEL_ARGS = (
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "est. achieved occupancy %",
)
_KERNEL_ARG_SET = frozenset(_KERNEL_ARGS)
# Order of the stats the router appends after the args.
_SLOT_STEP, _SLOT_ROOT, _SLOT_DEVICE, _SLOT_STREAM, _SLOT_DETAILS, _SLOT_CATEGORY = range(1, 7)
_LINE_NAMES = {
    Kind.DEVICE: "Stream #{}",
    Kind.GPU_ANNOTATION: "GPU annotations (Stream #{})",
    Kind.SYNC: "CUDA sync (Stream #{})",
}


def kept_rows(
    trace: ScannedTrace,
    event_class: np.ndarray,
    kept: np.ndarray,
    key_lut: np.ndarray,
    spend: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The argument rows events keep: a row of an event of class ``event_class`` (int8, 0..2)
    is kept when ``kept[class, key]`` and it is not null. (rows kept per event (int64), then
    ``key_lut`` of the key (int32), the kind and the value (writable) of each kept row.)
    ``spend``: the trace's argument rows are not read again (they are dropped after, on every
    path), so the C pass may write the kept rows over the scanned ones: no new pages for them
    at the import's peak (decision 451)."""
    fast = native()
    if fast is not None and spend and _rows_writable(trace):
        count, m = fast.kept_args(
            np.ascontiguousarray(trace.nargs),
            np.ascontiguousarray(event_class),
            trace.arg_key,
            trace.arg_kind,
            trace.arg_value,
            np.ascontiguousarray(kept, dtype=bool),
            np.ascontiguousarray(key_lut, dtype=np.int32),
            True,
        )
        written = (trace.arg_key[:m], trace.arg_kind[:m], trace.arg_value[:m])
        trace.drop_args()
        return (np.frombuffer(count, np.int64), *written)
    out = _kept_rows(trace, event_class, kept, key_lut)
    if spend:
        trace.drop_args()
    return out


def _rows_writable(trace: ScannedTrace) -> bool:
    """Whether the C pass can write the trace's argument rows in place."""
    return all(
        column.flags.writeable and column.flags.c_contiguous and column.dtype == dtype
        for column, dtype in (
            (trace.arg_key, np.int32),
            (trace.arg_kind, np.int8),
            (trace.arg_value, np.int64),
        )
    )


def _kept_rows(
    trace: ScannedTrace, event_class: np.ndarray, kept: np.ndarray, key_lut: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    fast = native()
    if fast is not None:  # one pass in C
        columns = (trace.nargs, event_class, trace.arg_key, trace.arg_kind, trace.arg_value)
        count, key, kind, value = fast.kept_args(
            *(np.ascontiguousarray(c) for c in columns),
            np.ascontiguousarray(kept, dtype=bool),
            np.ascontiguousarray(key_lut, dtype=np.int32),
        )
        return (
            np.frombuffer(count, np.int64),
            np.frombuffer(key, np.int32),
            np.frombuffer(kind, np.int8),
            np.frombuffer(value, np.int64),
        )
    # Masks, not row indexes (8 bytes a row at the import's peak); a masked read copies.
    event = trace.arg_event
    keep = kept[event_class[event], trace.arg_key]
    keep &= trace.arg_kind != A_NULL
    count = np.bincount(event[keep], minlength=trace.n_events)
    return (
        count,
        key_lut[trace.arg_key[keep]],
        trace.arg_kind[keep],
        trace.arg_value[keep],
    )


class StatRows:
    """See the module docstring. ``names`` / ``display``: each event's final name and display
    name (string ids); ``device`` / ``line_id``: where a device event goes."""

    def __init__(self, trace: ScannedTrace, c: Classified, emitted: np.ndarray, codec: StatCodec):
        self.trace = trace
        self.codec = codec
        self._extra: list[tuple[np.ndarray, int, int, int, np.ndarray]] = []
        self._final: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self.merge = c.merge_stats
        n = trace.n_events
        empty = trace.string_id("")
        # int32 string ids (4 bytes an event less each at the import's peak)
        self.names = np.where(trace.name >= 0, trace.name, np.int32(empty)).astype(np.int32)
        self.display = np.full(n, empty, np.int32)
        kernel = emitted & (c.kind == Kind.DEVICE) & (c.category == _index(c, "kernel"))
        self.has_correlation = self.trace.has("correlation") | self.trace.has("correlation_id")
        self._steps(c, emitted)
        # Device events (ascending) and, for each, its device, line id, stream and kind: arrays
        # of the device events only (three int64 columns over every event were 5 MB at 0.2M
        # events at the import's peak).
        self.device_events = np.zeros(0, np.int64)
        self.device = self.line_id = self.stream = np.zeros(0, np.int64)
        self._kind = np.zeros(0, np.int8)
        self._devices(c, emitted, kernel)
        self._args(emitted, kernel)  # last: it spends the trace's argument rows

    # ---- arguments ---------------------------------------------------------------------------
    def _args(self, emitted: np.ndarray, kernel: np.ndarray) -> None:
        trace, codec = self.trace, self.codec
        key_ids = trace.key_ids()
        texts = [trace.texts[int(k)] for k in key_ids]
        # Kept per (event class, key): class 0 not emitted, 1 emitted, 2 an emitted kernel.
        kept = np.zeros((3, len(trace.texts)), bool)
        key_lut = np.zeros(len(trace.texts), np.int32)
        for key_id, text in zip(key_ids.tolist(), texts, strict=True):
            kept[1, key_id] = text not in DROPPED_ARGS
            kept[2, key_id] = kept[1, key_id] and text not in KERNEL_DROPPED_ARGS
            key_lut[key_id] = codec.key_id(RENAMES.get(text, text))
        event_class = emitted.astype(np.int8) + kernel
        # Rows per event (the rows stay in event order; `_finish` needs no event per row).
        self.k_count, self.k_key, kind, value = kept_rows(
            trace, event_class, kept, key_lut, spend=True
        )
        out_kind = np.full(len(value), KIND_INT, np.int8)
        out_kind[kind == A_UINT] = KIND_UINT  # (int64 bits, as the columns keep a uint64)
        floats = np.flatnonzero(kind == A_FLOAT)
        if len(floats):
            out_kind[floats] = KIND_DOUBLE
            first = len(codec.floats)
            codec.floats.frombytes(value[floats].tobytes())  # float64 bits, as written
            value[floats] = np.arange(first, first + len(floats))
        lut = np.zeros(len(trace.texts), np.int64)  # trace string id -> codec string id
        for which, convert in ((A_STR, self._text), (A_JSON, self._json)):
            chosen = kind == which
            if chosen.any():
                # Values are string ids: a table, not a sort, maps them (in ascending order).
                values = value[chosen]
                distinct = np.flatnonzero(np.bincount(values, minlength=len(trace.texts)))
                lut[distinct] = [convert(v) for v in distinct.tolist()]
                value[chosen] = lut[values]
                out_kind[chosen] = KIND_STR
        assert not np.any((kind != A_INT) & (kind != A_BOOL) & (out_kind == KIND_INT))
        assert not np.any((kind != A_UINT) & (out_kind == KIND_UINT))
        self.k_kind, self.k_value = out_kind, value

    def _text(self, string_id: int) -> int:
        return self.codec.string_id(self.trace.texts[string_id])

    def _json(self, string_id: int) -> int:
        # Kineto's list args are written as json.dumps writes them: their text, not decoded
        text = json_text_of_raw(self.trace.raw[string_id])
        if text is None:
            text = _json_text(self.trace.value(A_JSON, string_id))
        return self.codec.string_id(text)

    # ---- appended stats ----------------------------------------------------------------------
    def add(self, events: np.ndarray, slot: int, key: str, kind: int, values: np.ndarray) -> None:
        """Stat ``key`` appended to ``events`` (ints or codec string ids in ``values``)."""
        assert self._final is None, "stats are added before the rows are gathered"
        self._extra.append((events, slot, self.codec.key_id(key), kind, values))

    def add_strings(self, events: np.ndarray, slot: int, key: str, texts: list[str]) -> None:
        self.add(events, slot, key, KIND_STR, self._string_ids(texts))

    def _string_ids(self, texts: list[str]) -> np.ndarray:
        """Codec string ids of ``texts``, in order (per combination, then gathered per event:
        a text and an id object per event were 6 MB at 0.2M events)."""
        return np.array([self.codec.string_id(text) for text in texts], np.int64)

    def add_category(self, events: np.ndarray, categories: list[str]) -> None:
        self.add_strings(events, _SLOT_CATEGORY, "category", categories)

    def _steps(self, c: Classified, emitted: np.ndarray) -> None:
        from stepscope.xspace.kineto.categories import FRAMEWORK_OP_CATEGORIES

        trace = self.trace
        candidates = distinct(self.names[emitted]).tolist()
        steps = {i: step_number(trace.texts[i]) for i in candidates}
        steps = {i: n for i, n in steps.items() if n is not None}
        serving = [i for i in candidates if is_serving_annotation(trace.texts[i])]
        if not steps and not serving:
            return
        framework = [_index(c, cat) for cat in FRAMEWORK_OP_CATEGORIES]
        host = emitted & (c.kind == Kind.HOST) & np.isin(c.category, framework)
        if steps:
            named = np.isin(self.names, list(steps))
            events = np.flatnonzero(named & (host | (emitted & (c.kind == Kind.GPU_ANNOTATION))))
            values = np.array([steps[int(i)] for i in self.names[events].tolist()], np.int64)
            self.add(events, _SLOT_STEP, "step_num", KIND_INT, values)
        # the host's ProfilerStep#N, and a serving framework's annotation of its per-batch call
        # (vLLM's execute_context_...), is a step root for XProf too (`_r`, decision 617): its
        # grouping makes steps of roots only, and a step's kernels join it through their
        # launches' correlation_id; the device's copies are no root (a second group each)
        roots = np.flatnonzero(host & np.isin(self.names, [*steps, *serving]))
        self.add(roots, _SLOT_ROOT, "_r", KIND_INT, np.ones(len(roots), np.int64))

    def _devices(self, c: Classified, emitted: np.ndarray, kernel: np.ndarray) -> None:
        trace = self.trace
        events = np.flatnonzero(emitted & np.isin(c.kind, list(_LINE_NAMES)))
        if not len(events):
            return
        flags, pid, tid = trace.flags[events], trace.pid[events], trace.tid[events]
        _present, kind, value = trace.arg_at("device", events)
        pid_ok = ((flags & F_PID_STR) == 0) & (pid >= 0)
        device = np.where(kind == A_INT, value, np.where(pid_ok, pid, 0))
        # `ScannedTrace.has` for these events only (absent: kind -1; null: A_NULL).
        has_device = (kind >= 0) & (kind != A_NULL)
        kind = trace.arg_at("device_id", events)[1]
        has_device |= (kind >= 0) & (kind != A_NULL)
        _present, kind, value = trace.arg_at("stream", events)
        has_stream = (kind >= 0) & (kind != A_NULL)
        tid_str = (flags & F_TID_STR) != 0
        stream = np.where(tid_str, 0, tid).astype(np.int64)
        for i in np.flatnonzero((kind != A_INT) & tid_str & (tid != NO_ID)).tolist():
            stream[i] = stream_of(trace.texts[int(tid[i])]) or 0
        stream = np.where(kind == A_INT, value, stream)
        line_kind = c.kind[events]
        self.device_events, self.device, self.stream, self._kind = events, device, stream, line_kind
        self.line_id = np.where(
            line_kind == Kind.GPU_ANNOTATION,
            ANNOTATION_LINE_BASE + stream,
            np.where(line_kind == Kind.SYNC, SYNC_LINE_BASE + stream, stream),
        )
        on_device = np.zeros(trace.n_events, bool)
        on_device[events] = True
        dev = on_device & (c.kind == Kind.DEVICE)
        at = np.flatnonzero((line_kind == Kind.DEVICE) & ~has_device)
        self.add(events[at], _SLOT_DEVICE, "device_id", KIND_INT, device[at])
        at = np.flatnonzero((line_kind == Kind.DEVICE) & ~has_stream)
        self.add(events[at], _SLOT_STREAM, "stream", KIND_INT, stream[at])
        self._kernel_details(np.flatnonzero(kernel))
        self._memcpy(np.flatnonzero(dev & (c.category == _index(c, "gpu_memcpy"))))
        memsets = np.flatnonzero(dev & (c.category == _index(c, "gpu_memset")))
        self._per_combination(
            memsets,
            ("bytes",),
            lambda e: memset_details(self.trace.texts[int(self.names[e])], trace.args_of(e)),
            "memset_details",
        )

    def line_name(self, at: int) -> str:
        """The line name of device event ``device_events[at]``."""
        return _LINE_NAMES[Kind(int(self._kind[at]))].format(int(self.stream[at]))

    def _combinations(
        self, events: np.ndarray, keys: tuple[str, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(combination per event, one event per combination) of name and the ``keys`` args."""
        columns = [self.names[events]]
        for key in keys:
            _present, kind, value = self.trace.arg_at(key, events)
            columns += [kind, value]
        group, first = first_seen(*columns)
        return group, events[first]

    def _per_combination(
        self, events: np.ndarray, keys: tuple[str, ...], fn: Callable[[int], str | None], stat: str
    ) -> None:
        if not len(events):
            return
        group, samples = self._combinations(events, keys)
        results = [fn(int(e)) for e in samples.tolist()]
        keep = np.array([r is not None for r in results], bool)[group]
        ids = self._string_ids([r for r in results if r is not None])
        # Group ids renumbered without the groups that have no result.
        kept_group = np.cumsum([r is not None for r in results]) - 1
        self.add(events[keep], _SLOT_DETAILS, stat, KIND_STR, ids[kept_group[group[keep]]])

    def _kernel_details(self, kernels: np.ndarray) -> None:
        self._per_combination(
            kernels,
            _KERNEL_ARGS,
            lambda e: kernel_details(self.trace.args_of(e, _KERNEL_ARG_SET)),  # reads no others
            "kernel_details",
        )

    def _memcpy(self, events: np.ndarray) -> None:
        if not len(events):
            return
        trace = self.trace
        group, samples = self._combinations(events, ("kind", "bytes"))
        names, details = [], []
        for event in samples.tolist():
            args = trace.args_of(event)
            name, src, dst = memcpy_name(trace.texts[int(self.names[event])], args)
            names.append(trace.string_id(name))
            details.append(memcpy_details(args, src, dst))
        self.display[events] = self.names[events]
        self.names[events] = np.array(names, np.int64)[group]
        self.add(
            events, _SLOT_DETAILS, "memcpy_details", KIND_STR, self._string_ids(details)[group]
        )

    # ---- output ------------------------------------------------------------------------------
    def _finish(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._final is not None:
            return self._final
        n = self.trace.n_events
        parts = [p for p in self._extra if len(p[0])]
        ex_event = np.concatenate([p[0] for p in parts] or [np.zeros(0, np.int64)])
        ex_slot = np.concatenate(
            [np.full(len(p[0]), p[1]) for p in parts] or [np.zeros(0, np.int64)]
        )
        ex_key = np.concatenate(
            [np.full(len(p[0]), p[2], np.int32) for p in parts] or [np.zeros(0, np.int32)]
        )
        ex_kind = np.concatenate(
            [np.full(len(p[0]), p[3], np.int8) for p in parts] or [np.zeros(0, np.int8)]
        )
        ex_value = np.concatenate(
            [np.asarray(p[4], np.int64) for p in parts] or [np.zeros(0, np.int64)]
        )
        # By event, then slot (slots are below 8): one stable sort of a combined key is about
        # twice as fast as lexsort's two passes.
        order = np.argsort(ex_event.astype(np.int64) * 8 + ex_slot, kind="stable")
        ex_event, ex_key, ex_kind, ex_value = (
            a[order] for a in (ex_event, ex_key, ex_kind, ex_value)
        )
        # The kept rows' counts (bincount's own array) become the totals in place.
        counts, self.k_count = self.k_count, np.zeros(0, np.int64)
        ex_count = np.bincount(ex_event, minlength=n)
        counts += ex_count
        starts = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        total = int(starts[-1])
        # An appended row follows its event's kept rows and the appended rows before it. The
        # kept rows, in event order already, fill the other places in order: a mask, not an
        # index per kept row (8 bytes a row at the import's peak).
        ex_rank = np.arange(len(ex_event)) - np.searchsorted(ex_event, ex_event)
        at = starts[ex_event + 1] - ex_count[ex_event] + ex_rank
        del ex_count, ex_rank
        kept = np.ones(total, bool)
        kept[at] = False
        key = np.empty(total, np.int32)
        key[at], key[kept] = ex_key, self.k_key
        self.k_key = np.zeros(0, np.int32)
        kind = np.empty(total, np.int8)
        kind[at], kind[kept] = ex_kind, self.k_kind
        self.k_kind = np.zeros(0, np.int8)
        value = np.empty(total, np.int64)
        value[at], value[kept] = ex_value, self.k_value
        self.k_value = np.zeros(0, np.int64)
        if self.merge:
            counts, starts, key, kind, value = _merge_same_keys(counts, key, kind, value)
        self._final = (counts, starts, key, kind, value)
        self._extra = []
        return self._final

    @property
    def counts(self) -> np.ndarray:
        return self._finish()[0]

    @property
    def key(self) -> np.ndarray:
        return self._finish()[2]

    @property
    def kind(self) -> np.ndarray:
        return self._finish()[3]

    @property
    def value(self) -> np.ndarray:
        return self._finish()[4]

    def gather(self, events: np.ndarray) -> np.ndarray:
        """Row indices of ``events``' stats, event after event."""
        counts, starts = self._finish()[:2]
        chosen = counts.take(events)
        new_starts = np.zeros(len(events), np.int64)
        np.cumsum(chosen[:-1], out=new_starts[1:])
        rows = np.repeat(starts.take(events) - new_starts, chosen)
        return rows + np.arange(len(rows), dtype=np.int64)


def _merge_same_keys(
    counts: np.ndarray, key: np.ndarray, kind: np.ndarray, value: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows with one stat per key in each event, merged as a dict's assignments merge
    them: a key keeps the place of its first row and the value of its last (two args that
    one stat name stands for, an arg named like a stat the importer appends; decision 211)."""
    n = len(counts)
    row_event = np.repeat(np.arange(n, dtype=np.int64), counts)
    order = np.lexsort((key, row_event))  # by event, key, then place (lexsort is stable)
    event_sorted, key_sorted = row_event[order], key[order]
    first = np.ones(len(order), bool)
    first[1:] = (event_sorted[1:] != event_sorted[:-1]) | (key_sorted[1:] != key_sorted[:-1])
    if first.all():
        starts = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        return counts, starts, key, kind, value
    last = np.ones(len(order), bool)
    last[:-1] = first[1:]
    kind, value = kind.copy(), value.copy()
    kind[order[first]] = kind[order[last]]
    value[order[first]] = value[order[last]]
    keep = np.zeros(len(order), bool)
    keep[order[first]] = True
    counts = np.bincount(row_event[keep], minlength=n).astype(np.int64)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    return counts, starts, key[keep], kind[keep], value[keep]


def _index(c: Classified, category: str) -> int:
    return c.categories.index(category) if category in c.categories else -2
