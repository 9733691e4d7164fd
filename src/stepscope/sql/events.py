"""The ``events`` table: every event of every host, with XProf's ``Events`` columns.

XProf 2.24.2's events database (``xprof create_events_db``) has 31 columns; the ones that
mean the same here keep their names, so XProf's documented queries run unchanged (the
mapping, and where the meaning differs, is in docs/query.md). stepscope adds the host, the
plane and line, the event's index, its duration, its step number, and its type and
breakdown category as the step breakdown counts it.

Columns that cost a pass over the profile (self time, steps, types, stats, ``trace_args``)
are built only when a query names them (`wanted`); the rest are the profile's arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

import numpy as np

from stepscope.sql import arrow, stat_values
from stepscope.sql.steps import step_columns

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.model import Profile
    from stepscope.stats import StepDb

# name -> meaning; "XProf" marks XProf's Events columns (same name, same meaning unless said)
COLUMNS = {
    "host": "the host (profile file) the event comes from",
    "event_id": "the event's index in its host's profile (joins `stats.event_id`)",
    "device": "XProf: `cpu:0` for the host plane, `gpu:N` for `/device:GPU:N`, else the "
    "plane's name without `/device:`",
    "plane": "the plane's full name (`/host:CPU`, `/device:GPU:0`...)",
    "line": "the line's name: a thread, a stream (`Stream #7`), `XLA Ops`...",
    "category": "XProf: `host` on host planes, `device` on device streams, else the device "
    "line's name (`XLA Ops`, `XLA Modules`, `Steps`...)",
    "thread_id": "XProf: the host line's id (its low 32 bits, as XProf), NULL on devices",
    "thread_name": "XProf: the host line's name, NULL on devices",
    "stream_id": "XProf: the device line's id (the stream), NULL on the host",
    "name": "the event's name",
    "kernel_name": "XProf: the event's raw name (the same as `name`)",
    "start_ns": "XProf: start on the host's profile clock (ns; the clock of `steps.start_ns`)",
    "end_ns": "XProf: `start_ns + dur_ns` (ns)",
    "dur_ns": "duration (ns)",
    "self_time_ns": "XProf: duration minus that of the events nested directly inside it on its "
    "line (ns); XProf computes it on device op lines only and gives the duration elsewhere",
    "step_num": "the number of the step (`steps.step_num`) whose span holds the event's start; "
    "NULL outside steps",
    "step": "XProf: that step's name (`train 6`, `ProfilerStep#3`); XProf takes the step of "
    "the event's group, stepscope the step holding its start",
    "event_type": "the step breakdown's type of the event (`host_compute`, `host_wait_input`, "
    "`device_compute_32`, `host_collective`, `not_counted`...)",
    "breakdown_category": "the category of the step breakdown that type counts in "
    "(`input`, `host_compute`, `collective_wait`... as `steps.*_ns`); NULL when not counted",
    "trace_category": "the category the trace gave the event (Kineto `cat`: `kernel`, "
    "`cpu_op`, `cuda_runtime`...); NULL in XSpace",
    "correlation_id": "XProf: the launch's correlation id (host launch and device event)",
    "tf_op_name": "XProf: the framework op (`scope/op` of `scope/op:Type`, or the framework "
    "op of an XLA instruction)",
    "tf_op_type": "XProf: the framework op's type (`Conv2D`, `dot_general`)",
    "hlo_op": "XProf: the XLA instruction of a device op (`hlo_op` stat)",
    "hlo_module": "XProf: the XLA module of a device op (`hlo_module` stat)",
    "hlo_fingerprint": "XProf: NULL (stepscope keeps no instruction fingerprints)",
    "kernel_details": "XProf: the kernel's launch configuration (`kernel_details` stat)",
    "source_line": "XProf: the source file and line (`source_info` or `source` stat)",
    "flops": "XProf: the `flops` stat (cost model estimate)",
    "memory_accessed": "XProf: the `bytes_accessed` stat (bytes)",
    "input_tensors": "XProf: NULL (shapes are not kept per event)",
    "output_tensors": "XProf: NULL",
    "trace_args": "XProf: the event's own stats without a column here, `key=value` joined by "
    "`,` (every stat is in `stats`)",
    "flow": "XProf: the `flow` stat",
    "dcn_collective_name": "XProf: NULL (TPU multi-slice traffic; not read)",
    "dcn_src_slice_id": "XProf: NULL",
    "dcn_dst_slice_id": "XProf: NULL",
    "dcn_src_logical_device_id": "XProf: NULL",
    "dcn_dst_logical_device_id": "XProf: NULL",
    "dcn_duration_us": "XProf: NULL",
    "dcn_payload_size_bytes": "XProf: NULL",
}
# Stats with a column of their own (left out of trace_args).
_STAT_COLUMNS = {
    "correlation_id": "correlation_id",
    "trace_category": "category",
    "kernel_details": "kernel_details",
    "hlo_op": "hlo_op",
    "hlo_module": "hlo_module",
    "flops": "flops",
    "memory_accessed": "bytes_accessed",
    "flow": "flow",
}
_NULLS = {
    "hlo_fingerprint": "uint",
    "input_tensors": "texts",
    "output_tensors": "texts",
    "dcn_collective_name": "text",
    "dcn_src_slice_id": "int",
    "dcn_dst_slice_id": "int",
    "dcn_src_logical_device_id": "int",
    "dcn_dst_logical_device_id": "int",
    "dcn_duration_us": "uint",
    "dcn_payload_size_bytes": "uint",
}


def device_name(plane: str) -> str:
    """XProf's ``device`` for a plane: ``cpu:0``, ``gpu:N``, ``TPU:N``..."""
    if plane.startswith("/host:CPU"):
        return "cpu:0"
    tail = plane.removeprefix("/device:")
    if tail.startswith("GPU:"):
        return "gpu:" + tail[4:]
    return tail


