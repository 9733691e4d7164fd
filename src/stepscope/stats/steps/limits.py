"""What bounds each step: its time split by limit (input, compute, dispatch, host, ...).

XProf's categories answer "how much of the step is input?"; a user asks "what limits my
step?". The limits split each step's time with the same priority sweep as the breakdown
(every instant to the highest limit active then), on stepscope's reading of the trace:

- XProf's event types map onto limits (`_FROM_EVENT_TYPE`): device compute, collectives and
  copies (device work wins over anything the host does meanwhile), input, compilation,
  launches (dispatch), host work: on a profile with devices every other host event is
  "host", on a host-only profile framework ops are the model's compute and Python frames and
  annotations are "host" (another thread's Python frames are beside the step: no limit);
- input staged inside the step (`staging`) is input;
- the time a step thread waits for a computation running elsewhere (`waits`) is compute; a
  wait with nothing traced running is "waits";
- runs of small dispatched ops (`dispatch`) are dispatch;
- time nothing covers is "host" (untraced Python, on the step's thread).

Priorities, highest first: device compute, device collectives, copies, input, compilation,
waits for a computation, idle waits, dispatch, host compute ops, the input pipeline's own
work on the steps' threads (tf.data stages: input only when nothing of the model runs), host
collectives (a host thread in gloo / MPI / an XLA collective, unless it computes meanwhile),
host. The pipeline's work on its own threads (tf.data's, a `from_generator` generator) is
prefetching beside the step: the step waits for it only in its consumer's wait
(``IteratorGetNext``, a root stage: input above), so it is in no limit and covers nothing
(decision 381). The result sits beside XProf's categories (which stay XProf's, for the
golden comparisons), as `StepDb.limits`.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from stepscope.model import Profile
from stepscope.stats.arrays import distinct_ids
from stepscope.stats.events import EventType, tf_data_lines
from stepscope.vocab.tensorflow import is_iterator

# Written by stepscope's capture on `stepscope.trace` names (as in op_metrics).
_ANNOTATION_STAT = "stepscope_annotation"


class LimitType(IntEnum):
    """Sweep priorities of the limits (a higher value wins); column ``value // 10``."""

    # time nothing covers; as a pair's type: work beside the steps that covers nothing (the
    # input pipeline prefetching on its own threads), left out of the limits
    UNTRACED = 0
    HOST = 10
    # a host thread in a collective (gloo, MPI, XLA/TF on the CPU); host work running
    # meanwhile wins, as in the breakdown (`EventType.HOST_COLLECTIVE`)
    HOST_COLLECTIVE = 20
    # the input pipeline's own work on the steps' threads (tf.data stages): input when
    # nothing of the model runs meanwhile, overlapped (no limit) otherwise
    INPUT_WORK = 30
    COMPUTE_HOST = 40
    DISPATCH = 50
    WAIT = 60
    COMPUTE_WAITED = 70
    COMPILATION = 80
    INPUT = 90
    COPIES = 100
    COLLECTIVES = 110
    DEVICE_COMPUTE = 120


N_LIMIT_COLUMNS = max(int(t) for t in LimitType) // 10 + 1

# The limits a user reads, in the order the headline considers them, with their columns.
LIMITS: dict[str, tuple[LimitType, ...]] = {
    "input": (LimitType.INPUT, LimitType.INPUT_WORK),
    "compute": (LimitType.DEVICE_COMPUTE, LimitType.COMPUTE_WAITED, LimitType.COMPUTE_HOST),
    "dispatch": (LimitType.DISPATCH,),
    "host": (LimitType.HOST, LimitType.UNTRACED),
    "collectives": (LimitType.COLLECTIVES, LimitType.HOST_COLLECTIVE),
    "copies": (LimitType.COPIES,),
    "compilation": (LimitType.COMPILATION,),
    "waits": (LimitType.WAIT,),
}
LIMIT_NAMES = tuple(LIMITS)
LIMIT_LABELS = {
    "input": "Input",
    "compute": "Compute",
    "dispatch": "Dispatch / launch",
    "host": "Python / host",
    "collectives": "Collectives",
    "copies": "Copies",
    "compilation": "Compilation",
    "waits": "Idle / waits",
}


def limit_words(name: str) -> str:
    """A limit's label inside a sentence (`label_words`)."""
    return label_words(LIMIT_LABELS[name])


def label_words(label: str) -> str:
    """A limit's label inside a sentence: lower case, but Python's name."""
    return label if label.startswith("Python") else label.lower()


