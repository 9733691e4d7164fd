"""The step types shared by every step source: what a found step is, before its work is
attributed. Kept apart from the finders so that `markers` and `infer` both depend on it and
not on each other."""

from __future__ import annotations

import numpy as np

from stepscope.records import record
from stepscope.stats.steps.sources import SOURCES

__all__ = ["DROP_THRESHOLD", "NO_MARKERS_TAIL", "SOURCES", "StepMarkers", "drop_note", "with_note"]

DROP_THRESHOLD = 5  # XProf: drop the first and last step when there are more than this many
# how an inferred source's description ends (`infer`): a note added later goes before it
NO_MARKERS_TAIL = " (no step markers in the profile)"


def with_note(description: str, note: str) -> str:
    """``description`` with ``"; note"`` added, before its closing `NO_MARKERS_TAIL`."""
    if description.endswith(NO_MARKERS_TAIL):
        return f"{description[: -len(NO_MARKERS_TAIL)]}; {note}{NO_MARKERS_TAIL}"
    return f"{description}; {note}"


@record
class StepMarkers:
    """The candidate steps of a profile, before their work is attributed. Rows are in start
    order (ties: the marker listed first in the profile); the breakdown reads step k as the
    k-th window in time."""

    source: str  # one of SOURCES, or "none"
    description: str  # how the steps were found, for people
    event: np.ndarray  # int64: the marker event of each step, -1 for inferred windows
    step_num: np.ndarray  # int64
    names: tuple[str, ...]
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    use_groups: bool  # attribute work by reachability from the markers (else by time window)
    drop_incomplete: bool  # XProf's rule: > 5 steps -> drop the first and the last
    lines: tuple[int, ...] = ()  # the threads running the steps (where input is waited for)
    last_whole: bool = False  # the capture says its last step is whole: the rule keeps it
    first_whole: bool = False  # ... its first step (a flight recorder save cut at its start)
    # the time before a step's first model op may be its batch being built (`staging`); not
    # in steps that are handed their batch (a serving call, decision 542)
    staged: bool = True

    def __len__(self) -> int:
        return len(self.start_ns)

    @classmethod
    def none(cls, description: str) -> StepMarkers:
        empty = np.zeros(0, dtype=np.int64)
        return cls("none", description, empty, empty, (), empty, empty, False, False)


def drop_note(first_whole: bool, last_whole: bool) -> str:
    """What XProf's rule dropped, said: a user who marked 12 steps and sees 10 must learn why
    (XProf drops them silently); and the ends kept because the capture says they are whole
    (a flight recorder save, cut at step boundaries)."""
    rule = f"XProf's rule for more than {DROP_THRESHOLD} steps"
    if first_whole and last_whole:
        return f"; the first and the last kept: whole, the capture says ({rule} drops them)"
    if first_whole or last_whole:
        which, other = ("last", "first") if first_whole else ("first", "last")
        return (
            f"; the {which} dropped as possibly cut off by the capture window ({rule}; "
            f"the {other} is whole, the capture says)"
        )
    return f"; the first and the last dropped as possibly cut off by the capture window ({rule})"
