"""Merge one XSpace into another on one clock (framework bridges, several captures).

`merge_xspace(target, source, clock, window=..., line_ids=...)` moves every plane of
``source`` into ``target``:

- Times: an event of ``source`` happens at ``line.timestamp_ns + offset_ps / 1000`` in the
  source's clock; ``clock`` (a `ClockMap`) turns that into the target's time base (for a saved
  capture: ns relative to ``profile_start_time``). A constant shift rewrites line timestamps
  only; a rate (clock drift) rewrites every event.
- ``window`` (target ns, inclusive): events entirely outside it are dropped. A bridge's
  profiler runs a little longer than the recording (it is started before and stopped after),
  and what it saw outside the recording does not belong to the profile.
- Planes whose name ``target`` lacks are appended (ids after the existing ones). Same-named
  planes (``/host:CPU``) are merged: lines with the same id (the same OS thread) become one
  line, sorted by start (longer first), so a step marker and the framework ops it encloses
  nest; other lines are added. Event and stat metadata are re-interned by name. The plane
  with fewer events is the one re-interned, so merging a small capture into a big framework
  trace costs the small one's size.
- ``line_ids`` renames source lines first (``{plane name: {old id: new id}}``): TensorFlow and
  JAX name threads by hashed ids, and a bridge that knows which of them is a thread stepscope
  recorded maps it to that thread's OS id.
- ``Task Environment``: the target keeps its times and options; the source's other stats
  (``framework``, versions...) are added where the target has none of that name. The
  ``Task Environment`` plane stays last, where TensorFlow writes it.
- warnings and errors are appended; ``target``'s host names are kept.

``source`` is consumed: its planes are modified and moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from stepscope.records import record
from stepscope.vocab.pytorch import RECORDING_STOP_STAT
from stepscope.xspace.proto.xplane_pb2 import XEvent, XLine, XPlane, XSpace, XStat

TASK_ENV_PLANE = "Task Environment"
# Stats of a source's Task Environment that describe its own capture, not the merged one.
_OWN_ENV_STATS = frozenset(
    {
        "profile_start_time",
        "profile_stop_time",
        "profile_options",
        "baseTimeNanoseconds",
        RECORDING_STOP_STAT,
    }
)
PS_PER_NS = 1000


@record
class ClockMap:
    """Source ns -> target ns: ``t + offset_ns + round(rate * (t - anchor_ns))``."""

    offset_ns: int = 0
    rate: float = 0.0  # drift of the target clock per source ns (0 for a constant shift)
    anchor_ns: int = 0

    def __call__(self, t_ns: int) -> int:
        if not self.rate:
            return t_ns + self.offset_ns
        return t_ns + self.offset_ns + round(self.rate * (t_ns - self.anchor_ns))

    def shifted(self, ns: int) -> ClockMap:
        """This map followed by a constant shift of ``ns``."""
        return ClockMap(self.offset_ns + ns, self.rate, self.anchor_ns)


@record(frozen=False)
class MergeReport:
    """What `merge_xspace` did (for tests and messages)."""

    planes_added: int = 0
    lines_merged: int = 0
    events_moved: int = 0
    events_dropped: int = 0


def merge_xspace(
    target: XSpace,
    source: XSpace,
    clock: ClockMap | None = None,
    *,
    window: tuple[int, int] | None = None,
    line_ids: Mapping[str, Mapping[int, int]] | None = None,
) -> MergeReport:
    """Move ``source``'s planes into ``target`` (see the module docstring)."""
    clock = clock or ClockMap()
    report = MergeReport()
    by_name = {plane.name: plane for plane in target.planes}
    for src in source.planes:
        if src.name == TASK_ENV_PLANE:
            env = by_name.get(TASK_ENV_PLANE)
            if env is not None:
                _merge_env(env, src)
                continue
        renames = (line_ids or {}).get(src.name, {})
        for line in src.lines:
            line.id = renames.get(line.id, line.id)
            report.events_dropped += _retime_line(line, clock, window)
        report.events_moved += _event_count(src)
        dst = by_name.get(src.name)
        if dst is None:
            plane = target.planes.add()
            plane.CopyFrom(src)
            plane.id = max((p.id for p in target.planes), default=-1) + 1
            by_name[plane.name] = plane
            report.planes_added += 1
        else:
            report.lines_merged += _merge_planes(dst, src)
    target.warnings.extend(source.warnings)
    target.errors.extend(source.errors)
    _move_env_last(target)
    return report


def _event_count(plane: XPlane) -> int:
    return sum(len(line.events) for line in plane.lines)


