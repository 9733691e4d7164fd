"""One host's loop thread laid out event after event, for step-inference tests: the capture
began on it (`STARTED_ON_THREAD_STAT`), and each top-level event starts where the last one
ended plus a gap."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build


class Timeline:
    """The loop thread (line 1, "python") of one host's CPU plane; ``t`` (ms) is where the
    next event starts, ``plane`` takes other threads' lines."""

    def __init__(self) -> None:
        self.builder = XSpaceBuilder("host")
        self.plane = self.builder.plane("/host:CPU")
        self.plane.stats[STARTED_ON_THREAD_STAT] = 1
        self.line = self.plane.line(1, "python")
        self.t = 0.0

    def ev(
        self, name: str, dur: float, gap: float = 0.05, stats: dict[str, object] | None = None
    ) -> None:
        """``name`` for ``dur`` ms at ``t``, the next ``gap`` ms after its end."""
        self.line.event(name, int(self.t * MS), int(dur * MS), stats or {})
        self.t += dur + gap

    def profile(self) -> Profile:
        return build(self.builder)
