"""A jitted JAX loop that blocks on its update (``block_until_ready``) before asking its Python
generator for the next batch: each untraced gap of the loop's thread holds the wait for XLA's
threads, then the fetch. The capture times the first fetches, and their share of those gaps
was the fetch's share in every step; the first calls' updates ran longer (the first one
compiles and runs cold), so the later steps' fetch read 25.4 ms for the 30.8 ms the script
timed in ``next()``, each step began 5 ms after its fetch and the rest read as Python / host;
the first steps' long waits read as fetching, taken from compute (decision 1064). The wait's
part of a gap and the rest now each have their own share."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.steps.fetch_share import shared, waited_parts
from tests.support.analysis import MS, build
from tests.support.fetch_loop import jitted_loop

ITERATIONS = 14
FETCH_MS = 6.0  # the generator making a batch, untraced
DISPATCH_MS = 0.1  # the jitted call returning once XLA has its work
# XLA running the update: the first call's, the other timed iterations' and the later ones'
FIRST_CALL_MS = 20.0
FIRST_COMPUTE_MS = 8.0
COMPUTE_MS = 2.0


def _compute_ms(k: int) -> float:
    return FIRST_CALL_MS if k == 0 else FIRST_COMPUTE_MS if k < 4 else COMPUTE_MS


def _loop(compute_ms: Callable[[int], float] = _compute_ms) -> tuple[Profile, list[float]]:
    """The loop, waiting for XLA untraced, and each iteration's time as the script's own clock
    reads it (from its ``next()`` to the end of its ``block_until_ready``)."""
    builder, clock = jitted_loop(ITERATIONS, FETCH_MS, DISPATCH_MS, compute_ms, "untraced")
    return build(builder), clock


def test_the_later_steps_fetch_is_the_scripts_next() -> None:
    profile, clock = _loop()
    db = build_step_db(profile)
    later = slice(5, -1)  # whole iterations the probe did not time
    limits = db.limit_ns()
    # the generator's whole time, not its share of gaps that held a longer wait (3.4 ms)
    assert np.allclose(limits["input"][later] / MS, FETCH_MS, atol=0.05), limits["input"] / MS
    assert np.allclose(limits["compute"][later] / MS, COMPUTE_MS + DISPATCH_MS, atol=0.05)
    assert np.allclose(limits["host"][later] / MS, 0.0, atol=0.05)
    # each step is the script's iteration: it begins at its next(), not 2.6 ms into it
    assert len(db.dur_ns) == ITERATIONS
    assert np.allclose(db.dur_ns[1:-1] / MS, clock[1:-1], atol=0.02), db.dur_ns / MS


def test_the_first_steps_wait_stays_compute() -> None:
    profile, _ = _loop()
    db = build_step_db(profile)
    limits = db.limit_ns()
    # the fetch timed after the wait in the same gap: the waits, 20 ms at the first call and
    # 8 ms after, are compute, and only the fetch is input
    assert np.allclose(limits["input"][1:4] / MS, FETCH_MS, atol=0.05), limits["input"] / MS
    compute = limits["compute"][1:4] / MS
    assert np.allclose(compute, [FIRST_COMPUTE_MS + DISPATCH_MS] * 3, atol=0.05), compute


def test_waits_alike_in_every_step_read_as_before() -> None:
    # the timed steps' waits as long as the later ones': one share fits all gaps
    profile, clock = _loop(lambda k: COMPUTE_MS)
    db = build_step_db(profile)
    limits = db.limit_ns()
    assert np.allclose(limits["input"][1:-1] / MS, FETCH_MS, atol=0.05)
    assert np.allclose(db.dur_ns[1:-1] / MS, clock[1:-1], atol=0.02)


def test_the_pauses_between_a_long_computations_waits_are_no_fetch() -> None:
    # one timed gap: waits 0-8 and 10-12 ms with a pause between (XLA's threads idle), then
    # the fetch 12-18; a later gap of the same place: a 2 ms wait, then a 6 ms fetch
    ms = np.int64(MS)
    g_lo, g_hi = np.array([0, 100]) * ms, np.array([18, 108]) * ms
    waited = (np.array([0, 10, 100]) * ms, np.array([8, 12, 102]) * ms)
    fetch_lo, fetch_hi = np.array([12]) * ms, np.array([18]) * ms
    parts = waited_parts(g_lo, g_hi, fetch_lo, fetch_hi, waited)
    over = np.array([6, 0]) * ms
    place, probed = np.array([0, 0]), np.array([True, False])
    counted, in_waited = shared(g_hi - g_lo, over, parts, place, probed, 1)
    # the later gap's whole tail (4.5 ms, 6 x 6/8, with the pause in the timed one's share)
    assert np.allclose(counted / MS, [6.0, 6.0]), counted / MS
    assert np.allclose(in_waited, 0.0)


def test_the_last_step_holds_its_wait_and_the_others_their_fetch() -> None:
    """The last step ends with its wait for XLA (decision 1065), as the script's clock does.
    An Eigen worker's event of the timed iterations' updates ran 3 ms into their fetch, so a
    waited gap has a share of the fetch's time, and the last step's trailing gap (its wait,
    20 ms here) took one: the fetch's time at the steps' bounds fell under `AT_BOUNDS` of all
    and no step began at its fetch (a fresh jaxj0 run: 98.99%). That gap precedes no step:
    the steps begin at their next() still (the timed ones' shares aside)."""
    last = ITERATIONS - 1
    builder, clock = jitted_loop(
        ITERATIONS,
        FETCH_MS,
        DISPATCH_MS,
        lambda k: FIRST_CALL_MS if k in (0, last) else _compute_ms(k),
        "untraced",
    )
    eigen = builder.plane("/host:CPU").line(3, "tf_XLAEigen/-3")
    for k in range(1, 4):  # each timed fetch begins where the script's iteration k does
        began = sum(clock[:k])
        eigen.event("ThunkExecutor::Execute", int((began - 1) * MS), int(4 * MS))
    db = build_step_db(build(builder))
    assert len(db.dur_ns) == ITERATIONS
    # the later steps (their gaps had no worker's event in their fetch) begin at their next()
    assert np.allclose(db.dur_ns[5:-1] / MS, clock[5:-1], atol=0.02), db.dur_ns / MS
    assert db.dur_ns[-1] / MS > clock[-1] - 0.02  # its wait, 20 ms, in it
