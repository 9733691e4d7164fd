"""Reading what a remote capture saved: events with absolute times, the Task Environment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stepscope.xspace.formats import load_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace


@dataclass
class Saved:
    start_ns: int  # profile_start_time (wall clock)
    stop_ns: int
    events: list[tuple[str, int, int]]  # (name, absolute start ns, duration ns)

    def named(self, name: str) -> list[tuple[str, int, int]]:
        return [e for e in self.events if e[0] == name]


def read_space(space: XSpace) -> Saved:
    env = next(p for p in space.planes if p.name == "Task Environment")
    times = {env.stat_metadata[s.metadata_id].name: s.uint64_value for s in env.stats}
    start = times["profile_start_time"]
    events = []
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                begin = start + line.timestamp_ns + event.offset_ps // 1000
                events.append((name, begin, event.duration_ps // 1000))
    return Saved(start, times["profile_stop_time"], events)


def read_saved(path: Path) -> Saved:
    return read_space(load_xspace(path))


class Training:
    """The ``training`` fixture's loop, as far as it went: ``steps`` finished so far."""

    steps = 0
