"""Steps of an inference trace from its framework's own per-batch calls (`vocab.serving`).

A serving loop's trace often holds one or a few engine steps and no step marker: vLLM's
profiler records one ``execute_model`` (b200_vllm_fp8_rank0: one call of 87.22 ms in an
87.41 ms trace), and nothing at the top level repeats, so no step was inferred and the
overview had none. The framework's call is what its users call a step (an engine step, a
``generate()`` request), so each outermost one on a host thread is a step: a call nested in
another (vLLM's worker ``execute_model`` calling its model runner's, the annotation around
them) is part of it, and so are the Python frames that only wrap it (decorators:
transformers' deprecation wrapper, torch's ``no_grad``; `_with_wrappers`). Tried after the
markers a user or the profiler writes (``ProfilerStep#N`` around a ``generate()`` call wins)
and before inference from repeats.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.stats.events import host_lines
from stepscope.stats.nesting import nesting_parents
from stepscope.vocab.serving import ServingCall, python_call, serving_call

WRAPPER_SHARE = 0.01  # a decorator's own calls around the call: each under 1% of it


def _with_wrappers(profile: Profile, calls: np.ndarray) -> np.ndarray:
    """Each call of ``calls`` widened to the Python frames that only wrap it: a user's
    ``model.generate(...)`` enters transformers' deprecation wrappers and torch's ``no_grad``
    decorator before ``generate`` itself, and after it returns the decorator's exit (a Kineto
    trace of 4 calls: one `generate` of 30.42 ms inside wrappers of 34.54 ms; the script timed
    34.6). A frame wraps the call when each of its other traced children takes at most
    `WRAPPER_SHARE` of the call (the decorator's own bookkeeping); a frame with other work
    (the loop's module, a request handler that tokenizes) is the caller, not a wrapper."""
    out = calls.copy()
    for line in distinct(profile.line[calls]).tolist():
        sl = profile.events_of_line(profile.lines[line])
        ev = np.arange(sl.start, sl.stop, dtype=np.int64)
        parent = nesting_parents(profile.line[ev], profile.start_ns[ev], profile.end_at(ev))
        dur = profile.dur_ns[ev]
        first, second = _two_longest_children(parent, dur)
        for i in np.flatnonzero(profile.line[calls] == line).tolist():
            k = int(calls[i]) - sl.start
            limit = WRAPPER_SHARE * float(dur[k])
            while (p := int(parent[k])) >= 0 and python_call(profile.event_name(int(ev[p]))):
                other = int(second[p] if first[p] == k else first[p])  # its longest other child
                if other >= 0 and float(dur[other]) > limit:
                    break
                k = p
            out[i] = ev[k]
    return out


def _two_longest_children(parent: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per event (``parent``: each one's, -1 for none), its longest child and its second
    longest (-1: none), found once for the line: looking for a frame's other children among
    all the line's events at each step up took 6.3 s for 8,000 generate() calls in 440,000
    events (decision 566)."""
    first = np.full(len(parent), -1, np.int64)
    second = first.copy()
    kids = np.flatnonzero(parent >= 0)
    if not len(kids):
        return first, second
    kids = kids[np.lexsort((-dur[kids], parent[kids]))]  # by parent, the longest first
    par = parent[kids]
    head = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
    first[par[head]] = kids[head]
    nxt = head + 1
    nxt = nxt[nxt < len(kids)]
    nxt = nxt[par[nxt] == par[nxt - 1]]  # a second child of the same parent
    second[par[nxt]] = kids[nxt]
    return first, second


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
    # each kind counted: a pipeline's calls and generate() calls made outside one (decision 616)
    seen: dict[ServingCall, int] = {}
    for i in profile.name[events].tolist():
        seen[kinds[int(i)]] = seen.get(kinds[int(i)], 0) + 1
    events = _with_wrappers(profile, events)
    label = " and ".join(
        f"{n} {call.framework} {call.unit if n == 1 else call.units or call.unit + 's'} "
        f"({call.holds})"
        for call, n in seen.items()
    )
    return events, label
