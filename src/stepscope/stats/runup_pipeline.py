"""The input in a rank's run-ups that only its own "bound by" limits see: the tf.data
pipeline's Python (decision 670).

A tf.data map through ``tf.numpy_function`` / ``tf.py_function`` runs its Python on tf.data's
threads; with TensorFlow's injected prefetch the step's ``IteratorGetNext`` finds its batch
ready, yet the step's thread, back from each TensorFlow call, waits for the GIL that Python
holds, and the model's ops run slowed on the cores it keeps busy. XProf's categories count
that time as host compute (the ops and the executor's spans are there); the rank's own
limits count it as input (`pipeline_python.held_by_pipeline_python`,
`slowed_ops.slowed_beside_pipeline_python`). The straggler's reason is read from the
run-ups' categories: the same instants are input there too, so that a worker late from its
pipeline's Python is said to be late from its input, as its own page says.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.events import NOT_COUNTED
from stepscope.stats.intervals import intersect_sets, merge
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.pipeline_python import held_by_pipeline_python, pipeline_python
from stepscope.stats.steps.slowed_ops import slowed_beside_pipeline_python


def pipeline_input(
    profile: Profile, types: np.ndarray, db: StepDb
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint intervals inside the steps of ``db`` that its limits count as input
    from the pipeline's Python: the steps' thread held while that Python runs and no model op
    does, and the model's ops' time slowed beside it. Empty without such Python."""
    none = np.zeros(0, np.int64)
    lines = db.lines
    if not db.n_steps or not lines or not len(pipeline_python(profile)[0]):
        return none, none.copy()
    counted = types != NOT_COUNTED
    s_lo, s_hi = merge(db.start_ns, db.start_ns + db.dur_ns)
    h_lo, h_hi = held_by_pipeline_python(profile, counted, lines, s_lo, s_hi)
    slowed = slowed_beside_pipeline_python(profile, counted, lines, s_lo, s_hi)
    o_lo, o_hi = intersect_sets(slowed.lo, slowed.hi, s_lo, s_hi)
    return merge(np.r_[h_lo, o_lo].astype(np.int64), np.r_[h_hi, o_hi].astype(np.int64))