_FROM_EVENT_TYPE = {
    EventType.HOST_ENCLOSING: LimitType.HOST,
    EventType.HOST_COLLECTIVE: LimitType.HOST_COLLECTIVE,
    EventType.HOST_COMPILE: LimitType.COMPILATION,
    EventType.HOST_TO_DEVICE: LimitType.INPUT,
    EventType.HOST_PREPARE: LimitType.DISPATCH,
    EventType.DEVICE_COLLECTIVES: LimitType.COLLECTIVES,
    EventType.HOST_WAIT_INPUT: LimitType.INPUT,
    EventType.DEVICE_TO_DEVICE: LimitType.COPIES,
    EventType.DEVICE_TO_HOST: LimitType.COPIES,
    EventType.DEVICE_COMPUTE_32: LimitType.DEVICE_COMPUTE,
    EventType.DEVICE_COMPUTE_16: LimitType.DEVICE_COMPUTE,
    EventType.DEVICE_WAIT_DEVICE: LimitType.COPIES,
    EventType.DEVICE_WAIT_HOST: LimitType.INPUT,
}


def limit_types(
    profile: Profile,
    events: np.ndarray,
    pair_types: np.ndarray,
    has_device: bool,
    step_lines: tuple[int, ...],
) -> np.ndarray:
    """The limit type (int16) of each pair, from its event type and its event's name; the
    input pipeline's work off the steps' threads ``step_lines`` is `LimitType.UNTRACED`
    (prefetching beside the step: no limit, decision 381)."""
    host_work = LimitType.HOST if has_device else LimitType.COMPUTE_HOST
    table = np.full(int(max(EventType)) + 1, int(host_work), dtype=np.int16)
    for event_type, limit in _FROM_EVENT_TYPE.items():
        table[int(event_type)] = int(limit)
    out = table[np.maximum(pair_types, 0)]
    # the input pipeline's stages and its threads' work
    strings = profile.strings
    stage = np.zeros(len(strings), dtype=bool)
    used = distinct_ids(profile.name[events], len(strings))
    stage[used] = [is_iterator(strings[i]) for i in used.tolist()]
    pipeline_line = tf_data_lines(profile)
    line_of = profile.line.take(events)
    pipeline = (stage.take(profile.name.take(events)) | pipeline_line.take(line_of)) & (
        out == int(host_work)
    )
    # tf.data prefetching on its own threads while the step's thread runs its own (untraced)
    # code is not the step waiting: that wait is its consumer's (IteratorGetNext, input).
    # A `from_generator` loop (its generator on tf.data's threads) read 28.2% input where
    # the script measured 12.2% in next(), the generator's time counted over the step
    # thread's untraced Python between its eager ops.
    on_step = np.zeros(len(profile.lines), dtype=bool)
    on_step[list(step_lines)] = True
    beside = pipeline & ~on_step.take(line_of)
    del line_of
    out[pipeline] = int(LimitType.INPUT_WORK)
    out[beside] = int(LimitType.UNTRACED)
    del pipeline, beside
    if not has_device:
        # Python frames and the user's annotations are host work, not the model's compute
        python = np.zeros(len(strings), dtype=bool)
        python[used] = [strings[i].startswith("$") for i in used.tolist()]
        annotated = np.zeros(profile.n_events, dtype=bool)
        annotated[profile.stat_events(_ANNOTATION_STAT)] = True
        framed = python[profile.name[events]]
        host = (framed | annotated[events]) & (out == int(LimitType.COMPUTE_HOST))
        out[host] = int(LimitType.HOST)
        # another thread's traced Python call is beside the step, as the pipeline's threads
        # are: a remote capture with the Python tracer on traced stepscope's sampler thread
        # (`$threading.py Thread.run` over the whole capture), and that frame covered every
        # step of a loop whose own thread ran untraced Python (decision 578)
        out[host & framed & ~on_step.take(profile.line.take(events))] = int(LimitType.UNTRACED)
    return out


def limits_ns(table: np.ndarray) -> dict[str, np.ndarray]:
    """Per limit, each step's time, from a (steps, N_LIMIT_COLUMNS) table."""
    return {
        name: table[:, [int(t) // 10 for t in types]].sum(axis=1) for name, types in LIMITS.items()
    }


def host_collective_ns(table: np.ndarray) -> int:
    """The time of a (steps, N_LIMIT_COLUMNS) table that a host thread waiting in a collective
    bounds (gloo, a framework's collective op): the host's part of the "collectives" limit."""
    return int(table[:, int(LimitType.HOST_COLLECTIVE) // 10].sum()) if len(table) else 0
