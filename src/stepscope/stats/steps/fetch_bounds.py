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
(`capture.fetch_probe`, the first iterations) at its timed start; where the loop waited for
its computation before fetching, after the wait and the loop's own Python the timed fetches
show (`fetch_after_wait`, decision 1084). The breakdown is then made
again on the moved bounds, where the fetch lies before the step's first model op, input
staged in the step (`staging`), which this module's `Fetched` names as the iterator's.

The gaps at a step's end (`_tail`) are the one that ends at the bound and those before it
with hardly any traced time of the steps' threads after them: a JAX call's argument handling
("Wait for donation holds") comes between the wait and the call, and another thread's event
(a producer's ``jax.device_put``) cuts the wait in pieces (decision 1012).

Only inferred steps move (a marker is the user's or the framework's own bound), only when
all of the fetch's time lies in such gaps (a fetch elsewhere in the step keeps the bounds as
they were), and never the last step's end: nothing traced says where its own Python ends.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.model import Profile
from stepscope.stats.host.python_samples import probe_events
from stepscope.stats.intervals import overlap_with, subtract_sets, union_of
from stepscope.stats.steps.fetch import Fetched
from stepscope.stats.steps.fetch_after_wait import after_waits
from stepscope.stats.steps.types import StepMarkers, with_note

# the fetch's time in the gaps that end where a step begins, of all of it: less, and the
# loop fetches elsewhere too (a second iterator inside the step); the bounds stay
AT_BOUNDS = 0.99
# the steps' threads' traced time between a gap of the fetch and the next step's start, of the
# fetch's time in the gaps from that one on: at most this, and the gap is the fetch's, the
# traced time there the next call's own (JAX's argument handling, decision 1011)
TAIL_TRACED = 0.05
# the next step's head, the ops it runs before its lead after each step's last gap of the
# fetch (a model's forward before the loss that leads, decision 1014): where the steps'
# median traced time there is at most this share of their median span
HEAD_MAX_SHARE = 0.5
NOTE = "each begins earlier, at its batch's fetch from the loop's Python iterator"
# a queue's ``get``: the batch is another thread's, the loop's own Python makes none of it
QUEUE_NOTE = (
    "each begins earlier, at its wait for its batch in a queue another thread or process fills"
)


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
    # the last step's trailing gap (its wait for its computation, decision 1065) precedes no
    # step: its share of fetch time moves no bound, and is no fetch elsewhere in a step
    total = int(g_ns[g_hi < span_hi[-1]].sum())
    if not total:
        return None
    # the gaps at the end of a step (contiguous with the next kept one), `_tail`
    step, first_lo, hi, new_lo, in_tail, head, u_lo = _tail(
        profile, markers.lines, span_lo, span_hi, g_lo, g_hi, g_ns
    )
    if int(g_ns[in_tail].sum()) < AT_BOUNDS * total:
        return None
    # a timed fetch that began in the gap: its own start (and its end, when it ended sooner)
    t_lo, t_hi = _timed(profile, markers.lines, fetched.loop)
    fetch_ns = hi - new_lo
    ok = np.zeros(len(hi), dtype=bool)
    if len(t_lo):
        k = np.searchsorted(t_lo, hi, "right") - 1
        ok = k >= 0
        ok[ok] = t_lo[k[ok]] >= first_lo[ok]
        new_lo[ok] = t_lo[k[ok]]
        hi = hi.copy()
        hi[ok] = np.minimum(hi[ok], t_hi[k[ok]])
        fetch_ns[ok] = hi[ok] - new_lo[ok]
    # the others, after a wait for their computation: its end and the loop's own Python
    waited = after_waits(profile, markers.lines, t_lo, t_hi, first_lo, hi, new_lo)
    at = ~ok & (waited >= 0)
    new_lo[at] = waited[at]
    fetch_ns = np.minimum(fetch_ns, hi - new_lo)
    # the steps that found their batch waiting (no gap of the fetch): at their head's start
    h_step, h_lo = _headed(span_lo, span_hi, step, head, u_lo)
    step, new_lo = np.r_[step, h_step], np.r_[new_lo, h_lo]
    fetch_ns = np.r_[fetch_ns, np.zeros(len(h_lo), np.int64)]  # no fetch time
    start, end = markers.start_ns.copy(), markers.end_ns.copy()
    ns = np.zeros(len(start), np.int64)
    rows = keep[step]
    before = keep[step - 1]
    start[rows] = new_lo
    end[before] = np.minimum(end[before], new_lo)
    ns[rows] = fetch_ns
    description = with_note(markers.description, QUEUE_NOTE if fetched.from_queue() else NOTE)
    ns[keep[0]] = _first_fetch(profile, markers, keep, span_lo, t_lo, t_hi)
    return replace(markers, start_ns=start, end_ns=end, description=description), ns


