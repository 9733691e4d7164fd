"""Event typing (XProf's ``xprof/utils/event_span.h``): each event gets the type that decides where
its time goes.

Classification works on the string table (each distinct name is classified once) and is
broadcast to events through their name ids, so it costs O(distinct names) Python work and
O(events) NumPy work. Types are small ints; a higher value wins where events overlap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import IntEnum

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.stats.arrays import distinct_ids
from stepscope.stats.host.own_work import profiler_work
from stepscope.stats.kernel_rules import REDUCED_PRECISIONS, kernel_precision
from stepscope.vocab import profiler as profiler_names
from stepscope.vocab import pytorch as torch_names
from stepscope.vocab import tensorflow as tf_names
from stepscope.vocab import xla as xla_names
from stepscope.vocab.collectives import (
    is_device_collective,
    is_host_collective,
    is_waiting_frame,
)
from stepscope.vocab.serving import HF_GENERATE_EVENT, HF_PIPELINE_EVENT, HF_STREAM_EVENT

NOT_COUNTED = -1  # events that are bookkeeping, not work (markers, Eager* wrappers, annotations)


class EventType(IntEnum):
    UNKNOWN = 0
    # Two types XProf does not have (docs/jobs.md). HOST_ENCLOSING: host compute that holds a
    # whole collective inside it (a Python frame such as `backward`, an executor's Process):
    # the host thread is then waiting in the collective, not computing. HOST_COLLECTIVE: a
    # host thread running or waiting for a collective (gloo, MPI, c10d ops, XLA collectives
    # on CPU, TensorFlow's collective ops). Any other host work running meanwhile wins: the
    # collective is then overlapped, as device compute wins over device collectives.
    HOST_ENCLOSING = 10
    HOST_COLLECTIVE = 20
    HOST_COMPUTE = 30
    HOST_PREPROCESS = 40
    HOST_POSTPROCESS = 50
    HOST_BATCH_FORMATION = 60
    HOST_RUNTIME = 70
    HOST_COMPILE = 80
    HOST_TO_HOST = 90
    HOST_TO_DEVICE = 100
    HOST_PREPARE = 110
    DEVICE_COLLECTIVES = 120
    HOST_WAIT_INPUT = 130
    DEVICE_TO_DEVICE = 140
    DEVICE_TO_HOST = 150
    DEVICE_COMPUTE_32 = 160
    DEVICE_COMPUTE_16 = 170
    DEVICE_WAIT_DEVICE = 180
    DEVICE_WAIT_HOST = 190


# Overview categories, in display order, and the event types each one sums.
CATEGORIES: dict[str, tuple[EventType, ...]] = {
    "input": (EventType.HOST_WAIT_INPUT, EventType.HOST_TO_DEVICE, EventType.DEVICE_WAIT_HOST),
    "output": (EventType.DEVICE_TO_HOST,),
    "kernel_launch": (EventType.HOST_PREPARE,),
    # The host types XProf's CPU classifier never emits are host work too; folding them here
    # keeps the categories summing to the step time.
    "host_compute": (
        EventType.HOST_ENCLOSING,
        EventType.HOST_COMPUTE,
        EventType.HOST_PREPROCESS,
        EventType.HOST_POSTPROCESS,
        EventType.HOST_BATCH_FORMATION,
        EventType.HOST_RUNTIME,
        EventType.HOST_TO_HOST,
    ),
    "collective_wait": (EventType.HOST_COLLECTIVE,),
    "device_to_device": (EventType.DEVICE_TO_DEVICE, EventType.DEVICE_WAIT_DEVICE),
    "device_collectives": (EventType.DEVICE_COLLECTIVES,),
    "device_compute": (EventType.DEVICE_COMPUTE_32, EventType.DEVICE_COMPUTE_16),
    "compilation": (EventType.HOST_COMPILE,),
    "other": (EventType.UNKNOWN,),
}
CATEGORY_NAMES = tuple(CATEGORIES)
# How the overview, the pod viewer and the terminal report name each category (XProf's words).
CATEGORY_LABELS = {
    "input": "Input",
    "output": "Output",
    "kernel_launch": "Kernel launch",
    "host_compute": "Host compute",
    "collective_wait": "Collective wait",
    "device_to_device": "Device to device",
    "device_collectives": "Device collectives",
    "device_compute": "Device compute",
    "compilation": "Compilation",
    "other": "All others",
}
# The UI's colours of the categories and the order its stacked charts draw them in (bottom to
# top); served to the web UI by /api/categories, so labels and colours are defined only here.
# Input is red and device compute green, as users know them from TensorBoard's profiler.
CATEGORY_COLORS = {
    "device_compute": "#1e8e3e",
    "device_to_device": "#12b5cb",
    "device_collectives": "#e52592",
    "collective_wait": "#f06eaa",
    "host_compute": "#1a73e8",
    "kernel_launch": "#9334e6",
    "input": "#d93025",
    "output": "#f29900",
    "compilation": "#795548",
    "other": "#9aa0a6",
}


def category_table() -> list[dict[str, str]]:
    """Key, label and colour of each category, in the UI's stacking order."""
    return [
        {"key": key, "label": CATEGORY_LABELS[key], "color": color}
        for key, color in CATEGORY_COLORS.items()
    ]


