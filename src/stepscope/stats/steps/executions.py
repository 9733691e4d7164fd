"""Steps that each run several batches: Keras's ``steps_per_execution`` (decision 816).

``model.compile(..., steps_per_execution=N)`` makes each call of Keras's training function
(``multi_step_on_iterator``) run N batches in one ``tf.function`` loop, and Keras calls the
batch callbacks once a call: stepscope's `ProfileCallback` marks each call as a step (as
Keras's own TensorBoard callback counts them), and the step finder, with no markers, finds
the call as the loop's repeat. Either way a step holds N batches and its time reads N times
a batch's, and nothing said so (/tmp/truth19/keras_spe.py, N=4: steps of 37.6 ms, the
script's 5.1 ms batches at N=1).

The steps stay the executions (what the profile holds: one call, one wait for the host);
the step description says how many batches each runs and the time per batch. Counted from
the trace: the input fetches each step holds (tf.data's ``IteratorGetNextOp`` /
``IteratorGetNextAsOptionalOp`` kernels, the same events `stepscope.data` writes for an
instrumented loader), the same count in most of the steps and at least two.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS

MIN_BATCHES = 2  # fetches in a step, at least, for it to run several batches
SAME_SHARE = 0.8  # of the steps hold that same count (the pass's last may hold fewer)
KERAS_MULTI_STEP = "multi_step_on_iterator"  # Keras 3's training function on TensorFlow


def batches_note(profile: Profile, start_ns: np.ndarray, dur_ns: np.ndarray) -> str:
    """ "each step runs N batches (...): T ms a batch" when the steps (their starts and
    durations) each hold N >= 2 input fetches; else ""."""
    if not len(start_ns):
        return ""
    ids = profile.strings.ids_matching(lambda s: s in GET_NEXT_KERNELS)
    if not len(ids):
        return ""
    at = _outermost_starts(profile, np.flatnonzero(np.isin(profile.name, ids)))
    counts = np.searchsorted(at, start_ns + dur_ns, "left") - np.searchsorted(at, start_ns, "left")
    values, freq = np.unique(counts, return_counts=True)
    n = int(values[np.argmax(freq)])
    if n < MIN_BATCHES or int(freq.max()) < SAME_SHARE * len(counts):
        return ""
    batch_ms = float(np.mean(dur_ns)) / n / 1e6
    keras = profile.strings.ids_matching(lambda s: s == KERAS_MULTI_STEP)
    if len(keras) and np.isin(profile.name, keras).any():
        how = f"steps_per_execution={n}"
    else:
        how = f"{n} input fetches in each"
    return f"each step runs {n} batches ({how}): {batch_ms:.2f} ms a batch"


def _outermost_starts(profile: Profile, fetches: np.ndarray) -> np.ndarray:
    """The sorted starts of the ``fetches`` no other fetch on their line holds: one batch
    each. `stepscope.steps` over a tf.data iterator writes its fetch around tf.data's own
    ``IteratorGetNextOp`` (a TensorFlow eager loop: every step read as 2 batches)."""
    kept = []
    for line in distinct(profile.line[fetches]).tolist():  # np.unique imports numpy.ma
        on = fetches[profile.line[fetches] == line]
        start = profile.start_ns[on]
        order = np.lexsort((-profile.dur_ns[on], start))  # the outer first at a shared start
        start, end = start[order], start[order] + profile.dur_ns[on][order]
        # held: it starts before an earlier fetch of the line has ended
        reach = np.maximum.accumulate(end)
        held = np.zeros(len(start), dtype=bool)
        held[1:] = start[1:] < reach[:-1]
        kept.append(start[~held])
    return np.sort(np.concatenate(kept)) if kept else np.zeros(0, np.int64)
