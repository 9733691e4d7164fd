"""The pod viewer's lateness heatmap marks a straggler at the step holding its work
(decision 647), as its explanation does (decision 600): a rank pausing at the end of step 5
was marked at step 6, whose all-reduce it arrived last at, where its step table, overview
and the periodic-steps finding show step 5."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_work import late_at_work
from stepscope.tools.pod_viewer import _lateness
from tests.support.arrivals import MS, job
from tests.support.late_ranks import HELD, PAUSE_MS, STEP_NS
from tests.support.late_ranks import pausing as _pausing


def test_a_pause_at_the_end_of_a_step_is_marked_at_that_step() -> None:
    pod = find_stragglers(_pausing(at_the_end=HELD))
    late_ns, late = late_at_work(pod)
    p = pod.hosts.index("p")
    marked = tuple(int(n) for n in pod.step_num[late[p]])
    assert marked == (5, 15, 25, 35)
    col = {int(n): k for k, n in enumerate(pod.step_num.tolist())}
    for held in HELD:  # the lateness moved, the step 5 arrival's in its place
        assert late_ns[p, col[held - 1]] == pod.late_ns[p, col[held]] > 0
        assert late_ns[p, col[held]] == pod.late_ns[p, col[held - 1]]
    np.testing.assert_array_equal(np.delete(late_ns, p, axis=0), np.delete(pod.late_ns, p, axis=0))
    heatmap, _ = _lateness(pod)  # what the pod viewer shows
    assert heatmap is not None
    assert [heatmap.steps[k] for k, x in enumerate(heatmap.late[p]) if x] == [5, 15, 25, 35]


def test_a_pause_inside_its_step_stays_at_its_step() -> None:
    pod = find_stragglers(_pausing(at_the_end=()))
    late_ns, late = late_at_work(pod)
    np.testing.assert_array_equal(late, pod.late)
    np.testing.assert_array_equal(late_ns, pod.late_ns)


def _late_then_after(short_ms: int) -> list:
    """Three ranks of 40 steps; rank "p" idle (untraced) `PAUSE_MS` inside each step k of
    `OWN` (a fetch) and ``short_ms`` more at the end of step k, before the all-reduce of step
    k + 1 (its step k + 1 begins that late): late at k by its own step and at k + 1 by the end
    of step k, as worker1 of a two-worker TensorFlow job whose tf.data map made every other
    batch late (decision 1052)."""
    hosts = ["a", "p", "c"]

    def extra(r: int, s: int) -> int:
        if hosts[r] != "p":
            return 0
        return PAUSE_MS if s in OWN else short_ms if s - 1 in OWN else 0

    def ready(r: int, s: int) -> int:
        return (4 + extra(r, s)) * MS

    def runup(r: int, s: int) -> dict[str, int]:
        more = extra(r, s) * MS
        return {"host_compute": 4 * MS, "other": more} if more else {"host_compute": 4 * MS}

    ranks = job(3, 40, ready, end=50 * MS, runup=runup, hosts=hosts, step_ns=STEP_NS)
    p = ranks[1]
    start = p.steps.start_ns.copy()
    after = np.array(OWN) + 1
    start[after] += short_ms * MS  # its step k + 1 begins after the end of step k...
    dur = np.diff(np.r_[start, start[-1] + STEP_NS])  # ...which its step k holds
    ranks[1] = replace(p, steps=replace(p.steps, start_ns=start, dur_ns=dur))
    return ranks


OWN = (5, 15, 25, 35)


def test_a_step_late_of_its_own_keeps_its_lateness_and_takes_the_next_ones() -> None:
    """Rank "p" is late at step 5 by its own step (35 ms) and at step 6 by the end of step
    5 (10 ms): both are step 5's work, so the heatmap marks step 5 with both (45 ms) and
    step 6 not late. The cells were swapped: step 5 read 10 ms and step 6 35 ms, the
    rank's long fetch shown a step after the script timed it (decision 1052)."""
    pod = find_stragglers(_late_then_after(10))
    [s] = [s for s in pod.stragglers if s.host == "p"]
    assert set(OWN) <= set(s.steps) and {k + 1 for k in OWN} <= set(s.held_steps)
    late_ns, late = late_at_work(pod)
    p = pod.hosts.index("p")
    col = {int(n): k for k, n in enumerate(pod.step_num.tolist())}
    assert tuple(int(n) for n in pod.step_num[late[p]]) == OWN
    for k in OWN:
        own, after = pod.late_ns[p, col[k]], pod.late_ns[p, col[k + 1]]
        assert own > after > 0
        assert late_ns[p, col[k]] == own + after
        assert late_ns[p, col[k + 1]] == 0
    np.testing.assert_array_equal(np.delete(late_ns, p, axis=0), np.delete(pod.late_ns, p, axis=0))