TYPE_VALUES = np.array([int(t) for t in EventType], dtype=np.int16)

# stepscope's mark of a generate() or pipeline() call or of a streamed pipeline's batch
# (decisions 560, 616, 650) is a step's marker too, no work of its own: inside it, host time
# no op covers is untraced Python, as without the mark (563)
_STEP_MARKER_NAMES = (tf_names.KERAS_BATCH, HF_GENERATE_EVENT, HF_PIPELINE_EVENT, HF_STREAM_EVENT)
# Compilation events of XLA / TF / JAX / torch.compile; op names such as
# "compile_loss/..." (Keras) are ordinary ops, and "CompiledFunction" runs compiled code.
_COMPILE = re.compile(
    r"(^|::|:)(Xla|Tfrt|PjRt|Pjit)?Compil(?!ed)|^(backend_compile|compile_fx|_compile\.)"
    r"|^BuildExecutable|call_user_compiler"
)
_HALF = re.compile(r"half|fp16|bf16|bfloat16|f16\b", re.IGNORECASE)
# Lines of device planes that XProf derives from other lines (or that hold annotations and
# sync waits): their events are not device work.
_DERIVED_LINES = frozenset((*xla_names.DERIVED_LINES, *xla_names.ASYNC_LINES))
_NOT_WORK_CATEGORIES = ("gpu_user_annotation", "cuda_sync", "cpu_instant_event", "overhead")


def is_step_marker_name(name: str) -> bool:
    return (
        tf_names.is_explicit_step_marker(name)
        or torch_names.is_profiler_step(name)
        or name in _STEP_MARKER_NAMES
    )


def memcpy_kind(name: str) -> str | None:
    """'HToD', 'DToH', 'DToD', 'HToH' for memcpy events (XSpace or raw Kineto names)."""
    upper = name.upper().replace(" ", "")
    if not upper.startswith("MEMCPY"):
        return None
    for kind in ("HTOD", "DTOH", "DTOD", "HTOH", "PTOP", "P2P"):
        if upper.startswith(kind, 6):
            return {"HTOD": "HToD", "DTOH": "DToH", "HTOH": "HToH"}.get(kind, "DToD")
    return None


def is_input_wait_name(name: str) -> bool:
    return (
        tf_names.is_get_next(name)
        or torch_names.is_dataloader_next(name)
        or torch_names.is_dataloader_iter(name)
    )


def host_type_of_name(name: str) -> int:
    """Host event type by name alone (HOST_PREPARE and root iterators need stats: see below)."""
    if name.startswith(tf_names.EAGER_WRAPPERS) or is_step_marker_name(name):
        return NOT_COUNTED
    kind = memcpy_kind(name)
    op_type = name.rsplit(":", 1)[-1] if ":" in name else ""
    if kind == "HToD" or op_type in tf_names.INFEED_OPS:
        return EventType.HOST_TO_DEVICE
    if kind == "HToH":
        return EventType.HOST_TO_HOST
    if is_input_wait_name(name):
        return EventType.HOST_WAIT_INPUT
    if is_host_collective(name):
        return EventType.HOST_COLLECTIVE
    if _COMPILE.search(name):
        return EventType.HOST_COMPILE
    return EventType.HOST_COMPUTE


