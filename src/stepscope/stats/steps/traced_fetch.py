"""Inferred steps begin at their batch's traced fetch (decision 641).

A TensorFlow custom loop, ``for x, y in dataset: loss = train_step(x, y)``, calls its
``tf.function`` once an iteration; the steps are inferred from that call, each running to the
next call. Between the two the loop asks tf.data for the next batch (``next()``: an eager
``IteratorGetNext``, a top-level ``TFE_Py_FastPathExecute_C`` on the loop's thread, which waits
for the pipeline when it is slow), so step k held batch k+1's fetch and not its own: a
``map`` through ``tf.py_function`` without prefetch read 3.44 ms for an iteration the script
timed at 7.70 ms (its 4.67 ms fetch counted in the step before). A user reads a step as one
iteration of the loop, which begins with ``next()`` (decision 506 for a Python generator's
untraced fetch; this is the traced one's).

Where: in each inferred step, the last top-level event of the steps' thread that holds a wait
for input (`EventType.HOST_WAIT_INPUT`: ``IteratorGetNext``, a root ``Iterator::`` stage)
and starts after the step's first top-level event (its lead) has ended: the next step begins
there, when the two are contiguous. A DataLoader's fetch is left to the cycle's own rule
(`cycle.batch_fetches`). Only when at least half of the steps but the last hold
such a fetch (the loop's shape, not a stray wait), and never for markers (the user's or the
framework's own bounds).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.model import Profile
from stepscope.stats.events import EventType
from stepscope.stats.nesting import nesting_parents
from stepscope.stats.steps.types import StepMarkers, with_note
from stepscope.vocab.pytorch import is_dataloader_iter, is_dataloader_next

NOTE = "each begins earlier, at its batch's traced fetch (an input wait) before its lead"
SHARE = 0.5  # of the steps but the last, at least this many hold a fetch after their lead


def _tops(profile: Profile, lines: tuple[int, ...]) -> np.ndarray:
    """The top-level events of ``lines``, by start."""
    on = np.flatnonzero(np.isin(profile.line, np.asarray(lines, np.int64)))
    if not len(on):
        return on
    parent = nesting_parents(profile.line[on], profile.start_ns[on], profile.end_at(on))
    top = on[parent < 0]
    return top[np.argsort(profile.start_ns[top], kind="stable")]


def traced_fetch_first(
    profile: Profile,
    markers: StepMarkers,
    types: np.ndarray,
    keep: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
) -> StepMarkers | None:
    """``markers`` with each kept step (``keep``: their rows; ``span_*``: their spans, in
    order) begun at its batch's traced fetch in the step before, or None when none moves."""
    if (markers.event >= 0).any() or len(keep) < 3 or not markers.lines:
        return None
    lines = np.asarray(markers.lines, np.int64)
    waits = np.flatnonzero((types == EventType.HOST_WAIT_INPUT) & np.isin(profile.line, lines))
    # a DataLoader's fetch is the cycle's own (`cycle.batch_fetches`, decision 413)
    torch = profile.strings.ids_matching(lambda s: is_dataloader_next(s) or is_dataloader_iter(s))
    waits = waits[~np.isin(profile.name[waits], torch)]
    if not len(waits):
        return None
    tops = _tops(profile, markers.lines)
    t_start, t_end = profile.start_ns[tops], profile.end_at(tops)
    # the top-level event holding each wait (the last one starting at or before it)
    k = np.searchsorted(t_start, profile.start_ns[waits], "right") - 1
    k = k[(k >= 0) & (t_end[np.maximum(k, 0)] >= profile.end_at(waits))]
    fetch_tops = np.unique(k)
    if not len(fetch_tops):
        return None
    f_start = t_start[fetch_tops]
    # per step but the last: its lead's end (its first top-level event), its last fetch after
    first = np.searchsorted(t_start, span_lo[:-1], "left")
    ok = first < len(tops)
    lead_end = np.where(ok, t_end[np.minimum(first, len(tops) - 1)], np.iinfo(np.int64).max)
    last = np.searchsorted(f_start, span_hi[:-1], "left") - 1
    found = (last >= 0) & ok
    at = f_start[np.maximum(last, 0)]
    found &= (at >= lead_end) & (at > span_lo[:-1])
    found &= span_hi[:-1] == span_lo[1:]  # contiguous steps only
    if int(found.sum()) < SHARE * (len(keep) - 1):
        return None
    start, end = markers.start_ns.copy(), markers.end_ns.copy()
    moved = np.flatnonzero(found)
    start[keep[moved + 1]] = at[moved]
    end[keep[moved]] = at[moved]
    description = with_note(markers.description, NOTE)
    return replace(markers, start_ns=start, end_ns=end, description=description)
