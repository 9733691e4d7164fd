"""Steps of an inference trace from its framework's own per-batch calls (`vocab.serving`).

A serving loop's trace often holds one or a few engine steps and no step marker: vLLM's
profiler records one ``execute_model`` (b200_vllm_fp8_rank0: one call of 87.22 ms in an
87.41 ms trace), and nothing at the top level repeats, so no step was inferred and the
overview had none. The framework's call is what its users call a step (an engine step, a
``generate()`` request), so each outermost one on a host thread is a step: a call nested in
another (vLLM's worker ``execute_model`` calling its model runner's, the annotation around
them) is part of it. Tried after the markers a user or the profiler writes
(``ProfilerStep#N`` around a ``generate()`` call wins) and before inference from repeats.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.events import host_lines
from stepscope.stats.nesting import nesting_parents
from stepscope.vocab.serving import ServingCall, serving_call


def serving_calls(profile: Profile) -> tuple[np.ndarray, str] | None:
    """(events, description): the outermost serving calls on the host threads, sorted by
    start, and what they are, for people; None when the profile has none."""
    if not profile.n_events:
        return None
    kinds: dict[int, ServingCall] = {}
    for i in profile.strings.ids_matching(lambda s: serving_call(s) is not None).tolist():
        call = serving_call(profile.strings[i])
        if call is not None:
            kinds[i] = call
    if not kinds:
        return None
    ids = np.fromiter(kinds, dtype=np.int64, count=len(kinds))
    events = np.flatnonzero(host_lines(profile)[profile.line] & np.isin(profile.name, ids))
    if not events.size:
        return None
    parent = nesting_parents(profile.line[events], profile.start_ns[events], profile.end_at(events))
    events = events[parent < 0]
    events = events[np.lexsort((events, profile.start_ns[events]))]
    n = len(events)
    seen = dict.fromkeys(kinds[int(i)] for i in profile.name[events].tolist())
    label = " and ".join(
        f"{call.framework} {call.unit}{'' if n == 1 else 's'} ({call.holds})" for call in seen
    )
    return events, f"{n} {label}"