def device_type_of_name(name: str) -> int:
    kind = memcpy_kind(name)
    if kind == "HToD":
        return EventType.HOST_TO_DEVICE
    if kind == "DToH":
        return EventType.DEVICE_TO_HOST
    if kind is not None:
        return EventType.DEVICE_TO_DEVICE
    if is_device_collective(name):
        return EventType.DEVICE_COLLECTIVES
    # "16-bit" compute is XProf's name for reduced precision: fp16/bf16 and the 8/4-bit types
    reduced = kernel_precision(name) in REDUCED_PRECISIONS
    return EventType.DEVICE_COMPUTE_16 if reduced else EventType.DEVICE_COMPUTE_32


def _per_name(profile: Profile, classify: Callable[[str], int], ids: np.ndarray) -> np.ndarray:
    """``classify(text)`` as an int16 lookup table over string ids.

    Only the ids in ``ids`` (names of one side, or shape stats) are classified: stat values
    share the string table and can be far more numerous than names.
    """
    table = np.zeros(len(profile.strings), dtype=np.int16)
    used = distinct_ids(ids, len(profile.strings))
    strings = profile.strings.strings
    table[used] = [classify(strings[i]) for i in used.tolist()]
    return table


def on_device_plane(profile: Profile, events: np.ndarray) -> np.ndarray:
    """Per event of ``events``: True on a device plane, read through the events' lines (no
    column over every event)."""
    device_plane = np.array([p.is_device for p in profile.planes], dtype=bool)
    return device_plane.take(profile.line_plane.take(profile.line.take(events)))


def device_work_lines(profile: Profile) -> np.ndarray:
    """Per line: True for device-plane lines whose events are device work: the streams, or,
    on planes without any (TPU), the ``XLA Ops`` line."""
    out = np.zeros(len(profile.lines), dtype=bool)
    for plane in profile.planes:
        if not plane.is_device:
            continue
        lines = profile.lines[plane.first_line : plane.first_line + plane.line_count]
        work = [
            ln.index
            for ln in lines
            if ln.event_count
            and (ln.name or ln.display_name) not in _DERIVED_LINES
            and not (ln.name or ln.display_name).startswith(xla_names.ANNOTATION_LINE_PREFIXES)
        ]
        if not work:  # TPU planes: the ops line is the device's work
            work = [
                ln.index for ln in lines if ln.name == xla_names.XLA_OPS_LINE and ln.event_count
            ]
        out[work] = True
    return out


def host_lines(profile: Profile) -> np.ndarray:
    """Per line: True for lines of the ``/host:CPU`` plane (threads), less the Python stack
    sampler's lines (`stepscope.stats.host.python_samples`), the fetches the capture timed
    (`stepscope.capture.fetch_probe`) and the sampled threads' CPU time (`stats.host.
    thread_cpu`): observations, not work."""
    return np.array(
        [
            profile.planes[ln.plane].name == "/host:CPU" and ln.name not in _OBSERVATION_LINES
            for ln in profile.lines
        ],
        bool,
    )


_OBSERVATION_LINES = frozenset(
    {"Python samples", profiler_names.FETCHES_LINE, profiler_names.THREAD_CPU_LINE}
)


def loader_worker_lines(profile: Profile) -> np.ndarray:
    """Per line: True for the lines of DataLoader worker processes captured into the host
    plane (`stepscope.capture.loader_workers`): another process's work, never a step's
    thread."""
    return np.array(
        [
            profile.planes[ln.plane].name == "/host:CPU"
            and ln.name.startswith(torch_names.DATALOADER_WORKER_LINE)
            for ln in profile.lines
        ],
        bool,
    )


def tf_data_lines(profile: Profile) -> np.ndarray:
    """Per line: True for tf.data's own threads (`tf_names.TF_DATA_LINE_PREFIX`), whose map
    functions are ``_r`` roots and repeat once an element: the input pipeline's work, never
    a step's thread."""
    prefix = tf_names.TF_DATA_LINE_PREFIX
    return np.array([ln.name.startswith(prefix) for ln in profile.lines], bool)


