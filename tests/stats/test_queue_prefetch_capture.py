"""A real capture of a JAX loop fed by a prefetch thread (decision 1011).

The script (the helper jaxq's loop, 2 Dec 2026 14:55 UTC, load 6.9): a producer thread
makes each batch with NumPy (21 ms asleep, 9 ms of ``np.tanh``), puts it on the device with
``jax.device_put`` and in a ``queue.Queue(maxsize=2)``; the loop, 40 iterations of
``x, y = q.get()``, an ``@jax.jit`` train step and ``float(loss)``, with only
``stepscope.start``/``stop`` around it (started before the thread and the compiling first
call). Its own ``perf_counter_ns`` clock: once warm (iterations 1-39) 968.99 ms in
``q.get()`` of 1211.82 ms, 80.0%; median iteration 32.70 ms, the last 31.92 ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.model.load import open_file
from stepscope.stats.steps.breakdown import StepDb, build_step_db

CAPTURE = Path(__file__).parents[1] / "data" / "jax_queue_prefetch.xplane.pb"
SCRIPT_WAIT = 80.0  # % of the warm iterations' time in q.get(), the script's own clock
SCRIPT_LAST_MS = 31.92  # its last iteration, q.get() to float(loss)


def _warm_share(db: StepDb, limit: str) -> float:
    return 100.0 * float(db.limit_ns()[limit][1:].sum()) / float(db.dur_ns[1:].sum())


def test_the_warm_loops_wait_in_the_queue_is_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The producer's traced device_put cuts each later wait in pieces; their median no longer
    passes for the first fetches' (the queue full after the compile). Before: 33.7% input,
    44.4% Python / host."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    db = build_step_db(open_file(CAPTURE, use_cache=False))
    assert len(db.dur_ns) == 40
    assert db.fetched.function[:1] == ("get (queue.py)",)
    assert _warm_share(db, "input") == pytest.approx(SCRIPT_WAIT, abs=5.0)
    assert _warm_share(db, "host") < 5.0


def test_each_step_begins_with_its_wait_in_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait ends in pieces before the next call's traced argument handling, not at the
    step's bound: the steps now begin at their batch's fetch, and the last one holds its
    wait (decision 1011). Before: 5.05 ms, the call alone."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    db = build_step_db(open_file(CAPTURE, use_cache=False))
    assert "each begins earlier, at its wait for its batch in a queue" in db.description
    assert float(db.dur_ns[-1]) / 1e6 == pytest.approx(SCRIPT_LAST_MS, abs=0.5)
