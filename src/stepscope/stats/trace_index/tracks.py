"""How a profile's planes and lines become the trace viewer's sections and tracks, and where
its training steps are (for "fit to step").

Sections: one per plane that has events, devices first (by name), then ``/host:CPU`` shown as
"Host Threads", then the other planes. Tracks: one per line; on devices the derived lines
(Steps, XLA Modules, XLA Ops, Framework Ops...) come before the streams, as XProf shows them;
host threads are ordered by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.model import Line, Plane, Profile

# Lines of device planes that are derived from the streams rather than activity of their own.
DERIVED_LINES = (
    "Steps",
    "XLA Modules",
    "XLA Ops",
    "XLA TraceMe",
    "Framework Name Scope",
    "Framework Ops",
    "Source code",
    "Launch Stats",
    "_counters_",
)
_DERIVED_PREFIXES = ("GPU annotations", "CUDA sync", "Activity overhead")
HOST_SECTION = "Host Threads"
STEP_NAMES = ("train", "test", "TraceContext")
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
MAX_STEPS = 100_000


def is_stream_line(line: Line) -> bool:
    """Whether a device line is real activity (a stream), not a derived summary line."""
    name = line.name or line.display_name
    return name not in DERIVED_LINES and not name.startswith(_DERIVED_PREFIXES)


@dataclass(frozen=True)
class Track:
    line: int  # index into profile.lines
    name: str
    line_id: int
    events: int
    depth_count: int  # number of stacked rows (max nesting depth + 1)


@dataclass(frozen=True)
class Section:
    name: str
    plane: int
    kind: str  # "device" | "host" | "other"
    tracks: tuple[Track, ...]


def _track_key(plane: Plane, line: Line) -> tuple[int, int, str]:
    if plane.is_device:
        derived = line.name in DERIVED_LINES
        rank = DERIVED_LINES.index(line.name) if derived else len(DERIVED_LINES)
        return (rank, 0 if derived else line.id, "")
    return (0, 0, line.label.lower())


def sections(profile: Profile, depth_count: np.ndarray) -> list[Section]:
    """The sections of the timeline; ``depth_count[line]`` is each line's number of rows."""
    out: list[Section] = []
    for plane in profile.planes:
        lines = [
            line
            for line in profile.lines[plane.first_line : plane.first_line + plane.line_count]
            if line.event_count > 0
        ]
        if not lines:
            continue
        # a "Python samples" line (the stack sampler's) right below the thread it samples
        label = {line.id: line.label.lower() for line in lines if line.name != "Python samples"}
        lines.sort(
            key=lambda line: (
                (0, 0, label.get(line.display_id, line.label.lower()) + "\uffff")
                if line.name == "Python samples" and not plane.is_device
                else _track_key(plane, line)
            )
        )
        tracks = tuple(
            Track(line.index, line.label, line.id, line.event_count, int(depth_count[line.index]))
            for line in lines
        )
        if plane.is_device:
            kind, name = "device", plane.name
        elif plane.name == "/host:CPU":
            kind, name = "host", HOST_SECTION
        else:
            kind, name = "other", plane.name
        out.append(Section(name, plane.index, kind, tracks))
    rank = {"device": 0, "host": 1, "other": 2}
    out.sort(key=lambda s: (rank[s.kind], s.name if s.kind == "device" else "", s.plane))
    return out


@dataclass(frozen=True)
class Steps:
    number: np.ndarray  # int64 step number
    start_ns: np.ndarray  # int64, absolute
    dur_ns: np.ndarray  # int64
    event: np.ndarray  # int64 event index of the step marker


def find_steps(profile: Profile) -> Steps:
    """Step markers: TF ``train``-style events with ``_r`` and ``step_num``; else PyTorch
    ``ProfilerStep#N``; else events of device ``Steps`` lines; else any ``step_num`` event.
    """
    names = profile.strings
    step_num = profile.stat("step_num")
    candidates: list[np.ndarray] = []
    if step_num.present.any():
        root = profile.stat("_r").present
        ids = [names.id_of(n) for n in STEP_NAMES if names.id_of(n) >= 0]
        marked = np.flatnonzero(step_num.present & root & np.isin(profile.name, ids))
        candidates.append(marked)
    pt_ids = {
        i: int(m.group(1)) for i, s in enumerate(names.strings) if (m := _PROFILER_STEP.match(s))
    }
    if pt_ids:
        candidates.append(np.flatnonzero(np.isin(profile.name, list(pt_ids))))
    step_lines = [line for line in profile.lines if line.name == "Steps" and line.event_count]
    if step_lines:
        candidates.append(
            np.concatenate(
                [
                    np.arange(*profile.events_of_line(line).indices(profile.n_events))
                    for line in step_lines
                ]
            )
        )
    if step_num.present.any():
        candidates.append(np.flatnonzero(step_num.present & (profile.dur_ns > 0)))
    chosen = next((c for c in candidates if len(c)), np.zeros(0, np.int64))
    chosen = chosen[np.argsort(profile.start_ns[chosen], kind="stable")][:MAX_STEPS]
    numbers = step_num.as_int(-1)[chosen]
    if pt_ids and len(chosen) and np.all(numbers < 0):
        numbers = np.array([pt_ids.get(int(n), -1) for n in profile.name[chosen]], np.int64)
    missing = numbers < 0
    numbers[missing] = np.arange(len(chosen))[missing]
    return Steps(
        numbers.astype(np.int64),
        profile.start_ns[chosen].astype(np.int64),
        profile.dur_ns[chosen].astype(np.int64),
        chosen.astype(np.int64),
    )
