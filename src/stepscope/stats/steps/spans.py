"""Step spans on the profile clock, for tools that only need "which step holds time t".

The memory profile numbers steps with XProf's group ids (`step_spans_with_ids`): the rank of
the step's marker among every root XProf groups from, implicit roots such as a
``FunctionRun`` before the first step included (so a remote TensorFlow capture's steps start
at 1, as in XProf); positions in time order where steps are not grouped.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
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


def step_spans_with_ids(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, ids) of the step markers as `step_spans`, with XProf's group id of each
    (`stepscope.stats.steps.groups`), or its position when steps are not grouped."""
    from stepscope.stats.steps.groups import build_groups

    markers = find_step_markers(profile)
    if len(markers) == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    order = np.argsort(markers.start_ns, kind="stable")
    starts, ends = markers.start_ns[order], markers.end_ns[order]
    keep = np.r_[True, starts[1:] >= np.maximum.accumulate(ends)[:-1]]
    ids = np.arange(int(keep.sum()), dtype=np.int64)
    if markers.use_groups:
        label = build_groups(profile, markers.event).label[markers.event[order][keep]]
        if (label >= 0).all() and len(distinct(label)) == len(label):
            ids = label.astype(np.int64)
    return starts[keep], ends[keep], ids
