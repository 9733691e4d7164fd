"""Steps within the recording: a step marker that ends after the profiler stopped recording is
cut where the recording stopped (decision 1075).

A Kineto trace says where its recording stopped: the end of the profiler's own ``Trace`` span
(`vocab.pytorch.RECORDING_STOP_STAT`, written by the import). An annotation open then can still
end long after it: a100_triton_tiny's ``ProfilerStep#1`` begins 1.67 ms before the recording
stops and ends 13.33 s later, and nothing (no op, no launch, no kernel, on any thread) was
recorded in those 13.33 s. Read as the step's, that time was "All Others", the step 100%
"Python / host" and "POTENTIALLY input-bound": a verdict on time nobody saw. The step is what
was recorded of it; its description says how much of its marker lay past the recording, and
the profile's span ends there too. A step that begins after the recording stopped holds
nothing recorded: it is left out, said so. Profiles without the stat (other formats, a Kineto
trace merged into a capture) are unchanged.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.types import StepMarkers, with_note
from stepscope.vocab.pytorch import RECORDING_STOP_STAT
from stepscope.words import counted


def recording_stop_ns(profile: Profile) -> int | None:
    """Where the profiler stopped recording (ns, the events' clock), when the trace says."""
    for plane in profile.planes:
        value = plane.stats.get(RECORDING_STOP_STAT)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def recorded_span_ns(profile: Profile) -> int:
    """The profile's span, its first event's start to its last one's end, ending where the
    recording stopped when an event runs past it (0 without events)."""
    if not profile.n_events:
        return 0
    first = int(profile.start_ns.min())
    last = int((profile.start_ns + profile.dur_ns).max())
    stop = recording_stop_ns(profile)
    if stop is not None and first < stop < last:
        last = stop
    return last - first


def within_recording(profile: Profile, markers: StepMarkers) -> StepMarkers:
    """``markers`` with each step's end at most where the recording stopped, and the steps
    that begin after it left out; unchanged when nothing ran past it."""
    stop = recording_stop_ns(profile)
    if stop is None or not len(markers) or int(markers.end_ns.max()) <= stop:
        return markers
    keep = markers.start_ns < stop
    past = np.maximum(markers.end_ns - stop, 0)
    cut = keep & (past > 0)
    notes = []
    if cut.any():
        k = int(np.flatnonzero(cut)[0])
        which = (
            f"{markers.names[k]} runs"
            if cut.sum() == 1
            else f"{int(cut.sum())} step markers run up to"
        )
        notes.append(
            f"{which} {past[cut].max() / 1e6:.2f} ms past the end of the recording (the "
            "profiler's Trace span), where nothing was recorded: cut there"
        )
    if not keep.all():
        notes.append(
            f"{counted(int((~keep).sum()), 'step')} beginning after the recording stopped left out"
        )
    at = np.flatnonzero(keep)
    description = markers.description
    for note in notes:
        description = with_note(description, note)
    return dataclasses.replace(
        markers,
        description=description,
        event=markers.event[at],
        step_num=markers.step_num[at],
        names=tuple(markers.names[i] for i in at.tolist()),
        start_ns=markers.start_ns[at],
        end_ns=np.minimum(markers.end_ns[at], stop),
    )
