"""Input fetched between two steps belongs to the step it feeds.

The loop ``for step, batch in enumerate(loader): with stepscope.step(step): ...`` fetches each
batch before its step opens, so the wait for data sits in the gap between two markers and no
step reaches it: the step looks shorter than an iteration and input-free (XProf counts it
nowhere). A wait for input (``IteratorGetNext*``, a root ``Iterator::`` stage,
``enumerate(DataLoader)``) on a thread that runs steps, which no step has claimed and which
lies entirely in the gap before a step that starts on the same thread, is attributed to that
step, whose span then starts at the fetch: the step becomes the iteration it really is. A
fetch that found the pass over (`END_OF_SEQUENCE_STAT`) fed no step, and a step whose
marker began at its trainer's last boundary (`STEP_HOLDS_FETCH_STAT`) is fed by none. The
gap before the first step begins with the capture: there a wait followed by other traced work
of the thread (the rest of an iteration in flight when a remote capture began) feeds no step.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.events import NOT_COUNTED, EventType
from stepscope.stats.steps.types import StepMarkers
from stepscope.vocab.profiler import END_OF_SEQUENCE_STAT, STEP_HOLDS_FETCH_STAT


def fetches_feeding_steps(
    profile: Profile, markers: StepMarkers, types: np.ndarray, claimed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(event, step) for each unclaimed input wait in the gap just before a step.

    ``claimed``: events already attributed to some step. Steps are ``markers``' rows.
    """
    none = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if not len(markers) or not markers.lines or (markers.event < 0).any():
        return none
    step_line = np.zeros(len(profile.lines), dtype=bool)
    step_line[list(markers.lines)] = True
    free = np.ones(profile.n_events, dtype=bool)
    free[claimed] = False
    waits = np.flatnonzero(
        (types == EventType.HOST_WAIT_INPUT) & step_line.take(profile.line) & free
    )
    start, end = profile.start_ns[waits], profile.end_at(waits)
    # a fetch that found the pass over (the loop's end, a DataLoader's workers' shutdown)
    # fed no batch, nor did a wait inside it (the DataLoader's own `enumerate(DataLoader)`):
    # a script timing its iterations counts it in no step (decision 636)
    over = profile.stat_events(END_OF_SEQUENCE_STAT)
    if len(over) and waits.size:
        inside = np.zeros(waits.size, dtype=bool)
        wait_line = profile.line[waits]
        for line in np.unique(profile.line[over]).tolist():
            ours = over[profile.line[over] == line]
            ours = ours[np.argsort(profile.start_ns[ours], kind="stable")]
            reach_end = np.maximum.accumulate(profile.end_at(ours))
            # the last of them to start at or before the wait: inside one iff it reaches
            last = np.searchsorted(profile.start_ns[ours], start, "right") - 1
            hit = (wait_line == line) & (last >= 0)
            inside[hit] = end[hit] <= reach_end[last[hit]]
        waits, start, end = waits[~inside], start[~inside], end[~inside]
    if not waits.size:
        return none
    win_start, win_end = markers.start_ns, markers.end_ns  # in start order (StepMarkers)
    reach = np.maximum.accumulate(win_end)
    nxt = np.searchsorted(win_start, end, "left")  # first step starting at or after the wait
    ok = nxt < len(markers)
    prev_reach = np.where(nxt > 0, reach[np.maximum(nxt - 1, 0)], np.iinfo(np.int64).min)
    ok &= start >= prev_reach  # not inside (or overlapping) an earlier step
    step = np.minimum(nxt, len(markers) - 1)
    ok &= profile.line[markers.event[step]] == profile.line[waits]
    # a trainer callback's step begun at the trainer's last boundary holds its fetch already:
    # a wait before it is other work's (evaluation's fetches; decision 638)
    ok &= ~profile.stat_at(STEP_HOLDS_FETCH_STAT, markers.event[step]).present
    # Before the first step the gap reaches back to the capture's start: a wait there
    # followed by other traced work of the thread is the fetch of the iteration in flight
    # when the capture began (its marker unrecorded), not the first step's (decision 1054)
    first = ok & (nxt == 0)
    if first.any():
        line = profile.line[markers.event[0]]
        work = np.flatnonzero(
            (profile.line == line)
            & (types != NOT_COUNTED)
            & (types != EventType.HOST_WAIT_INPUT)
            & (profile.start_ns < markers.start_ns[0])
        )
        if work.size:
            ok &= ~(first & (end <= profile.start_ns[work].max()))
    return waits[ok], step[ok].astype(np.int64)
