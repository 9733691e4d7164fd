"""A jitted JAX loop reading its loss on the host every 10 iterations (``float(loss)``: JAX's
``np.asarray(jax.Array)``, a wait for the computation queued before it) has steps of one
iteration, not of ten: the read's rhythm is coarser than the update's, and the coarsest
candidate won (decision 726: 100 iterations read as 10 steps)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

ITERATIONS = 100
EVERY = 10
SYNC_MS = 20.0  # the read waits for the 10 updates queued before it


def _loop(
    read: str = "np.asarray(jax.Array)", last_read_ms: float = SYNC_MS
) -> tuple[Profile, list[float]]:
    """The update returns in 0.1 ms (asynchronous dispatch); every 10th iteration then reads
    the loss with ``read``, the last one for ``last_read_ms``; XLA computes on its own
    thread. Returns the iterations' starts."""
    builder = XSpaceBuilder("host")
    host = builder.plane("/host:CPU")
    host.stats[STARTED_ON_THREAD_STAT] = 1  # the capture began on the loop's thread
    main = host.line(1, "main")
    xla = host.line(2, "tf_XLAPjRtCpuClient/-7")
    t, starts = 0.0, []
    for k in range(ITERATIONS):
        starts.append(t)
        main.event("PjitFunction(train_step)", int(t * MS), int(0.1 * MS))
        main.event("Wait for usage holds", int((t + 0.11) * MS), int(0.01 * MS))
        xla.event("ThunkExecutor::Execute", int((t + 0.1) * MS), int(1.9 * MS))
        t += 0.15
        if (k + 1) % EVERY == 0:
            sync = last_read_ms if k == ITERATIONS - 1 else SYNC_MS
            main.event(read, int(t * MS), int(sync * MS))
            t += sync
        t += 0.05
    return build(builder), starts


def test_a_loss_read_every_ten_iterations_leaves_steps_of_one() -> None:
    profile, starts = _loop()
    found = infer_steps(profile)
    assert found is not None
    assert "'PjitFunction(train_step)'" in found.description, found.description
    assert np.allclose(found.start_ns / MS, starts, atol=1e-6)
    db = build_step_db(profile)
    assert db.n_steps == ITERATIONS
    # the read's cost lies in the step where it happens
    slow = np.flatnonzero(db.dur_ns > 10 * MS)
    assert slow.tolist() == list(range(EVERY - 1, ITERATIONS, EVERY))
    assert float(np.median(db.dur_ns)) / MS == 0.2


def test_a_last_read_longer_than_the_reads_periods_is_the_last_steps() -> None:
    """The last read waits for the updates queued before it as every read does; on a loaded
    machine it ran 1.04-1.15x the median of the reads' periods (3 of 6 runs of
    tests/capture/test_truth_logging_loop.py's loop), and the last step then ended before it
    (0.02 ms for the script's 6.23): an event longer than the median period was taken for
    work done once after the loop (decision 1046's cap). It is the iteration's up to three
    times that median (decision 1090)."""
    profile, _ = _loop(last_read_ms=1.3 * SYNC_MS)
    db = build_step_db(profile)
    assert db.n_steps == ITERATIONS
    assert db.dur_ns[-1] / MS >= 1.3 * SYNC_MS, db.description
