"""A rank whose capture began after the others' is no straggler for it (decision 727).

At the job's first collective every rank arrives after its first step's work, the run-up
from its first step's start when nothing collective came before it in its trace. A rank
whose first step began later than the others' arrives that much later, whatever its work:
a TensorFlow worker whose ``stepscope.start()`` returned 600 ms after the other's held it
640 ms at step 0, and the job page counted those as the late worker's, 221.41 ms per step
"after the next rank" over its 8 late steps where its input made it 98.41 ms per step later.
What came before a rank's first step is not in its steps (its capture had not begun, or it
was outside them): at that call, each such rank arrives as if its first step had begun with
the earliest rank's, its run-up unchanged, so only a longer run-up makes it late there.
"""

from __future__ import annotations

import numpy as np


def from_the_first_steps(
    arrive: np.ndarray, runup_ns: np.ndarray, first_step_ns: np.ndarray
) -> np.ndarray:
    """The arrivals ``arrive`` ((ranks, calls), on one clock) with the first call's (the
    earliest by median arrival) moved earlier by how much later each rank's first step began
    (``first_step_ns``, same clock; its ``runup_ns`` (ranks, calls, categories) beginning
    there) than the earliest rank's."""
    if arrive.shape[1] == 0 or arrive.shape[0] < 2:
        return arrive
    c = int(np.argmin(np.median(arrive, axis=0)))
    since = arrive[:, c] - runup_ns[:, c].sum(axis=1)
    from_step = since == first_step_ns  # the run-up begins at the rank's first step
    if not from_step.any():
        return arrive
    late = np.where(from_step, first_step_ns - int(first_step_ns.min()), 0)
    out = arrive.copy()
    out[:, c] -= np.maximum(late, 0)
    return out
