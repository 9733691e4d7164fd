"""At the job's first collective, a rank whose first step began later than the others' (its
capture began later) arrives as if it had begun with them: only a longer run-up makes it late
there (decision 727)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.stragglers_first_call import from_the_first_steps

MS = 1_000_000


def _runups(*ms: float) -> np.ndarray:
    """(ranks, 2 calls, 2 categories): each rank's run-up of ``ms`` before each call."""
    out = np.zeros((len(ms), 2, 2), np.int64)
    out[:, :, 1] = (np.array(ms) * MS).astype(np.int64)[:, None]
    return out


def test_a_rank_beginning_its_first_step_late_is_late_by_its_run_up_only() -> None:
    first = np.array([0, 600 * MS])  # rank 1's capture began 600 ms later
    runup = _runups(100.0, 130.0)
    arrive = np.array([[100 * MS, 300 * MS], [730 * MS, 800 * MS]])
    out = from_the_first_steps(arrive, runup, first)
    assert out[:, 0].tolist() == [100 * MS, 130 * MS]  # 30 ms later, its longer run-up
    assert (out[:, 1] == arrive[:, 1]).all()  # later calls as they were


def test_a_rank_with_a_collective_before_its_first_step_keeps_its_arrival() -> None:
    # rank 1's run-up began before its first step (a collective earlier in its trace)
    first = np.array([0, 600 * MS])
    runup = _runups(100.0, 20.0)
    arrive = np.array([[100 * MS, 300 * MS], [730 * MS, 800 * MS]])
    assert (from_the_first_steps(arrive, runup, first) == arrive).all()


def test_the_first_call_is_the_earliest_whatever_its_column() -> None:
    first = np.array([0, 600 * MS])
    runup = np.zeros((2, 2, 2), np.int64)
    runup[:, 1, 1] = [100 * MS, 130 * MS]
    runup[:, 0, 1] = [50 * MS, 50 * MS]
    arrive = np.array([[300 * MS, 100 * MS], [800 * MS, 730 * MS]])
    out = from_the_first_steps(arrive, runup, first)
    assert out[:, 1].tolist() == [100 * MS, 130 * MS] and (out[:, 0] == arrive[:, 0]).all()
