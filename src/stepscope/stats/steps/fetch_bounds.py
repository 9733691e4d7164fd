"""Inferred steps begin where the loop asks for their batch (decision 506).

A loop over a plain Python generator (``for x, y in batches():``) makes each batch in untraced
Python; its first traced event is the batch's conversion (``torch.from_numpy``'s
``aten::lift_fresh``) at the fetch's end, and inferred steps start at that lead
(`stepscope.stats.steps.cycle`). So step k ran from batch k's conversion to batch k+1's:
it held batch k+1's making, and not its own. A user reads a step as one iteration of the
loop, which begins with ``next(it)``, and XProf's steps (a marker around the iteration, as
Keras's) hold the fetch of the batch they train on; step 0 already began with its fetch
(decision 476). Here every step does.

Where the fetch begins: the step-time breakdown counted, in each gap no traced event covers,
the time of the loop's fetch there (`stepscope.stats.steps.fetch`); the gap that ends where a
step begins holds the loop's own Python after the previous step's work (metrics, logging),
then the fetch of the next batch, which runs until the conversion: the fetch is the gap's
last part. The step starts that much before its lead; where the capture timed the fetch
(`capture.fetch_probe`, the first iterations) at its timed start. The breakdown is then made
again on the moved bounds, where the fetch lies before the step's first model op, input
staged in the step (`staging`), which this module's `Fetched` names as the iterator's.

Only inferred steps move (a marker is the user's or the framework's own bound), only when
all of the fetch's time lies in such gaps (a fetch elsewhere in the step keeps the bounds as
they were), and never the last step's end: nothing traced says where its own Python ends.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.model import Profile
from stepscope.stats.host.python_samples import probe_events
from stepscope.stats.intervals import subtract_sets
from stepscope.stats.steps.fetch import Fetched
from stepscope.stats.steps.types import StepMarkers, with_note

# the fetch's time in the gaps that end where a step begins, of all of it: less, and the
# loop fetches elsewhere too (a second iterator inside the step); the bounds stay
AT_BOUNDS = 0.99
NOTE = "each begins earlier, at its batch's fetch from the loop's Python iterator"


def _timed(profile: Profile, lines: tuple[int, ...], loop: str) -> tuple[np.ndarray, np.ndarray]:
    """The fetches of ``loop`` the capture timed on the steps' threads: starts and ends, in
    start order."""
    ev = probe_events(profile, list(lines))
    if len(ev):
        ev = ev[profile.stat_at("loop", ev).string_ids() == profile.strings.id_of(loop)]
        ev = ev[np.argsort(profile.start_ns[ev], kind="stable")]
    return profile.start_ns[ev], profile.end_at(ev)


def fetch_first(
    profile: Profile,
    markers: StepMarkers,
    keep: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    fetched: Fetched,
) -> tuple[StepMarkers, np.ndarray] | None:
    """``markers`` with each kept step (``keep``: their rows; ``span_*``: their spans, sorted)
    begun at its batch's fetch, and per marker the fetch's untraced time now at its start
    (before its lead); None when nothing moves."""
    # inferred windows only (no marker event): a marker is the user's or the framework's bound
    if (markers.event >= 0).any() or not fetched.counted or len(keep) < 2:
        return None
    g_lo, g_hi, g_ns = fetched.gap_lo, fetched.gap_hi, fetched.gap_ns
    total = int(g_ns.sum())
    if not total:
        return None
    # the gaps that end where the next kept step begins (contiguous steps)
    nxt = np.searchsorted(span_lo, g_hi, "left")
    at_bound = (nxt < len(span_lo)) & (nxt > 0) & (g_ns > 0)
    at_bound[at_bound] = (span_lo[nxt[at_bound]] == g_hi[at_bound]) & (
        span_hi[nxt[at_bound] - 1] == g_hi[at_bound]
    )
    if int(g_ns[at_bound].sum()) < AT_BOUNDS * total:
        return None
    step = nxt[at_bound]
    hi = g_hi[at_bound]
    new_lo = hi - g_ns[at_bound]
    # a timed fetch that began in the gap: its own start (and its end, when it ended sooner)
    t_lo, t_hi = _timed(profile, markers.lines, fetched.loop)
    if len(t_lo):
        k = np.searchsorted(t_lo, hi, "right") - 1
        ok = k >= 0
        ok[ok] = t_lo[k[ok]] >= g_lo[at_bound][ok]
        new_lo[ok] = t_lo[k[ok]]
        hi = hi.copy()
        hi[ok] = np.minimum(hi[ok], t_hi[k[ok]])
    start, end = markers.start_ns.copy(), markers.end_ns.copy()
    ns = np.zeros(len(start), np.int64)
    rows = keep[step]
    before = keep[step - 1]
    start[rows] = new_lo
    end[before] = np.minimum(end[before], new_lo)
    ns[rows] = hi - new_lo
    description = with_note(markers.description, NOTE)
    ns[keep[0]] = _first_fetch(profile, markers, keep, span_lo, t_lo, t_hi)
    return replace(markers, start_ns=start, end_ns=end, description=description), ns


def _first_fetch(
    profile: Profile,
    markers: StepMarkers,
    keep: np.ndarray,
    span_lo: np.ndarray,
    t_lo: np.ndarray,
    t_hi: np.ndarray,
) -> int:
    """Step 0's fetch, when it began with the first one the capture timed (decision 476):
    that fetch's untraced time before the steps' threads' first event in the step."""
    if not len(t_lo) or int(t_lo[0]) != int(span_lo[0]):
        return 0
    on_lines = np.flatnonzero(np.isin(profile.line, np.asarray(markers.lines, np.int64)))
    starts = profile.start_ns[on_lines]
    after = starts[(starts >= span_lo[0]) & (profile.dur_ns[on_lines] > 0)]
    if not len(after):
        return 0
    end = min(int(after.min()), int(t_hi[0]), int(markers.end_ns[keep[0]]))
    return max(end - int(span_lo[0]), 0)


def staged_fetches(
    found: Fetched,
    ns: np.ndarray,
    keep: np.ndarray,
    span_lo: np.ndarray,
    covered_lo: np.ndarray,
    covered_hi: np.ndarray,
) -> tuple[Fetched, np.ndarray]:
    """The loop's fetch ``found`` once the steps (kept rows ``keep`` of the markers, starting
    at ``span_lo``) begin at it (`fetch_bounds`, decision 506): per step the fetch's time
    ``ns`` (per marker), from the step's start; each iterator's time in the same proportions
    as before. Where that time is staged input already (before the step's first model op,
    ``covered_*``) it stays so; the rest, untraced, is returned per step for the limits to
    move from "host" to "input", and is the Fetched's gaps (the host advice's place leaves
    it out)."""
    per_step = ns[keep].astype(np.int64)
    before = int(found.fetch_ns.sum())
    scale = float(per_step.sum()) / before if before else 0.0
    has = per_step > 0
    w_lo, w_hi = subtract_sets(span_lo[has], span_lo[has] + per_step[has], covered_lo, covered_hi)
    untraced = np.bincount(
        np.searchsorted(span_lo, w_lo, "right") - 1, weights=w_hi - w_lo, minlength=len(span_lo)
    ).astype(np.int64)
    fetched = replace(
        found,
        fetch_ns=np.round(found.fetch_ns * scale).astype(np.int64),
        ns=per_step,
        gap_lo=w_lo,
        gap_hi=w_hi,
        gap_ns=w_hi - w_lo,
    )
    return fetched, untraced