def _line_extent_ns(line: XLine) -> tuple[int, int]:
    """(first start, last end) of a line's events, in its own clock."""
    base = line.timestamp_ns
    starts = [e.offset_ps for e in line.events if e.WhichOneof("data") == "offset_ps"]
    if not starts:
        return base, base
    ends = [e.offset_ps + e.duration_ps for e in line.events if e.WhichOneof("data") == "offset_ps"]
    return base + min(starts) // PS_PER_NS, base + max(ends) // PS_PER_NS


def _retime_line(line: XLine, clock: ClockMap, window: tuple[int, int] | None) -> int:
    """Map a line to the target clock, dropping events outside ``window``; returns the drops."""
    if not line.events:
        line.timestamp_ns = clock(line.timestamp_ns)
        return 0
    if clock.rate:  # drift: every event moves by a different amount
        base = clock(line.timestamp_ns)
        for event in line.events:
            if event.WhichOneof("data") == "offset_ps":
                start = line.timestamp_ns + event.offset_ps // PS_PER_NS
                event.offset_ps = (clock(start) - base) * PS_PER_NS + event.offset_ps % PS_PER_NS
        line.timestamp_ns = base
    else:
        line.timestamp_ns = clock(line.timestamp_ns)
    if window is None:
        return 0
    lo, hi = window
    first, last = _line_extent_ns(line)
    if lo <= first and last <= hi:
        return 0
    base_ps = line.timestamp_ns * PS_PER_NS
    kept = [
        e
        for e in line.events
        if e.WhichOneof("data") != "offset_ps"
        or (
            base_ps + e.offset_ps + e.duration_ps >= lo * PS_PER_NS
            and base_ps + e.offset_ps <= hi * PS_PER_NS
        )
    ]
    dropped = len(line.events) - len(kept)
    if dropped:
        _replace_events(line, kept)
    return dropped


def _replace_events(line: XLine, events: Iterable[XEvent]) -> None:
    fresh = XLine()
    fresh.events.extend(events)  # copies, so clearing the line below cannot touch them
    line.ClearField("events")
    line.events.extend(fresh.events)


def _merge_planes(dst: XPlane, src: XPlane) -> int:
    """Merge same-named planes into ``dst``; the smaller one is re-interned."""
    if _event_count(src) <= _event_count(dst):
        return _fold(dst, src, into_is_target=True)
    merged = XPlane()
    merged.CopyFrom(src)
    count = _fold(merged, dst, into_is_target=False)
    plane_id, name = dst.id, dst.name
    dst.CopyFrom(merged)
    dst.id, dst.name = plane_id, name
    return count


class _Interner:
    """Re-interns metadata ids of plane ``src`` into plane ``into``."""

    def __init__(self, into: XPlane, src: XPlane) -> None:
        self.into, self.src = into, src
        self.stat_ids = {meta.name: meta_id for meta_id, meta in into.stat_metadata.items()}
        self.event_ids = {
            (meta.name, meta.display_name): meta_id
            for meta_id, meta in into.event_metadata.items()
            if not meta.stats and not meta.metadata and not meta.child_id
        }
        self.stat_map: dict[int, int] = {}
        self.event_map: dict[int, int] = {}
        self.next_event_id = max(into.event_metadata.keys(), default=0) + 1

    def stat(self, src_id: int) -> int:
        found = self.stat_map.get(src_id)
        if found is not None:
            return found
        source = self.src.stat_metadata.get(src_id)
        name = source.name if source is not None else ""
        new_id = self.stat_ids.get(name)
        if new_id is None:
            new_id = max(self.into.stat_metadata.keys(), default=0) + 1
            meta = self.into.stat_metadata[new_id]
            if source is not None:
                meta.CopyFrom(source)
            meta.id, meta.name = new_id, name
            self.stat_ids[name] = new_id
        self.stat_map[src_id] = new_id
        return new_id

    def stats(self, stats: Iterable[XStat]) -> None:
        for stat in stats:
            stat.metadata_id = self.stat(stat.metadata_id)
            if stat.WhichOneof("value") == "ref_value":
                stat.ref_value = self.stat(stat.ref_value)

    def event(self, src_id: int) -> int:
        found = self.event_map.get(src_id)
        if found is not None:
            return found
        meta = self.src.event_metadata[src_id]
        plain = not meta.stats and not meta.metadata and not meta.child_id
        new_id = self.event_ids.get((meta.name, meta.display_name)) if plain else None
        if new_id is None:
            new_id = self.next_event_id
            self.next_event_id += 1
            copy = self.into.event_metadata[new_id]
            copy.CopyFrom(meta)
            copy.id = new_id
            self.stats(copy.stats)
            if plain:
                self.event_ids[(meta.name, meta.display_name)] = new_id
        self.event_map[src_id] = new_id
        return new_id