def _tail(
    profile: Profile,
    lines: tuple[int, ...],
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    g_lo: np.ndarray,
    g_hi: np.ndarray,
    g_ns: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """Per kept step whose previous one (contiguous) ends with the fetch's gaps (sorted,
    disjoint; ``g_ns`` the fetch's time in each): the step, its tail's first gap's start,
    its last gap's end and where the fetch began; and per gap, whether it is in a tail. A
    tail is the last gaps holding fetch time that the steps' threads' traced time after
    them, to the next step's head (its start without one, decision 1088), is at most
    `TAIL_TRACED` of: the gap that ends at the bound, and those before the events of the
    next call's argument handling (JAX's "Wait for donation holds", microseconds) or beside
    another thread's traced event that cut the wait in pieces (a producer's
    ``jax.device_put`` just before the queue's ``get`` returns, decision 1011). The fetch
    is each gap's last part; it began in the tail's earliest. Also the head (`_head`) and
    the starts of the steps' threads' traced spans."""
    nxt = np.searchsorted(span_lo, g_hi, "left")
    ok = (nxt < len(span_lo)) & (nxt > 0) & (g_ns > 0)
    ok[ok] = (span_hi[nxt[ok] - 1] == span_lo[nxt[ok]]) & (g_lo[ok] >= span_lo[nxt[ok] - 1])
    idx = np.flatnonzero(ok)
    on = np.flatnonzero(np.isin(profile.line, np.asarray(lines, np.int64)))
    t_lo, t_hi = union_of(profile.start_ns[on], profile.end_at(on))
    if not len(idx):  # no gap ends at a bound (the fetch seen in the last step only): no tail
        none = np.zeros(0, np.int64)
        return none, none, none, none, np.zeros(len(g_hi), dtype=bool), 0, t_lo
    traced = overlap_with(g_hi[idx], span_lo[nxt[idx]], t_lo, t_hi)
    # the traced spans begun after each gap, to the step's start
    runs = np.searchsorted(t_lo, span_lo[nxt[idx]], "left") - np.searchsorted(t_lo, g_hi[idx])
    out: list[tuple[int, int, int, int]] = []
    in_tail = np.zeros(len(g_hi), dtype=bool)
    group = nxt[idx]
    ends = np.flatnonzero(np.r_[group[1:] != group[:-1], True])  # each step's last candidate
    head = _head(traced[ends], runs[ends], span_hi - span_lo)
    # the traced time and spans after each gap to the next step's head, not to its start: the
    # head is the next call's own, however long it runs (a forward slowed by load)
    to = np.maximum(_head_starts(t_lo, span_lo[nxt[idx]], head), g_hi[idx])
    traced = overlap_with(g_hi[idx], to, t_lo, t_hi)
    runs = np.searchsorted(t_lo, to, "left") - np.searchsorted(t_lo, g_hi[idx])
    for e, b in zip(ends.tolist(), np.r_[0, ends[:-1] + 1].tolist(), strict=True):
        fetch_ns, begins, first = 0, 0, -1
        for k in range(e, b - 1, -1):  # from the bound back, while the tail goes on
            j = int(idx[k])
            if traced[k] > TAIL_TRACED * (fetch_ns + int(g_ns[j])) and runs[k] > 0:
                break
            fetch_ns += int(g_ns[j])
            first, begins = int(g_lo[j]), int(g_hi[j] - g_ns[j])
            in_tail[j] = True
        if first >= 0:
            out.append((int(group[e]), first, int(g_hi[idx[e]]), begins))
    rows = np.array(out, np.int64).reshape(-1, 4)
    return rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], in_tail, head, t_lo


def _head_starts(u_lo: np.ndarray, at: np.ndarray, head: int) -> np.ndarray:
    """Per step start ``at``: where its head of ``head`` traced spans (``u_lo``: the spans'
    starts, sorted) begins; the step's start without a head."""
    if not head:
        return at
    k = np.searchsorted(u_lo, at, "left") - head
    return np.where(k >= 0, u_lo[np.clip(k, 0, None)], at)


def _head(after_ns: np.ndarray, runs: np.ndarray, span_ns: np.ndarray) -> int:
    """How many traced spans of the steps' threads may follow a step's gap of the fetch, to
    its start, the next step's head (decision 1014); ``after_ns`` and ``runs``: per step, the
    traced time and spans after its last gap. A loop over a ``queue.Queue`` a thread fills
    from a DataLoader (PyTorch) fetches with ``get`` (untraced), then runs its model's
    forward, then the loss that leads its steps: each step ran from its loss to the next, the
    next batch's wait and forward in it. The head's time varies (the producer's Python
    contends for the cores: 1.5 to 6 ms, /tmp/ptloop), its spans hardly."""
    if not len(after_ns) or not len(span_ns):
        return 0
    if float(np.median(after_ns)) > HEAD_MAX_SHARE * float(np.median(span_ns)):
        return 0  # the previous step's own work after the fetch, not a head
    return int(np.median(runs))


def _headed(
    span_lo: np.ndarray, span_hi: np.ndarray, moved: np.ndarray, head: int, u_lo: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The kept steps after the first that no tail of the fetch moved (``moved``), contiguous
    with the previous one, and where their head of ``head`` traced spans (``u_lo``: the
    spans' starts) begins, after the previous step's start: a loop whose queue held its
    batch already waited for none, and its forward was the previous step's (decision 1014).
    """
    if not head or len(span_lo) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = np.setdiff1d(np.arange(1, len(span_lo)), moved)
    k = k[span_hi[k - 1] == span_lo[k]]
    at = np.searchsorted(u_lo, span_lo[k], "left") - head
    ok = at >= 0
    k, at = k[ok], at[ok]
    ok = u_lo[at] > span_lo[k - 1]
    return k[ok].astype(np.int64), u_lo[at[ok]].astype(np.int64)


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
        gap_waited_ns=np.zeros(0),
    )
    return fetched, untraced