def not_work_category(profile: Profile) -> np.ndarray:
    """Per event: True for Kineto categories that are not work (annotations, sync, instants)."""
    category = profile.stat("category").string_ids()
    ids = [profile.strings.id_of(c) for c in _NOT_WORK_CATEGORIES]
    ids = [i for i in ids if i >= 0]
    return np.isin(category, ids)  # all False without any of them


def classify_events(profile: Profile, has_device: bool | None = None) -> np.ndarray:
    """The `EventType` of every event (int16), NOT_COUNTED for events that are not work.
    The result is shared between callers: do not modify it.

    Host events: XProf's ClassifyCpuEvent (``xprof/convert/xplane_to_step_events.cc``); root
    input-pipeline stages (``Iterator::*`` without ``parent_id``) count as waiting for input;
    collective work of every framework (`stepscope.vocab.collectives`) is a type of its own. Device
    events: memcpy direction, NCCL/RCCL and XLA collectives, else 16- or 32-bit compute. Events on
    other planes (``/host:metadata``, ``Task Environment``, CUPTI overhead...) and the profilers'
    own start/stop work (`stepscope.stats.host.own_work`) are not counted.
    """
    return profile.derived(
        ("event_types", has_device), lambda: _read_only(_classify(profile, has_device))
    )


def _read_only(types: np.ndarray) -> np.ndarray:
    types.flags.writeable = False
    return types


def _classify(profile: Profile, has_device: bool | None) -> np.ndarray:
    n = profile.n_events
    out = np.full(n, NOT_COUNTED, dtype=np.int16)
    if n == 0:
        return out
    # a DataLoader worker's batches are another process's work: not counted in the steps'
    # time (the step's own wait for them is), read by the input pipeline analyzer instead
    on_host = (host_lines(profile) & ~loader_worker_lines(profile)).take(profile.line)
    on_device = device_work_lines(profile)[profile.line]
    if has_device is None:
        has_device = bool(on_device.any())
    # Each table classifies the names its side uses (a kernel name through the host rules,
    # or an op name through the device rules' precision patterns, is work for nothing).
    host_names = profile.name[on_host]
    out[on_host] = _per_name(profile, host_type_of_name, host_names)[host_names]
    del host_names
    if has_device:
        # XProf: with a device, host events that launch work (correlation id) or run executor
        # steps are "kernel launch" time.
        launch = profile.stat_present("correlation_id")  # no dense stat
        process_ids = profile.strings.ids_matching(
            lambda s: s.lower().startswith("executorstate::process")
        )
        launch |= np.isin(profile.name, process_ids)
        relabel = on_host & launch & (out == EventType.HOST_COMPUTE)
        out[relabel] = EventType.HOST_PREPARE
    iterator_ids = profile.strings.ids_matching(tf_names.is_iterator)
    if len(iterator_ids):
        root_stage = on_host & np.isin(profile.name, iterator_ids)
        root_stage[profile.stat_events("parent_id")] = False
        out[root_stage & (out == EventType.HOST_COMPUTE)] = EventType.HOST_WAIT_INPUT
    _mark_enclosing(profile, out)
    device_names = profile.name[on_device]
    out[on_device] = _per_name(profile, device_type_of_name, device_names)[device_names]
    del device_names
    # the shapes of the 32-bit device compute events that have them (no dense stat)
    compute = np.flatnonzero(on_device & (out == EventType.DEVICE_COMPUTE_32))
    at, shape_stat = profile.stat_among("tensor_shapes", compute)
    shapes = shape_stat.string_ids()
    with_shapes = compute[at[shapes >= 0]]
    shapes = shapes[shapes >= 0]
    if with_shapes.size:
        half = _per_name(profile, lambda s: 1 if _HALF.search(s) else 0, shapes)
        out[with_shapes[half[shapes] == 1]] = EventType.DEVICE_COMPUTE_16
    out[not_work_category(profile)] = NOT_COUNTED
    # a profiler's own start/stop (and what it calls) is the capture's work, no step's
    out[profiler_work(profile)] = NOT_COUNTED
    return out


