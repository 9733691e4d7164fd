"""Align a framework profiler's clock with stepscope's, from marker events both can see.

PyTorch (Kineto) and TensorFlow / JAX (TSL) time events with their own fast clocks (TSC
readings converted to Unix time with a calibration made at start-up). Measured on the
development machine, those clocks sat 4-8 us away from ``time.time_ns()`` and drift a little
from it: enough to put a framework op ending just before ``stepscope.step`` ends after the
step, where it no longer nests. So a bridge does not trust the framework's Unix time: it emits
a few marker events while reading ``time.perf_counter_ns()`` (the clock stepscope's own
events use) right before and after each. A marker the framework stamped at ``[s, e]`` inside
a bracket ``[a, b]`` gives ``s - a >= delta >= e - b`` for the offset ``delta = framework -
perf_counter``; the intersection over a batch of markers pins ``delta`` to about a
microsecond (the Python cost of one bracket). A batch right after the framework's profiler
starts and another right before it stops give the offset at both ends; their difference, if
larger than the uncertainty, is drift, corrected linearly.

Markers run outside the recording window (before it begins, after it ends), so the merge
drops them with everything else the framework saw outside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import field

import numpy as np

from stepscope.records import record

TYPE_CHECKING = False  # not typing's, and the merge and protobuf only where used:
if TYPE_CHECKING:  # a bridge makes its ClockSync in `stepscope.start` (decision 1080)
    from stepscope.xspace.merge import ClockMap
    from stepscope.xspace.proto.xplane_pb2 import XPlane
    from stepscope.xspace.wire import RawColumns

SYNC_PREFIX = "stepscope.clock_sync."
DEFAULT_MARKERS = 8

# probe(name) emits one marker event called ``name`` and returns perf_counter_ns (before,
# after) around the part of it the framework timestamps.
Probe = Callable[[str], tuple[int, int]]


@record
class Marker:
    name: str
    before_ns: int  # perf_counter_ns
    after_ns: int
    thread: int  # OS thread id that emitted it
    batch: int  # 0 at start, 1 at stop
    ident: int = 0  # threading.get_ident() of that thread (pthread_self)


@record
class Estimate:
    """One batch's offset ``framework ns - perf_counter ns``, within +/- ``half_width_ns``."""

    at_ns: int  # framework time of the batch
    offset_ns: int
    half_width_ns: int


