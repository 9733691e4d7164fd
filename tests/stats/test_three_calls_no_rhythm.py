"""A name seen three times, twice together and once far off, is no rhythm: two periods, one
of them nearly the whole profile, are "steady" (the larger of two is within twice their
median, their mean) and hold "the same work" (the most common of two different works is one
of them) by rules meant for many periods. JAX's ``PythonRefManager::CollectGarbage`` at the
top level, twice in the first batch's fetch and once after ``block_until_ready``, was the
coarsest candidate of a jitted loop over a slow generator: 2 steps for 40 (decision 682)."""

from __future__ import annotations

from stepscope.stats.steps.infer import infer_steps
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

GC = "PythonRefManager::CollectGarbage"
STEP = "PjitFunction(train_step)"


def test_a_name_seen_twice_together_and_once_at_the_end_is_no_loop() -> None:
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "python")
    main.event(GC, int(0.4 * MS), int(0.002 * MS))
    main.event(GC, int(0.6 * MS), int(0.001 * MS))
    t = 34.0  # the first batch's fetch, untraced
    for k in range(40):
        dur = 1500.0 if k == 0 else 0.2  # the first call compiles
        main.event(STEP, int(t * MS), int(dur * MS))
        t += dur + 30.0  # the next batch's fetch, untraced Python
    main.event(GC, int(t * MS), int(0.003 * MS))
    found = infer_steps(build(builder))
    assert found is not None
    assert f"repeats of top-level event '{STEP}'" in found.description, found.description
    assert len(found.start_ns) >= 39
