"""Step spans on the profile clock, for tools that only need "which step holds time t".

The memory profile numbers steps like XProf's group ids: 0, 1, 2... in time order over all
the step markers `stepscope.stats.steps.markers` finds (before XProf's drop of the first
and last).
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.markers import find_step_markers


def step_spans(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) in ns of the step markers, sorted, markers inside another dropped."""
    markers = find_step_markers(profile)
    if len(markers) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(markers.start_ns, kind="stable")
    starts, ends = markers.start_ns[order], markers.end_ns[order]
    keep = np.r_[True, starts[1:] >= np.maximum.accumulate(ends)[:-1]]
    return starts[keep], ends[keep]