def _mark_enclosing(profile: Profile, out: np.ndarray) -> None:
    """Host compute that waits with a collective becomes HOST_ENCLOSING, in place: an event
    holding a whole collective of its own thread within its span (AccumulateGrad around the
    `c10d::allreduce_` it waits in), or a frame that waits for other threads
    (`vocab.collectives.is_waiting_frame`: a Python frame such as `backward`, TensorFlow's
    `KernelAndDeviceFunc::Run` while the collective op runs on its own thread) holding a
    whole collective of any thread or spanning at least half of one. Any other event
    computes, whatever runs on another thread meanwhile: it stays compute and wins over the
    collective (see `EventType`) -- an `aten::mm` descheduled for 9 ms beside the tail of
    an all-reduce span on gloo's thread is not waiting in it.
    """
    colls = np.flatnonzero(out == EventType.HOST_COLLECTIVE)
    colls = colls[profile.dur_ns[colls] > 0]  # an instant is held by every span around it
    if not len(colls):
        return
    compute = np.flatnonzero(out == EventType.HOST_COMPUTE)
    _mark_inner(profile, out, colls, compute)
    compute = compute[out[compute] == EventType.HOST_COMPUTE]
    waits = np.zeros(len(compute), dtype=bool)
    c_lines = profile.line[colls]
    ev_lines = profile.line[compute]
    for line in distinct(c_lines).tolist():  # (a) a whole collective of its own thread
        mine = np.flatnonzero(ev_lines == line)
        if len(mine):
            waits[mine] = _holds(profile, colls[c_lines == line], compute[mine])
    frame_ids = profile.strings.ids_matching(is_waiting_frame)
    frames = np.flatnonzero(np.isin(profile.name[compute], frame_ids) & ~waits)
    if len(frames):
        waits[frames] = _holds(profile, colls, compute[frames], half=True)
    out[compute[waits]] = EventType.HOST_ENCLOSING


def _holds(
    profile: Profile, colls: np.ndarray, events: np.ndarray, half: bool = False
) -> np.ndarray:
    """Per event of ``events``: whether a whole collective of ``colls`` lies within its span
    or, with ``half``, it spans at least half of one."""
    order = np.argsort(profile.start_ns[colls], kind="stable")
    c_lo, c_hi = profile.start_ns[colls][order], profile.end_at(colls)[order]
    lo, hi = profile.start_ns[events], profile.end_at(events)
    n = len(c_lo)
    # of the collectives starting at or after the event's start, the earliest end
    suffix_min_end = np.minimum.accumulate(c_hi[::-1])[::-1]
    after = np.searchsorted(c_lo, lo, side="left")
    holds = (after < n) & (suffix_min_end[np.minimum(after, n - 1)] <= hi)
    if not half:
        return holds
    # the collective under way when the event starts that lasts longest (running argmax of
    # the ends), and the last one starting before the event ends: half of it or more
    reach = np.maximum.accumulate(c_hi)
    longest = np.searchsorted(reach, reach, side="left")  # first index reaching each max
    before = np.searchsorted(c_lo, lo, side="right") - 1
    inside = np.searchsorted(c_lo, hi, side="left") - 1

    def spans_half(k: np.ndarray) -> np.ndarray:
        j = np.maximum(k, 0)
        part = np.minimum(hi, c_hi[j]) - np.maximum(lo, c_lo[j])
        return (k >= 0) & (2 * part >= c_hi[j] - c_lo[j]) & (c_hi[j] > c_lo[j])

    under_way = np.where(before >= 0, longest[np.maximum(before, 0)], -1)
    return holds | spans_half(under_way) | spans_half(inside)


def _mark_inner(profile: Profile, out: np.ndarray, colls: np.ndarray, compute: np.ndarray) -> None:
    """Host compute nested in a collective on its own thread (TensorFlow's ring ``Loop`` inside
    ``CollectiveReduceV2``) is the collective's work: HOST_COLLECTIVE, in place."""
    lines = profile.line[colls]
    on_line = np.isin(profile.line[compute], lines)
    for line in distinct(lines).tolist():
        mine = colls[lines == line]
        order = np.argsort(profile.start_ns[mine], kind="stable")
        c_start = profile.start_ns[mine][order]
        c_reach = np.maximum.accumulate(profile.end_at(mine)[order])
        ev = compute[on_line & (profile.line[compute] == line)]
        k = np.searchsorted(c_start, profile.start_ns[ev], side="right") - 1
        inside = (k >= 0) & (profile.end_at(ev) <= c_reach[np.maximum(k, 0)])
        out[ev[inside]] = EventType.HOST_COLLECTIVE
