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


def _outermost(starts_ns: np.ndarray, ends_ns: np.ndarray) -> np.ndarray:
    """Indices of the spans in start order, each span inside an earlier one dropped."""
    if not len(starts_ns):
        return np.zeros(0, np.int64)
    order = np.argsort(starts_ns, kind="stable")
    starts, ends = starts_ns[order], ends_ns[order]
    return order[np.r_[True, starts[1:] >= np.maximum.accumulate(ends)[:-1]]]


def step_spans(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) in ns of the step markers, sorted, markers inside another dropped."""
    markers = find_step_markers(profile)
    k = _outermost(markers.start_ns, markers.end_ns)
    return markers.start_ns[k], markers.end_ns[k]


def step_spans_with_ids(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, ids) of the step markers as `step_spans`, with XProf's group id of each
    (`stepscope.stats.steps.groups`), or its position when steps are not grouped."""
    from stepscope.stats.steps.groups import build_groups

    markers = find_step_markers(profile)
    k = _outermost(markers.start_ns, markers.end_ns)
    ids = np.arange(len(k), dtype=np.int64)
    if markers.use_groups and len(k):
        label = build_groups(profile, markers.event).label[markers.event[k]]
        if (label >= 0).all() and len(distinct(label)) == len(label):
            ids = label.astype(np.int64)
    return markers.start_ns[k], markers.end_ns[k], ids
