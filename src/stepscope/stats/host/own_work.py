"""The profilers' own start/stop work (`stepscope.vocab.profiler`) and what nests in it.

``jax.profiler.stop_trace()`` took 46% of the host op time of a 20-step JAX capture: the
Python tracer records the profiler's own stop, and everything it calls, on the user's thread.
That time is the capture's, not the program's: event typing leaves these events out of every
step and the host op table leaves them out of its rows.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.arrays import used_names
from stepscope.vocab.profiler import is_profiler_event


def profiler_work(profile: Profile) -> np.ndarray:
    """Per event: True for a profiler's start/stop call and the events nested in it on its
    line (cached per profile; shared, do not modify)."""
    return profile.derived("profiler_work", lambda: _profiler_work(profile))


def _profiler_work(profile: Profile) -> np.ndarray:
    out = np.zeros(profile.n_events, dtype=bool)
    if not profile.n_events:
        return out
    strings = profile.strings
    used = used_names(profile)
    own = [i for i in used.tolist() if is_profiler_event(strings[i])]
    if not own:
        return out
    calls = np.flatnonzero(np.isin(profile.name, own))
    for call in calls.tolist():  # a few calls per capture
        line = profile.lines[int(profile.line[call])]
        sl = profile.events_of_line(line)
        lo, hi = int(profile.start_ns[call]), int(profile.start_ns[call] + profile.dur_ns[call])
        starts = profile.start_ns[sl]
        inside = (starts >= lo) & (starts + profile.dur_ns[sl] <= hi)
        out[sl][inside] = True  # a slice's view: written in place
    out[calls] = True
    return out
