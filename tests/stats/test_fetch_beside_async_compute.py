"""A jitted JAX update returns at once and XLA computes it on its own threads while the loop
asks its Python generator for the next batch: the loop's time in the generator is input,
though the computation runs meanwhile (decision 725). The wait rule (`waits`) gave that
untraced time to the computation, as for a thread blocked in ``block_until_ready``, and a loop
the script measured at 80.7% in ``next()`` read 0.1% input."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.bound import bound_by
from stepscope.stats.summary import summarize_steps
from tests.support.analysis import MS, build
from tests.support.fetch_loop import jitted_loop

ITERATIONS = 12
FETCH_MS = 6.0  # the generator making a batch, untraced
DISPATCH_MS = 0.1  # the jitted call returning once XLA has its work
COMPUTE_MS = 2.0  # XLA running the update, under the next fetch


def _loop(block: bool = False) -> Profile:
    """Each iteration: the fetch (the sampler sees the generator), the jitted call, and XLA's
    work on its client thread from the call's end; with ``block``, the loop then waits for it
    (``block_until_ready``: an untraced wait that an ``Await`` ends) before its next fetch."""
    builder, _ = jitted_loop(
        ITERATIONS, FETCH_MS, DISPATCH_MS, lambda k: COMPUTE_MS, "await" if block else ""
    )
    return build(builder)


def test_the_fetch_under_xlas_work_is_input() -> None:
    db = build_step_db(_loop())
    steps = slice(1, -1)  # whole iterations: each holds one fetch and one update
    limits = db.limit_ns()
    input_ms = limits["input"][steps] / MS
    assert np.allclose(input_ms, FETCH_MS, atol=0.05), input_ms  # 4.0 when compute took it
    # the jitted call alone is the model's
    assert np.allclose(limits["compute"][steps] / MS, DISPATCH_MS, atol=0.05)
    assert np.allclose(db.dur_ns[steps] / MS, FETCH_MS + DISPATCH_MS, atol=1e-3)
    found = bound_by(summarize_steps({"h": db}))
    assert found.first == "input", found.headline
    assert "batches (data.py)" in found.headline


def test_a_loop_blocked_on_xlas_work_still_waits_for_compute() -> None:
    # the same loop waiting for its update before the next fetch: the wait is compute, the
    # fetch input, each its own
    db = build_step_db(_loop(block=True))
    steps = slice(1, -1)
    limits = db.limit_ns()
    assert np.allclose(limits["input"][steps] / MS, FETCH_MS, atol=0.05)
    # the jitted call counts as the model's too
    assert np.allclose(limits["compute"][steps] / MS, COMPUTE_MS + DISPATCH_MS, atol=0.05)
