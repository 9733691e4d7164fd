"""A plain loop's step 0 begins no earlier than where ``stepscope.start()`` returned (decision
1048): what the thread did during the capture's own start-up (JAX's garbage collection, run
as its profiler starts) is no iteration of the loop the script times after it."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import START_RETURNED_STAT, STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

THREAD = 7
RETURNED_MS = 3.0  # the start-up: from the recording's start to start()'s return
STEP_MS = 2.0


def _jax_loop(returned: bool = True, thread: int = THREAD) -> Profile:
    """Garbage collections 1.6 ms before ``start()`` returned, then 8 jitted steps from 0.2 ms
    after it (the first compiling, 40 ms), each with its collection."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = thread
    if returned:
        plane.stats[START_RETURNED_STAT] = int(RETURNED_MS * MS)
    line = plane.line(THREAD, "python")
    for k in range(3):
        line.event("PythonRefManager::CollectGarbage", int((1.4 + 0.1 * k) * MS), 2000)
    t = RETURNED_MS + 0.2
    for k in range(8):
        dur = 40.0 if k == 0 else STEP_MS
        line.event("PjitFunction(update)", int(t * MS), int(dur * MS))
        line.event("PythonRefManager::CollectGarbage", int((t + dur + 0.05) * MS), 1000)
        t += dur + 0.3
    return build(builder)


def test_step_0_begins_where_start_returned() -> None:
    found = infer_steps(_jax_loop())
    assert found is not None and len(found.start_ns) == 8
    # before: at the first collection, 1.6 ms into the capture's start-up
    assert found.start_ns[0] == int(RETURNED_MS * MS)
    assert "step 0 from where stepscope.start() returned, after 1.60 ms" in found.description
    assert "thread's first event" not in found.description


def test_an_older_capture_begins_step_0_at_the_threads_first_event() -> None:
    """No stat (a capture saved before it was written): the rule of decision 360 as before."""
    found = infer_steps(_jax_loop(returned=False))
    assert found is not None
    assert found.start_ns[0] == int(1.4 * MS)
    assert "thread's first event" in found.description


def test_a_start_on_another_thread_moves_nothing() -> None:
    """``start()`` returned on another thread than the loop's: its time says nothing of this
    loop's first iteration."""
    found = infer_steps(_jax_loop(thread=THREAD + 1))
    assert found is not None
    assert "start() returned" not in found.description
    assert found.start_ns[0] != int(RETURNED_MS * MS)