@record(frozen=False)
class ClockSync:
    """Markers emitted so far, and the fallback pair for frameworks that record none."""

    markers: list[Marker] = field(default_factory=list)
    wall_ns: int = 0  # time.time_ns() and perf_counter_ns() taken together
    perf_ns: int = 0

    def __post_init__(self) -> None:
        self.perf_ns = time.perf_counter_ns()
        self.wall_ns = time.time_ns()

    def emit(self, probe: Probe, batch: int, count: int = DEFAULT_MARKERS) -> None:
        thread, ident = threading.get_native_id(), threading.get_ident()
        for _ in range(count):
            name = f"{SYNC_PREFIX}{len(self.markers)}"
            before, after = probe(name)
            self.markers.append(Marker(name, before, after, thread, batch, ident))

    def clock_map(self, stamps: dict[str, tuple[int, int]]) -> tuple[ClockMap, str]:
        """Framework ns -> perf_counter ns, from the framework's (start, end) of each marker.

        Returns the map and how it was found (for the profile's warnings when it is a guess).
        """
        from stepscope.xspace.merge import ClockMap

        estimates = [est for batch in (0, 1) if (est := self._estimate(batch, stamps)) is not None]
        if not estimates:
            # No marker reached the framework's trace: assume its clock is Unix time.
            return ClockMap(self.perf_ns - self.wall_ns), "unix time (no clock markers found)"
        first, last = estimates[0], estimates[-1]
        drift = last.offset_ns - first.offset_ns
        span = last.at_ns - first.at_ns
        if (
            len(estimates) == 1
            or span <= 0
            or abs(drift) <= first.half_width_ns + last.half_width_ns
        ):
            mean = round(sum(e.offset_ns for e in estimates) / len(estimates))
            return ClockMap(-mean), f"markers (+/- {max(e.half_width_ns for e in estimates)} ns)"
        return (
            ClockMap(-first.offset_ns, -drift / span, first.at_ns),
            f"markers with drift correction ({drift} ns over {span / 1e9:.1f} s)",
        )

    def _estimate(self, batch: int, stamps: dict[str, tuple[int, int]]) -> Estimate | None:
        bounds = []
        for marker in self.markers:
            if marker.batch != batch or marker.name not in stamps:
                continue
            start, end = stamps[marker.name]
            bounds.append((end - marker.after_ns, start - marker.before_ns, start))
        if not bounds:
            return None
        lo = max(b[0] for b in bounds)
        hi = min(b[1] for b in bounds)
        if lo > hi:  # inconsistent brackets (a preempted probe): trust the narrowest one
            lo, hi, _ = min(bounds, key=lambda b: b[1] - b[0])
        return Estimate(bounds[0][2], (lo + hi) // 2, (hi - lo + 1) // 2)

    def threads(self) -> dict[str, int]:
        """Marker name -> the OS thread that emitted it (to map framework thread lines)."""
        return {m.name: m.thread for m in self.markers}

    def idents(self) -> dict[str, int]:
        """Marker name -> ``threading.get_ident()`` of the thread that emitted it."""
        return {m.name: m.ident for m in self.markers}


@record(frozen=False)
class FoundMarkers:
    """Where a framework's trace holds the markers: stamps as stored, and their lines."""

    stamps: dict[str, tuple[int, int]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # marker name -> line id


def find_markers(plane: XPlane, child: str | None = None) -> FoundMarkers:
    """The sync markers on ``plane`` (times as stored: line timestamp + offset).

    With ``child``, a marker's stamp is that of the first event named ``child`` nested in it
    (PyTorch: the annotation wraps one tiny op, whose dispatcher timestamps are tighter).
    """
    found = FoundMarkers()
    ids = {
        meta_id: meta.name
        for meta_id, meta in plane.event_metadata.items()
        if meta.name.startswith(SYNC_PREFIX)
    }
    if not ids:
        return found
    child_ids = {i for i, m in plane.event_metadata.items() if m.name == child}
    for line in plane.lines:
        events = line.events
        metas = [e.metadata_id for e in events]
        for index, meta_id in enumerate(metas):
            name = ids.get(meta_id)
            if name is None:
                continue
            event = events[index]
            start = event.offset_ps
            end = start + event.duration_ps
            if child is not None:
                inner = next(
                    (
                        events[k]
                        for k in range(index + 1, min(index + 8, len(events)))
                        if metas[k] in child_ids and start <= events[k].offset_ps <= end
                    ),
                    None,
                )
                if inner is None:
                    continue
                start, end = inner.offset_ps, inner.offset_ps + inner.duration_ps
            base = line.timestamp_ns
            found.stamps[name] = (base + start // 1000, base + end // 1000)
            found.lines[name] = line.id
    return found


def find_markers_in_columns(
    raw: RawColumns, plane_name: str, child: str | None = None
) -> FoundMarkers:
    """`find_markers` on the plane named ``plane_name`` of raw columns."""
    found = FoundMarkers()
    plane = next((k for k, h in enumerate(raw.plane_headers) if h.name == plane_name), None)
    if plane is None:
        return found
    header = raw.plane_headers[plane]
    ids = {i: m.name for i, m in header.event_metadata.items() if m.name.startswith(SYNC_PREFIX)}
    if not ids:
        return found
    child_ids = np.array([i for i, m in header.event_metadata.items() if m.name == child])
    on_plane = np.array([line.plane == plane for line in raw.lines], bool)
    hits = np.flatnonzero(np.isin(raw.ev_meta, list(ids)) & on_plane[raw.ev_line])
    for at in hits.tolist():
        line = raw.lines[int(raw.ev_line[at])]
        start = int(raw.ev_offset_ps[at])
        end = start + int(raw.ev_duration_ps[at])
        if child is not None:
            stop = min(at + 8, line.first_event + line.event_count)
            near = np.arange(at + 1, stop)
            inside = near[
                np.isin(raw.ev_meta[near], child_ids)
                & (raw.ev_offset_ps[near] >= start)
                & (raw.ev_offset_ps[near] <= end)
            ]
            if not len(inside):
                continue
            inner = int(inside[0])
            start = int(raw.ev_offset_ps[inner])
            end = start + int(raw.ev_duration_ps[inner])
        base = line.timestamp_ns
        found.stamps[ids[int(raw.ev_meta[at])]] = (base + start // 1000, base + end // 1000)
        found.lines[ids[int(raw.ev_meta[at])]] = line.id
    return found