def line_category(profile: Profile, line_index: int) -> str:
    """XProf's ``category`` of a line's events."""
    from stepscope.vocab import xla

    line = profile.lines[line_index]
    if not profile.planes[line.plane].is_device:
        return "host"
    if line.name in xla.DERIVED_LINES or line.name in xla.ASYNC_LINES:
        return line.name
    return "device"


def _on_device(profile: Profile) -> np.ndarray:
    """Per event: on a device plane."""
    device = np.array([p.is_device for p in profile.planes], dtype=bool)
    return device[profile.plane] if len(device) else np.zeros(profile.n_events, bool)


def _stat_ids(profile: Profile, name: str) -> np.ndarray:
    """Per event, the string id of text stat ``name``, -1 where absent or not text."""
    return profile.stat(name).string_ids()


def _stat_int(profile: Profile, name: str) -> pa.Array:
    column = profile.stat(name)
    values = column.as_int()
    from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_UINT

    numeric = column.present & np.isin(column.kind, (KIND_INT, KIND_UINT, KIND_DOUBLE))
    return arrow.numbers(values, numeric)


def _framework_ops(profile: Profile) -> tuple[pa.Array, pa.Array]:
    """(tf_op_name, tf_op_type) of every event, as XProf parses them: TensorFlow's
    ``scope/op:Type`` names and ``tf_op`` stats, the framework op of XLA instructions
    (``jit(f)/jvp()/dot_general``: its type the last part of the path)."""
    from stepscope.stats.xla.xla_ops import xla_events
    from stepscope.vocab.opnames import JAX, TF, parse_op

    source = _stat_ids(profile, "tf_op")
    strings = profile.strings
    placeholders = [i for i in np.unique(source[source >= 0]).tolist() if strings[i].endswith(":")]
    if placeholders:  # XLA's ``XlaModule:``: the instruction's framework op names the op
        source = np.where(np.isin(source, placeholders), -1, source)
    source = np.where(source >= 0, source, profile.name)
    from_xla: set[int] = set()
    xla = xla_events(profile)
    if xla:  # device events only (XProf): a host launch carries its kernel's XLA stats too
        framework = xla.op_name_ids(np.arange(profile.n_events), framework_only=True)
        # ('' for instructions XLA made up, as XProf)
        framework[~_on_device(profile)] = -1
        source = np.where(framework >= 0, framework, source)
        from_xla = set(np.unique(framework[framework >= 0]).tolist())
    used = np.unique(source)
    names: list[str | None] = []
    types: list[str | None] = []
    for sid in used.tolist():
        text = strings[sid]
        if sid in from_xla:
            names.append(text)
            types.append(text.rstrip("/").rsplit("/", 1)[-1].split("[", 1)[0])
            continue
        op = parse_op(text)
        known = op.category in (TF, JAX)
        names.append(op.name if known else None)
        types.append((op.type or op.name.rsplit("/", 1)[-1]) if known else None)
    index = np.searchsorted(used, source)
    return arrow.labels(index, names), arrow.labels(index, types)


