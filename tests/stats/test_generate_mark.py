"""stepscope's mark of a ``generate()`` call is the step's marker, no work of its own
(decision 563): the Python inside a call that no op covers is untraced host time, as it is
without the mark, not "work inside traced regions" nor XProf's host compute."""

from __future__ import annotations

import numpy as np

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.bound import bound_by
from stepscope.stats.events import EventType
from tests.support.analysis import MS, build
from tests.support.generate_loop import CALL_MS, CALLS, generate_loop


def test_a_generate_calls_python_is_untraced_host_time() -> None:
    profile = build(generate_loop())
    db = build_step_db(profile)
    assert db.source == "serving" and len(db.dur_ns) == CALLS
    host_compute = db.type_ns[:, EventType.HOST_COMPUTE // 10] / MS
    assert np.allclose(host_compute, 3.0)  # the ops, not the whole call
    assert np.allclose(db.dur_ns / MS, CALL_MS)
    bound = bound_by(summarize_steps({"h": db}))
    host = next(limit for limit in bound.limits if limit.key == "host")
    assert "no traced op covers" in host.evidence, host.evidence
    assert "inside traced regions" not in host.evidence, host.evidence
