"""How a profile's planes and lines become the trace viewer's sections and tracks, and where
its training steps are (for "fit to step").

Sections: one per plane that has events, devices first (by name), then ``/host:CPU`` shown as
"Host Threads", then the other planes. Tracks: one per line; on devices the derived lines
(Steps, XLA Modules, XLA Ops, Framework Ops...) come before the streams, as XProf shows them;
host threads are ordered by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from stepscope.model import Line, Plane, Profile
from stepscope.records import record
from stepscope.vocab.xla import ANNOTATION_LINE_PREFIXES, DERIVED_LINES

if TYPE_CHECKING:
    from stepscope.stats.steps.breakdown import StepDb

# Lines of device planes that are derived from the streams rather than activity of their own
# (shown above the streams, in this order), and Kineto's overhead lines.
_DERIVED_PREFIXES = (*ANNOTATION_LINE_PREFIXES, "Activity overhead")
HOST_SECTION = "Host Threads"
MAX_STEPS = 100_000


def is_stream_line(line: Line) -> bool:
    """Whether a device line is real activity (a stream), not a derived summary line."""
    name = line.name or line.display_name
    return name not in DERIVED_LINES and not name.startswith(_DERIVED_PREFIXES)


@record
class Track:
    line: int  # index into profile.lines
    name: str
    line_id: int
    events: int
    depth_count: int  # number of stacked rows (max nesting depth + 1)


@record
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


@record
class Steps:
    number: np.ndarray  # int64 step number
    start_ns: np.ndarray  # int64, absolute
    dur_ns: np.ndarray  # int64
    event: np.ndarray  # int64 event index of the step marker


def find_steps(profile: Profile, step_db: Callable[[], StepDb] | None = None) -> Steps:
    """The steps of the step database (`stepscope.stats.steps.breakdown`), the ones the
    overview and every other tool show (at most ``MAX_STEPS``). ``step_db``: where the
    caller keeps that database (a tool's store shares it between tools), else it is built."""
    from stepscope.stats.steps.breakdown import build_step_db

    db = step_db() if step_db is not None else build_step_db(profile)
    order = np.argsort(db.start_ns, kind="stable")[:MAX_STEPS]
    event = db.event[order] if len(db.event) == db.n_steps else np.full(len(order), -1)
    return Steps(
        db.step_num[order].astype(np.int64),
        db.start_ns[order].astype(np.int64),
        db.dur_ns[order].astype(np.int64),
        event.astype(np.int64),
    )