def _types(profile: Profile) -> tuple[pa.Array, pa.Array]:
    """(event_type, breakdown_category) of every event."""
    from stepscope.stats.events import CATEGORIES, CATEGORY_NAMES, EventType, classify_events

    types = classify_events(profile).astype(np.int32)
    ordered = list(EventType)
    index = np.where(types < 0, 0, types // 10 + 1)
    type_names = ["not_counted", *(t.name.lower() for t in ordered)]
    category_of: list[int] = [-1] * len(type_names)
    for c, name in enumerate(CATEGORY_NAMES):
        for t in CATEGORIES[name]:
            category_of[int(t) // 10 + 1] = c
    categories = np.asarray(category_of, np.int32)[index]
    return arrow.labels(index, type_names), arrow.labels(categories, list(CATEGORY_NAMES))


def events_table(
    host: str,
    profile: Profile,
    step_db: Callable[[], StepDb],
    wanted: Collection[str] | None = None,
) -> pa.Table:
    """One host's events; ``wanted``: the columns a query needs (None: all). Columns left out
    are the costly ones only (see the module docstring)."""
    from stepscope.stats.nesting import events_self_time

    n = profile.n_events
    planes = profile.planes
    lines = profile.lines

    def want(name: str) -> bool:
        return wanted is None or name in wanted

    host_line = np.array([not planes[line.plane].is_device for line in lines], dtype=bool)
    line_index = profile.line
    columns: dict[str, pa.Array] = {
        "host": arrow.constant(host, n),
        "event_id": arrow.numbers(np.arange(n, dtype=np.int64)),
        "device": arrow.labels(profile.plane, [device_name(p.name) for p in planes]),
        "plane": arrow.labels(profile.plane, [p.name for p in planes]),
        "line": arrow.labels(line_index, [line.label for line in lines]),
        "category": arrow.labels(
            line_index, [line_category(profile, i) for i in range(len(lines))]
        ),
    }
    if want("thread_id") or want("stream_id"):
        ids = np.array([line.id for line in lines], dtype=np.int64)
        on_host = host_line[line_index] if len(lines) else np.zeros(n, bool)
        per_event = ids[line_index] if len(lines) else np.zeros(n, np.int64)
        columns["thread_id"] = arrow.numbers((per_event & 0xFFFFFFFF).astype(np.uint32), on_host)
        columns["stream_id"] = arrow.numbers(per_event, ~on_host)
    columns["thread_name"] = arrow.labels(
        line_index, [line.label if host_line[i] else None for i, line in enumerate(lines)]
    )
    names = arrow.text(profile.name, arrow.strings(profile))
    columns["name"] = names
    columns["kernel_name"] = names
    columns["start_ns"] = arrow.numbers(profile.start_ns)
    columns["end_ns"] = arrow.numbers(profile.end_ns)
    columns["dur_ns"] = arrow.numbers(profile.dur_ns)
    if want("self_time_ns"):
        columns["self_time_ns"] = arrow.numbers(
            events_self_time(np.arange(n), profile.line, profile.start_ns, profile.end_ns)
        )
    if want("step_num") or want("step"):
        columns.update(step_columns(step_db(), profile.start_ns))
    if want("event_type") or want("breakdown_category"):
        columns["event_type"], columns["breakdown_category"] = _types(profile)
    for column, stat in _STAT_COLUMNS.items():
        if not want(column):
            continue
        if column in ("correlation_id", "flops", "memory_accessed", "flow"):
            columns[column] = _stat_int(profile, stat)
            continue
        ids = _stat_ids(profile, stat)
        if column in ("hlo_op", "hlo_module"):  # XProf: device ops' (launches carry them too)
            ids = np.where(_on_device(profile), ids, -1)
        columns[column] = arrow.text(ids, arrow.strings(profile))
    if want("tf_op_name") or want("tf_op_type"):
        columns["tf_op_name"], columns["tf_op_type"] = _framework_ops(profile)
    if want("source_line"):
        source = _stat_ids(profile, "source_info")
        other = _stat_ids(profile, "source")
        columns["source_line"] = arrow.text(
            np.where(source >= 0, source, other), arrow.strings(profile)
        )
    if want("trace_args"):
        columns["trace_args"] = stat_values.trace_args(
            profile, frozenset(_STAT_COLUMNS.values()) | {"tf_op", "source_info", "source"}
        )
    for column, kind in _NULLS.items():
        if want(column):
            columns[column] = arrow.nulls(n, kind)
    order = [c for c in COLUMNS if c in columns]
    return arrow.table({c: columns[c] for c in order})


COSTLY = frozenset(
    {
        "self_time_ns",
        "step_num",
        "step",
        "event_type",
        "breakdown_category",
        "trace_args",
        "tf_op_name",
        "tf_op_type",
        "source_line",
        "thread_id",
        "stream_id",
        *_STAT_COLUMNS,
        *_NULLS,
    }
)
