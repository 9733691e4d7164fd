"""The pod viewer's lateness heatmap marks a straggler at the step holding its work
(decision 647), as its explanation does (decision 600): a rank pausing at the end of step 5
was marked at step 6, whose all-reduce it arrived last at, where its step table, overview
and the periodic-steps finding show step 5."""

from __future__ import annotations

import numpy as np

from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_work import late_at_work
from stepscope.tools.pod_viewer import _lateness
from tests.support.late_ranks import HELD
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
