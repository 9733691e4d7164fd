"""Steps held up by the input pipeline's Python (a tf.data map through ``tf.py_function``).

A tf.data map that runs Python (``tf.py_function``, ``tf.numpy_function``, a
``from_generator`` generator) runs it on tf.data's threads, holding the GIL. tf.data
prefetches by default (it injects a prefetch stage, ``inject/prefetch_...``), so the step's
``IteratorGetNext`` finds its element ready and the map runs beside the step; yet the step's
thread needs the GIL to return from each TensorFlow call, and the map's Python holds it (and a
core). Keras ``fit`` over a 4 ms map measured 8.4 ms a step against 4.4 ms with no map work,
and stepscope read "bound by compute 93.8%": the step thread's wait in its ``FunctionRun``
and ``TFE_Py_*`` calls, whose work was done, was counted as the model's compute (decision 495).

Those instants are input: the step's thread in the self time of one of the runtime's
blocking calls (`tf_names.is_blocking_call`: no event of its own nested there runs), no op of
the model running on the compute threads (`waits.compute_events`) and no collective anywhere
(the call waits for it: a MultiWorkerMirroredStrategy worker's all-reduce), and the
pipeline's Python running on tf.data's threads. The step thread's untraced time is not
counted: there it runs its own Python while the map waits for the GIL (decision 381's
``from_generator`` loop), and nothing in the trace tells the two apart.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stepscope.model import Profile
from stepscope.stats.arrays import used_names
from stepscope.stats.events import tf_data_lines
from stepscope.stats.intervals import intersect_sets, merge, subtract_sets
from stepscope.stats.nesting import nesting_parents
from stepscope.stats.steps.waits import compute_events
from stepscope.vocab import collectives as collective_names
from stepscope.vocab import tensorflow as tf_names


def _names(profile: Profile, test: Callable[[str], bool]) -> np.ndarray:
    """Per string id: whether ``test(name)`` holds, for the names events have."""
    strings = profile.strings
    used = used_names(profile)
    out = np.zeros(len(strings), dtype=bool)
    out[used] = [test(strings[i]) for i in used.tolist()]
    return out


def _self_time(
    start: np.ndarray, end: np.ndarray, parent: np.ndarray, of: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The union of the self time (the span less its children's) of the events ``of``
    (a mask over the parallel arrays), as sorted, disjoint intervals."""
    owners = np.flatnonzero(of)
    kids = np.flatnonzero((parent >= 0) & of[np.maximum(parent, 0)])
    # per owner: opens at its start and at each child's end, closes at each child's start
    # and at its end; sorted by (owner, time) the k-th opening pairs with the k-th closing
    open_at = np.r_[start[owners], end[kids]]
    close_at = np.r_[start[kids], end[owners]]
    open_by = np.r_[owners, parent[kids]]
    close_by = np.r_[parent[kids], owners]
    o = np.lexsort((open_at, open_by))
    c = np.lexsort((close_at, close_by))
    lo, hi = open_at[o], close_at[c]
    keep = hi > lo
    return merge(lo[keep], hi[keep])


def pipeline_python(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """When an op that runs Python (`tf_names.is_py_function`) runs on tf.data's threads:
    sorted, disjoint intervals."""
    python = _names(profile, tf_names.is_py_function)
    py = np.flatnonzero(
        python[profile.name] & tf_data_lines(profile)[profile.line] & (profile.dur_ns > 0)
    )
    return merge(profile.start_ns[py], profile.end_at(py))


def held_by_pipeline_python(
    profile: Profile,
    counted: np.ndarray,
    lines: tuple[int, ...],
    span_lo: np.ndarray,
    span_hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The times, inside the steps (``span_*``, sorted and disjoint), when a step thread of
    ``lines`` is held in a blocking call of the runtime while the pipeline's Python runs and
    no op of the model does: sorted, disjoint intervals."""
    none = np.zeros(0, np.int64)
    if not lines or not len(span_lo):
        return none, none.copy()
    py_lo, py_hi = pipeline_python(profile)
    if not len(py_lo):
        return none, none.copy()
    on_step = np.zeros(len(profile.lines), dtype=bool)
    on_step[list(lines)] = True
    ev = np.flatnonzero(on_step[profile.line])
    blocking = _names(profile, tf_names.is_blocking_call)[profile.name[ev]]
    if not blocking.any():
        return none, none.copy()
    start, end = profile.start_ns[ev], profile.end_at(ev)
    parent = nesting_parents(profile.line[ev], start, end)
    held = _self_time(start, end, parent, blocking)
    held = intersect_sets(*held, span_lo, span_hi)
    held = intersect_sets(*held, py_lo, py_hi)
    work = compute_events(profile, counted, on_step)
    if len(work):
        held = subtract_sets(*held, *merge(profile.start_ns[work], profile.end_at(work)))
    # nor while a collective runs: the call waits for it, whatever the map's Python does (a
    # map sleeping in Python holds no GIL; decision 1053)
    collective = _names(profile, collective_names.is_host_collective)[profile.name]
    waited = np.flatnonzero(collective & counted & (profile.dur_ns > 0))
    if len(waited):
        held = subtract_sets(*held, *merge(profile.start_ns[waited], profile.end_at(waited)))
    return held
