"""The oracle's pass over ``traceEvents``: each event to its plane and line, with its stats,
one by one (the rules the column route, `fast_route`, applies with numpy; where the two read a
form otherwise on purpose, decision 210 says which and the tests assert the difference).

Decisions:

- ``ts`` / ``dur`` are microseconds (fractions allowed) in every Chrome trace, whatever
  ``displayTimeUnit`` says (it only sets the viewer's unit); absolute time in ns is
  ``baseTimeNanoseconds + round(ts * 1000)``, computed from the integer and fractional parts
  separately so that 16-digit timestamps lose no nanosecond. Negative durations become 0.
- Phases: ``X`` complete events; ``B``/``E`` pairs (matched per thread); ``i``/``I`` instants
  (``[memory]`` -> memory events, global-scope profiler markers dropped, others 0-length host
  events); ``s``/``f``/``t`` flows; ``M`` thread names. Other phases are counted in a warning.
- Host events: ``/host:CPU``, one line per (pid, tid): line id = tid (2021 files write tids as
  strings), or a synthetic id when another pid already uses that tid or the tid is not a number.
- ``user_annotation`` ``ProfilerStep#N`` keeps its name and gets ``step_num = N`` and
  ``_r = 1`` (a step root for XProf; stepscope reads the name); its ``gpu_user_annotation``
  copy gets ``step_num`` only. A host framework op named as a serving call's annotation
  (vLLM's ``execute_context_...``) gets ``_r = 1`` too.
- Device events: ``/device:GPU:N`` (N = ``device`` arg, else pid); kernels, memcpys and memsets
  on line ``Stream #S`` (id S = ``stream`` arg, else the tid, ``"stream 7"`` included), with
  ``device_id`` and ``stream`` always set; ``gpu_user_annotation`` on ``GPU annotations (Stream
  #S)`` and ``cuda_sync`` on ``CUDA sync (Stream #S)`` (both per stream: ranges from different
  streams overlap without nesting, and sync waits are not device work).
- Memcpys are renamed ``MEMCPYHToD`` ... (the names TensorFlow's GPU tracer gives them) with the
  Kineto name as display name, plus ``memcpy_details`` (``num_bytes:N kind_src:.. kind_dst:..``);
  memsets get ``memset_details``; kernels ``kernel_details``. NCCL args stay as they are.
- ``overhead`` events (CUPTI buffer requests) go to ``/host:CUPTI``, line ``Activity overhead``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import msgspec

from stepscope.limits import DURATION_LIMIT_NS, TIME_LIMIT_NS, TIME_LIMIT_TEXT
from stepscope.vocab.pytorch import is_profiler_step
from stepscope.vocab.serving import is_serving_annotation
from stepscope.xspace.builder import LineBuilder, PlaneBuilder, StatValue, XSpaceBuilder
from stepscope.xspace.kineto.categories import (
    CATEGORIES,
    DROPPED_ARGS,
    FRAMEWORK_OP_CATEGORIES,
    KERNEL_DROPPED_ARGS,
    LAUNCH_CATEGORIES,
    Kind,
    classify,
    convert_args,
    kernel_details,
    memcpy_details,
    memcpy_name,
    memset_details,
    step_number,
)
from stepscope.xspace.kineto.devices import (
    ANNOTATION_LINE_BASE,
    STREAM_ID_LIMIT,
    SYNC_LINE_BASE,
    normalize_tid,
    stream_of,
    us_to_ns,
)
from stepscope.xspace.kineto.state import CUPTI_PLANE, RouteState, ThreadKey
from tests.support.kineto_oracle.decode import NOT_AN_OBJECT, Entry, TraceEvent
from tests.support.kineto_oracle.memory import OpInterval, RawMemoryEvent

_MAX_US = ((1 << 62) - 1) // 1000  # the int ts that us_to_ns accepts
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class EventRouter(RouteState):
    """Routes trace events into an `XSpaceBuilder` one by one (see module docstring)."""

    def __init__(self, builder: XSpaceBuilder, base_ns: int) -> None:
        super().__init__(builder, base_ns)
        self.ops_by_thread: dict[ThreadKey, list[OpInterval]] = {}
        self.memory: list[RawMemoryEvent] = []
        self.open_ranges: dict[ThreadKey, list[TraceEvent]] = {}
        self.skipped: Counter[str] = Counter()
        self.flows: list[TraceEvent] = []  # type: ignore[assignment]

    # ---- the pass ----------------------------------------------------------------------
    def route_all(self, chunks: Iterable[list[Entry]]) -> None:
        for chunk in chunks:
            for event in chunk:
                if type(event) is not TraceEvent:
                    if event is NOT_AN_OBJECT:
                        self.skipped["entries that are not objects"] += 1
                    else:
                        self.skipped["malformed events (fields of unexpected types)"] += 1
                    continue
                try:
                    self.route(event)
                except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
                    # A field of an unexpected type (a list where an id belongs, ...): the
                    # rest of the trace is still worth reading.
                    self.skipped["malformed events (fields of unexpected types)"] += 1
        unfinished = sum(len(stack) for stack in self.open_ranges.values())
        if unfinished:
            self.skipped["'B' events without their 'E'"] += unfinished

    def route(self, event: TraceEvent) -> None:
        """One trace event to its plane and line (or to the flows, memory, thread names)."""
        ph = event.ph
        if ph == "X":
            self.complete(event, event.ts, event.dur, event.args)
        elif ph == "s" or ph == "f" or ph == "t":
            self.flows.append(event)
        elif ph == "i" or ph == "I":
            self.instant(event)
        elif ph == "M":
            if event.name == "thread_name":
                args = event.args
                if isinstance(args, dict) and isinstance(args.get("name"), str):
                    key = (event.pid, normalize_tid(event.tid))
                    self.thread_names[key] = args["name"]
        elif ph == "B" or ph == "E":
            self.begin_end(event, ph)
        else:
            self.skipped[f"events of unsupported phase {str(ph)[:20]!r}"] += 1

    def to_ns(self, value: Any) -> int | None:
        """Absolute ns of a ``ts`` in microseconds; None when it is not a number."""
        relative = us_to_ns(value)
        return None if relative is None else self.base_ns + relative

    def complete(self, event: TraceEvent, ts: Any, dur: Any, args: Any) -> None:
        cat = event.cat
        kind_cat = CATEGORIES.get(cat) if type(cat) is str else None
        kind, category = kind_cat if kind_cat is not None else classify(cat, args)
        if type(ts) is int and -_MAX_US <= ts <= _MAX_US:  # the usual case, without a call
            start = self.base_ns + ts * 1000
        else:
            converted = self.to_ns(ts)
            if converted is None:
                self.skipped["events without a valid timestamp"] += 1
                return
            start = converted
        dur_ns = dur * 1000 if type(dur) is int else (us_to_ns(dur) or 0)
        if dur_ns < 0:
            dur_ns = 0
        if not (start > -TIME_LIMIT_NS and start + dur_ns < TIME_LIMIT_NS):
            self.skipped[f"events with times beyond {TIME_LIMIT_TEXT}"] += 1
            return
        if dur_ns > DURATION_LIMIT_NS:
            self.skipped["events lasting more than 106 days"] += 1
            return
        name = event.name
        if type(name) is not str:
            name = "" if name is None else str(name)
        if type(args) is dict and args:
            stats = convert_args(
                args, KERNEL_DROPPED_ARGS if category == "kernel" else DROPPED_ARGS
            )
        else:
            stats = {}
        if kind is Kind.HOST:
            self._host(event, ts, name, category, start, dur_ns, stats)
        elif kind is Kind.SKIP:
            self.spans.append((start, start + dur_ns))
        elif kind is Kind.OVERHEAD:
            plane = self.builder.plane(CUPTI_PLANE)
            self.emit(
                plane, plane.line(0, "Activity overhead"), name, "", start, dur_ns, stats, category
            )
        else:
            self._device(
                event,
                ts,
                kind,
                name,
                category,
                start,
                dur_ns,
                stats,
                args if type(args) is dict else {},
            )

    def _host(
        self,
        event: TraceEvent,
        ts: Any,
        name: str,
        category: str,
        start: int,
        dur_ns: int,
        stats: dict[str, StatValue],
    ) -> None:
        pid = event.pid
        tid = event.tid
        if type(tid) is not int:
            tid = normalize_tid(tid)
        if type(tid) is int and not _INT64_MIN <= tid <= _INT64_MAX:
            raise OverflowError("thread id does not fit 64 bits")  # this event is skipped
        key = (pid, tid)
        line = self.host_lines.get(key)
        if line is None:  # (not `or`: an empty LineBuilder is falsy)
            line = self.host_line(key)
        if category in FRAMEWORK_OP_CATEGORIES:
            self.ops_by_start.setdefault((pid, tid, ts), (line, len(line)))
            if category == "cpu_op":
                self.ops_by_thread.setdefault(key, []).append((start, start + dur_ns, name))
            if is_profiler_step(name):  # a user_annotation; an Operator in 2021
                step = step_number(name)
                if step is not None:
                    stats["step_num"] = step
                    stats["_r"] = 1
            elif is_serving_annotation(name):  # vLLM's execute_context_...: a root too
                stats["_r"] = 1
        elif category in LAUNCH_CATEGORIES and "correlation_id" not in stats:
            self.uncorrelated[(pid, tid, ts)] = (line, len(line))
        self.emit(self.host, line, name, "", start, dur_ns, stats, category)

    def _device(
        self,
        event: TraceEvent,
        ts: Any,
        kind: Kind,
        name: str,
        category: str,
        start: int,
        dur_ns: int,
        stats: dict[str, StatValue],
        args: dict[str, Any],
    ) -> None:
        pid = event.pid
        device = args.get("device")
        if type(device) is not int:
            device = pid if type(pid) is int and pid >= 0 else 0
        stream = args.get("stream")
        if type(stream) is not int:
            stream = stream_of(event.tid)
            if stream is None:
                stream = 0
        if not -STREAM_ID_LIMIT < stream < STREAM_ID_LIMIT:
            self.skipped[f"device events with a stream id beyond +-{STREAM_ID_LIMIT}"] += 1
            return
        plane = self.device_planes.get(device)
        if plane is None:
            plane = self.device_planes[device] = self.builder.plane(f"/device:GPU:{device}")
        display = ""
        if kind is Kind.DEVICE:
            line = plane.line(stream, f"Stream #{stream}")
            stats.setdefault("device_id", device)
            stats.setdefault("stream", stream)
            if category == "kernel":
                details = kernel_details(args)
                if details is not None:
                    stats["kernel_details"] = details
            elif category == "gpu_memcpy":
                display = name
                name, src, dst = memcpy_name(name, args)
                stats["memcpy_details"] = memcpy_details(args, src, dst)
            elif category == "gpu_memset":
                stats["memset_details"] = memset_details(name, args)
            if "correlation_id" not in stats:
                key = (pid, normalize_tid(event.tid), ts)
                self.uncorrelated[key] = (line, len(line))
        elif kind is Kind.GPU_ANNOTATION:
            line = plane.line(ANNOTATION_LINE_BASE + stream, f"GPU annotations (Stream #{stream})")
            step = step_number(name)
            if step is not None:
                stats["step_num"] = step
        else:
            line = plane.line(SYNC_LINE_BASE + stream, f"CUDA sync (Stream #{stream})")
        self.emit(plane, line, name, display, start, dur_ns, stats, category)

    def emit(
        self,
        plane: PlaneBuilder,
        line: LineBuilder,
        name: str,
        display: str,
        start: int,
        dur_ns: int,
        stats: dict[str, StatValue],
        category: str,
    ) -> None:
        key = (plane.name, name, display)
        known = self.metadata.get(key)
        if known is None:
            meta_id = plane.event_metadata_id(name, display, {"category": category})
            self.metadata[key] = (meta_id, category)
        else:
            meta_id = known[0]
            if known[1] != category:
                stats["category"] = category
        line.add_event(meta_id, start, dur_ns, stats)

    def instant(self, event: TraceEvent) -> None:
        if event.name == "[memory]":
            start = self.to_ns(event.ts)
            args = event.args
            if start is None or not isinstance(args, dict):
                self.skipped["[memory] events without a timestamp or args"] += 1
                return
            if any(type(v) is int and not _INT64_MIN <= v <= _INT64_MAX for v in args.values()):
                self.skipped["[memory] events with values beyond 64 bits"] += 1
                return
            self.memory.append((start, (event.pid, normalize_tid(event.tid)), args))
            return
        if event.s == "g" or type(event.pid) is not int:
            return  # profiler markers ("Iteration Start", "Record Window End")
        if event.cat is None:
            event = msgspec.structs.replace(event, cat="cpu_instant_event")
        self.complete(event, event.ts, 0, event.args)

    def begin_end(self, event: TraceEvent, ph: str) -> None:
        key = (event.pid, normalize_tid(event.tid))
        if ph == "B":
            self.open_ranges.setdefault(key, []).append(event)
            return
        stack = self.open_ranges.get(key)
        if not stack:
            self.skipped["'E' events without their 'B'"] += 1
            return
        begin = stack.pop()
        start, end = self.to_ns(begin.ts), self.to_ns(event.ts)
        if start is None or end is None:
            self.skipped["events without a valid timestamp"] += 1
            return
        args = {**(begin.args or {}), **(event.args or {})}
        self.complete(begin, begin.ts, (end - start) / 1000, args)