def _fold(into: XPlane, src: XPlane, into_is_target: bool) -> int:
    """Add ``src``'s lines, metadata and stats to ``into``; returns the lines merged."""
    interner = _Interner(into, src)
    _merge_plane_stats(into, src, interner, src_wins=not into_is_target)
    lines = {line.id: line for line in into.lines}
    merged = 0
    for src_line in src.lines:
        events = list(src_line.events)
        for event in events:
            event.metadata_id = interner.event(event.metadata_id)
            interner.stats(event.stats)
        line = lines.get(src_line.id)
        if line is None:
            line = into.lines.add()
            line.CopyFrom(src_line)
            lines[line.id] = line
            continue
        merged += 1
        if src_line.name and (not line.name or not into_is_target):
            line.name, line.display_name = src_line.name, src_line.display_name
        _combine(line, src_line)
    return merged


def _stat_names(plane: XPlane) -> set[str]:
    return {plane.stat_metadata[s.metadata_id].name for s in plane.stats}


def _merge_plane_stats(into: XPlane, src: XPlane, interner: _Interner, src_wins: bool) -> None:
    """Plane-level stats: the target's win over the source's of the same name."""
    src_names = _stat_names(src)
    if src_wins:
        keep = [s for s in into.stats if into.stat_metadata[s.metadata_id].name not in src_names]
        fresh = XPlane()
        fresh.stats.extend(keep)
        into.ClearField("stats")
        into.stats.extend(fresh.stats)
    have = _stat_names(into)
    for stat in src.stats:
        if src.stat_metadata[stat.metadata_id].name not in have:
            added = into.stats.add()
            added.CopyFrom(stat)
            interner.stats([added])


def _combine(line: XLine, other: XLine) -> None:
    """Append ``other``'s events (already re-interned) to ``line``, then sort."""
    base = min(line.timestamp_ns, other.timestamp_ns) if line.events else other.timestamp_ns
    if base != line.timestamp_ns:
        shift_ps = (line.timestamp_ns - base) * PS_PER_NS
        for event in line.events:
            if event.WhichOneof("data") == "offset_ps":
                event.offset_ps += shift_ps
        line.timestamp_ns = base
    shift_ps = (other.timestamp_ns - base) * PS_PER_NS
    start = len(line.events)
    line.events.extend(other.events)
    if shift_ps:
        for event in line.events[start:]:
            if event.WhichOneof("data") == "offset_ps":
                event.offset_ps += shift_ps
    _sort_line(line)


def _sort_line(line: XLine) -> None:
    offsets = np.fromiter((e.offset_ps for e in line.events), np.int64, len(line.events))
    durations = np.fromiter((e.duration_ps for e in line.events), np.int64, len(line.events))
    order = np.lexsort((-durations, offsets))
    if len(order) and np.any(order != np.arange(len(order))):
        events = list(line.events)
        _replace_events(line, [events[i] for i in order.tolist()])
    line.duration_ps = int((offsets + durations).max()) if len(offsets) else 0


def _merge_env(env: XPlane, src: XPlane) -> None:
    have = {env.stat_metadata[s.metadata_id].name for s in env.stats}
    interner = _Interner(env, src)
    for stat in src.stats:
        name = src.stat_metadata[stat.metadata_id].name
        if name in have or name in _OWN_ENV_STATS:
            continue
        added = env.stats.add()
        added.CopyFrom(stat)
        interner.stats([added])
        have.add(name)


def _move_env_last(space: XSpace) -> None:
    index = next((i for i, p in enumerate(space.planes) if p.name == TASK_ENV_PLANE), None)
    if index is None or index == len(space.planes) - 1:
        return
    env = XPlane()
    env.CopyFrom(space.planes[index])
    del space.planes[index]
    space.planes.add().CopyFrom(env)


def env_stats(space: XSpace) -> dict[str, int | float | str | bytes]:
    """The ``Task Environment`` stats of ``space`` by name (ref values resolved)."""
    env = next((p for p in space.planes if p.name == TASK_ENV_PLANE), None)
    if env is None:
        return {}
    out: dict[str, int | float | str | bytes] = {}
    for stat in env.stats:
        kind = stat.WhichOneof("value")
        if kind is None:
            continue
        value = getattr(stat, kind)
        if kind == "ref_value":
            value = env.stat_metadata[value].name
        out[env.stat_metadata[stat.metadata_id].name] = value
    return out
