"""What an XSpace says, with metadata ids resolved to names: two writers of one profile that
number metadata differently describe it the same."""

from __future__ import annotations

from collections import Counter
from typing import Any

from stepscope.xspace.proto.xplane_pb2 import XPlane, XSpace, XStat


def _stat(plane: XPlane, stat: XStat) -> tuple[str, str, object]:
    which = stat.WhichOneof("value") or ""
    value: object = getattr(stat, which) if which else None
    if which == "ref_value":
        value = plane.stat_metadata[stat.ref_value].name
    return plane.stat_metadata[stat.metadata_id].name, which, value


def _stats(plane: XPlane, stats: Any) -> tuple[tuple[str, str, object], ...]:
    return tuple(sorted((_stat(plane, s) for s in stats), key=repr))


def describe(space: XSpace) -> dict[str, Any]:
    """Planes by name -> stats, and lines by id -> fields and events (in order), every id
    resolved; the event metadata each event names (with its own stats) stands in its place."""
    planes: dict[str, Any] = {}
    for plane in space.planes:
        lines = {}
        for line in plane.lines:
            events = []
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                events.append(
                    (
                        meta.name,
                        meta.display_name,
                        _stats(plane, meta.stats),
                        line.timestamp_ns * 1000 + event.offset_ps,
                        event.duration_ps,
                        _stats(plane, event.stats),
                    )
                )
            lines[line.id] = (line.name, line.display_name, line.display_id, events)
        planes[plane.name] = {"stats": _stats(plane, plane.stats), "lines": lines}
    return {
        "planes": planes,
        "plane_order": [p.name for p in space.planes],
        "hostnames": list(space.hostnames),
        "warnings": list(space.warnings),
        "errors": list(space.errors),
    }


def counts(space: XSpace) -> dict[str, Counter[str]]:
    """Per plane, the events by name (a summary to print when two descriptions differ)."""
    return {
        plane.name: Counter(
            plane.event_metadata[e.metadata_id].name for line in plane.lines for e in line.events
        )
        for plane in space.planes
    }
