"""The loop's fetch under a computation it does not wait for (decision 725).

A jitted JAX update returns as soon as XLA has its work (asynchronous dispatch): the loop
then asks its Python generator for the next batch while XLA's threads compute the update it
just dispatched. `waits` gives the steps' threads' untraced time to a computation running
meanwhile, its rule for ``block_until_ready`` (a thread blocked on the model's work), and the
fetch, found in the time the limits give to nothing (`fetch`), kept only what compute had not
taken: a loop that spent 80.7% of its time in ``next()`` (its own ``perf_counter_ns``) read
0.1% input, 99.9% compute.

A thread the sampler sees inside its Python iterator (or the probe timed there) is fetching
whatever runs on other threads: the fetch is looked for in that waited time too, and what it
takes there moves from "compute" to "input". A wait that is a wait keeps its compute: the
samples in a ``block_until_ready`` are in the update's frame, not the iterator's, and its
gaps are another place (`fetch._gap_places`) than the fetch's.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.intervals import overlap_with, subtract_sets
from stepscope.stats.steps.fetch import Fetched, iterator_fetches
from stepscope.stats.steps.limit_table import Covered
from stepscope.stats.steps.limits import LimitType

_UNTRACED = int(LimitType.UNTRACED) // 10
_WAITED = int(LimitType.COMPUTE_WAITED) // 10
_INPUT = int(LimitType.INPUT) // 10


def fetches_beside_compute(
    profile: Profile,
    step_lines: tuple[int, ...],
    traced: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    covered: Covered,
    counted: np.ndarray,
) -> tuple[Fetched, np.ndarray]:
    """`fetch.iterator_fetches` in the steps' untraced time and in the time only a wait for
    a computation covers (``covered.waited_*``), and per step the fetch's time in the latter."""
    c_lo, c_hi = subtract_sets(covered.lo, covered.hi, covered.waited_lo, covered.waited_hi)
    fetched = iterator_fetches(
        profile,
        step_lines,
        traced,
        span_lo,
        span_hi,
        c_lo,
        c_hi,
        counted,
        (covered.waited_lo, covered.waited_hi),
    )
    waited = np.zeros(len(span_lo), np.int64)
    g_lo, g_hi = fetched.gap_lo, fetched.gap_hi
    if not len(g_lo) or not len(covered.waited_lo):
        return fetched, waited
    if len(fetched.gap_waited_ns) == len(g_lo):
        # where the timed fetches lay in each gap: beside the computation or after it
        # (`fetch_share`, decision 1064); where only samples placed it, as below
        over = fetched.gap_waited_ns
    else:
        # each gap's fetch is spread over it evenly: its share of the gap's waited part
        share = fetched.gap_ns / np.maximum(g_hi - g_lo, 1)
        over = overlap_with(g_lo, g_hi, covered.waited_lo, covered.waited_hi) * share
    step = np.searchsorted(span_lo, g_lo, "right") - 1
    waited = np.bincount(step, weights=over, minlength=len(span_lo)).round().astype(np.int64)
    return fetched, waited


def fetch_to_input(ns: np.ndarray, fetch_ns: np.ndarray, waited_ns: np.ndarray) -> np.ndarray:
    """Move per step the fetch's time ``fetch_ns`` to the input column of the limits ``ns``
    (in place): ``waited_ns`` of it from the computation waited for, the rest from the
    untraced time, each at most what that column holds; the time moved, per step."""
    waited = np.minimum(np.minimum(waited_ns, fetch_ns), ns[:, _WAITED])
    untraced = np.minimum(fetch_ns - np.minimum(waited_ns, fetch_ns), ns[:, _UNTRACED])
    ns[:, _WAITED] -= waited
    ns[:, _UNTRACED] -= untraced
    ns[:, _INPUT] += waited + untraced
    return waited + untraced
