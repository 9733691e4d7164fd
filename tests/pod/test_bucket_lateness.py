"""DDP's gradient buckets: a rank enqueues a bucket's all-reduce while its previous one still
runs (gloo runs two at once), so a late rank is late at every bucket of the step by the same
lateness, one bucket's gradients apart, and the others wait at the last bucket only
(decision 1035). Shapes of a 2-rank gloo job whose rank 0 did 1.6 ms of Python a step."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.stragglers import find_stragglers, left_behind
from tests.support.arrivals import MS, Call, rank

US = 1_000
STEPS = 12
LATE = 1_600 * US  # rank 0's Python before its backward, each step
GRADS = 300 * US  # from the first bucket's gradients to the second's, on every rank
STEP = 8 * MS


def _job(after_exit: bool = False) -> list:
    """Per step (8 ms): rank 1 enqueues its first bucket at 1 ms, rank 0 1.6 ms later, both
    leave it 0.5 ms after rank 0's arrival. The second bucket: ``GRADS`` after each rank's
    first (while it runs); or, ``after_exit``, 0.1 ms after leaving the first, rank 0 1.6
    ms later again."""
    ranks = []
    for r in range(2):
        late = LATE if r == 0 else 0
        calls = []
        for s in range(STEPS):
            t0 = s * STEP + MS
            first = (t0 + late, t0 + LATE + 500 * US)
            if after_exit:
                second = (first[1] + 100 * US + late, first[1] + 100 * US + LATE + 500 * US)
            else:
                second = (first[0] + GRADS, first[1] + GRADS)
            runup = {"host_compute": MS, "other": late}
            calls.append(Call(s, *first, runup=runup))
            calls.append(Call(s, *second, runup={"host_compute": GRADS, "other": late}))
        ranks.append(rank(f"vm.rank{r}", calls, STEPS, step_ns=STEP))
    return ranks


def test_a_rank_late_at_both_buckets_held_the_other_once() -> None:
    """The union of the two margins (1.6 ms each, 0.3 ms apart) read 1.9 ms a step: rank 1
    was computing its second bucket's gradients for 0.3 ms of it."""
    pod = find_stragglers(_job())
    [late] = pod.stragglers
    assert late.host == "vm.rank0" and late.reason == "other"
    n = len(late.steps)
    assert n == STEPS
    assert late.late_ns / n == pytest.approx(LATE, abs=1)
    assert "1.60 ms per step after the next rank" in late.explanation
    assert np.nanmean(pod.wait_ns[1]) == pytest.approx(LATE, abs=1)
    assert late.waited_ns == pytest.approx(n * LATE, abs=n)


def test_buckets_run_one_after_the_other_count_both() -> None:
    """A bucket enqueued only after the previous one left (a rank waiting on each), rank 0
    late at each by its own work: the others waited at each, and both margins count."""
    pod = find_stragglers(_job(after_exit=True))
    [late] = pod.stragglers
    assert late.late_ns / len(late.steps) == pytest.approx(2 * LATE, abs=1)


def test_left_behind_reads_each_ranks_own_arrivals_and_exits() -> None:
    arrive = np.array([[0, 5, 20, 100], [0, 30, 40, 100]])
    exit_ = np.array([[10, 25, 30, 110], [35, 45, 50, 110]])
    step = np.array([0, 0, 0, 1])
    # rank 0 arrived at its second call (5) before leaving the first (10), and at the
    # third (20) before leaving the second (25); step 1's call has no next in its step
    assert left_behind(arrive, exit_, step).tolist() == [
        [True, True, False, False],
        [True, True, False, False],
    ]
