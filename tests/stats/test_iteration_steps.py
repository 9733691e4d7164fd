"""Inferred steps placed at the user's iterations (`stepscope.stats.steps.cycle`, decision
360): a capture begun on the loop's thread puts each step's start where an iteration begins,
step 0's compile in step 0 and the last iteration in a step; a capture begun mid-loop keeps
the repeat's phase."""

from __future__ import annotations

import numpy as np

from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.compiled_loop import BACKWARD, compiled_loop


def _steps(profile: object) -> tuple[np.ndarray, np.ndarray, str]:
    found = infer_steps(profile)  # type: ignore[arg-type]
    assert found is not None
    return found.start_ns / MS, found.end_ns / MS, found.description


def test_a_loop_captured_from_its_start_has_one_step_per_iteration() -> None:
    """The coordinator's torch.compile loop: the forward's compile ran before the first
    backward and was in no step; steps ran from backward to backward."""
    profile, began = compiled_loop(10)
    starts, ends, description = _steps(profile)
    assert len(starts) == 10  # every iteration, the last one too
    assert starts.round(3).tolist() == np.round(began, 3).tolist()
    assert ends[:-1].tolist() == starts[1:].tolist()
    # step 0 holds both compiles: it lasts as long as the first iteration
    assert ends[0] - starts[0] > 1300
    # the last step ends with the optimizer step of the last iteration
    last = began[-1] + 0.1 + 0.05 + 0.5 + 0.1 + 0.7 + 0.2 + 5 * 0.05
    assert abs(ends[-1] - last) < 1e-6
    assert "the last one ends with its work" in description


def test_the_iteration_starts_at_its_first_member_not_at_the_repeat_chosen() -> None:
    """Whatever repeat is chosen (here the backward, the busiest), steps start with the batch."""
    profile, began = compiled_loop(6, compile_ms=1.0, backward_compile_ms=0.0)
    starts, _, _ = _steps(profile)
    assert starts.round(3).tolist() == np.round(began, 3).tolist()


def test_a_capture_begun_mid_loop_keeps_the_repeats_phase() -> None:
    """The flight recorder's ring or a remote capture: nothing says where an iteration
    begins, and the work before the first repeat may be a cut iteration: no step holds it,
    and N repeats stay N - 1 steps."""
    profile, began = compiled_loop(10, started_here=False, cut_ms=1000.0)
    starts, _, description = _steps(profile)
    assert len(starts) == 9
    assert starts[0] > began[0] + 1000  # the cut iteration's work is in no step
    assert "ends with its work" not in description and "capture began" not in description


def test_a_name_also_called_before_the_loop_does_not_start_the_steps() -> None:
    """``aten::randn`` in the model's set-up, after ``start()``: it cannot say where
    iteration 0 began, so the steps start at the next member of the cycle."""
    profile, began = compiled_loop(
        8, compile_ms=1.0, backward_compile_ms=0.0, setup=("aten::randn",)
    )
    starts, _, description = _steps(profile)
    assert "'aten::randn'" not in description.split("(")[0]
    # step 0 still starts at the thread's first event: the capture began there
    assert starts[0] == 0.5
    # later steps start with the batch's second op; the last iteration, from it, lacks the
    # next batch's first op that every other period ends with: it is still one whole
    # iteration, and a step (decision 475: 7 steps before, for the script's 8)
    assert len(starts) == 8
    assert "the last one ends with its work" in description
    assert all(b < s < b + 0.2 for s, b in zip(starts[1:], began[1:], strict=False))


def test_a_first_iteration_longer_than_all_others_does_not_disqualify_the_loop() -> None:
    """tf.function: the step function's first call traces and compiles (967 ms, then 2 ms
    a call) and holds nothing else; a handle deletion follows every later call. The step
    function was disqualified (one period held over half of the time, with other work) and
    the deletion, which starts mid-loop, made the steps."""
    builder = XSpaceBuilder("host")
    line = builder.plane("/host:CPU").line(1, "python")
    t = 0.0
    for k in range(12):
        line.event("train_step", int(t * MS), int((967.0 if k == 0 else 1.5) * MS))
        t += 967.5 if k == 0 else 1.6
        if k:
            line.event("TFE_DeleteTensorHandle", int(t * MS), int(0.01 * MS))
        t += 0.4
    _, _, description = _steps(build(builder))
    assert description.startswith("12 repeats of top-level event 'train_step'")
    assert "after a first 967.9 ms" in description


def test_a_last_iteration_dispatched_asynchronously_is_no_step() -> None:
    """jax.jit: the call returns at once and its work runs on other threads; the last
    iteration as the loop's thread shows it is far shorter than a step."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats["stepscope_started_on_thread"] = 1
    line = plane.line(1, "python")
    for k in range(8):
        t = 2.0 * k
        dur = 0.02 if k == 7 else 1.8
        line.event("PjitFunction(update)", int(t * MS), int(dur * MS))
        line.event("PythonRefManager::CollectGarbage", int((t + dur + 0.01) * MS), 1000)
    starts, _, _ = _steps(build(builder))
    assert len(starts) == 7


def test_no_stat_of_another_thread_moves_the_steps() -> None:
    """``start()`` called on another thread than the loop's: the loop may have been running."""
    profile, _ = compiled_loop(6, compile_ms=1.0, backward_compile_ms=0.0)
    plane = profile.planes[0]
    plane.stats["stepscope_started_on_thread"] = 99
    starts, _, description = _steps(profile)
    assert len(starts) == 5 and "capture began" not in description
    assert BACKWARD in description or "repeats" in description


def _jitted_loop_with_busier_client(started_here: bool) -> object:
    """A jitted update fed by a Python generator (the coordinator's ``jax_jit.py``): on the
    loop's thread one call of the jitted function per iteration and six small eager calls of
    the parameter update, between them the fetch (untraced: 5 ms of the 7 ms); on an XLA
    client thread the executions, busier than the loop's traced events, repeating fewer
    times and irregularly (a period of 2 to 5 iterations)."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    if started_here:
        plane.stats[STARTED_ON_THREAD_STAT] = 1
    loop = plane.line(1, "python")
    client = plane.line(2, "tf_XLAPjRtCpuClient/1")
    every = [2, 3, 5, 2, 4, 3, 5, 2, 3, 4, 2, 5]
    due = 0
    for k in range(40):
        t = 7.0 * k + 5.0  # after the fetch
        loop.event("PjitFunction(loss)", int(t * MS), int(0.3 * MS))
        for j in range(6):
            name = "PjitFunction(multiply)" if j % 2 == 0 else "PjitFunction(subtract)"
            loop.event(name, int((t + 0.4 + 0.2 * j) * MS), int(0.1 * MS))
        client.event("ThunkExecutor::Execute (wait for completion)", int((t + 0.3) * MS), MS)
        if k == due:
            client.event("ThunkExecutor::Execute", int((t + 1.4) * MS), int(0.4 * MS))
            due += every[k % len(every)]
    return build(builder)


def test_the_loop_the_capture_began_on_is_tried_before_a_busier_client_thread() -> None:
    """The loop's thread holds the user's iterations; the busier client thread's repeat
    made 28 steps of 28.6 ms for the script's 100 of 8.4 ms (decision 368)."""
    starts, ends, description = _steps(_jitted_loop_with_busier_client(started_here=True))
    assert "'PjitFunction(loss)'" in description
    assert len(starts) in (39, 40)
    assert np.median(ends - starts) == 7.0


def test_without_the_start_stat_the_busiest_thread_is_still_tried_first() -> None:
    """Another profiler's file (or a capture begun elsewhere) says nothing about the loop's
    thread: the rule before is kept."""
    _, _, description = _steps(_jitted_loop_with_busier_client(started_here=False))
    assert "'ThunkExecutor::Execute'" in description


def test_a_name_called_twice_an_iteration_makes_one_step_per_two_calls() -> None:
    """TF eager over a Python generator: ``TFE_Py_ExecuteCancelable`` runs the forward and
    then the gradient, so its periods alternate (a short one inside the iteration, a long one
    holding the fetch), and no name comes once an iteration. With a garbage collection in a
    few short periods the long ones were the most common work and the steps were half
    iterations: 201 of 9.6 ms for the script's 100 of 18.4 ms (decision 369)."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    for k in range(30):
        t = 20.0 * k + 6.0  # after the fetch
        line.event("convert_to_tensor", int((t - 0.2) * MS), int(0.1 * MS))  # the batch
        line.event("TFE_Py_ExecuteCancelable", int(t * MS), int(0.5 * MS))
        for j in range(3):
            line.event("TFE_Py_FastPathExecute_C", int((t + 0.6 + 0.1 * j) * MS), int(0.05 * MS))
        if k in (3, 4, 5, 20):
            line.event("PythonRefManager::CollectGarbage", int((t + 0.95) * MS), int(0.01 * MS))
        line.event("TFE_Py_ExecuteCancelable", int((t + 1.0) * MS), int(0.5 * MS))
        for j in range(5):
            line.event("TFE_Py_FastPathExecute_C", int((t + 1.6 + 0.1 * j) * MS), int(0.05 * MS))
    starts, ends, description = _steps(build(builder))
    assert "(once per 2 calls of 'TFE_Py_ExecuteCancelable', every 2nd call)" in description
    assert len(starts) in (29, 30)
    assert np.median(ends - starts) == 20.0
    # each step starts where its iteration starts: the batch's conversion, after the fetch
    assert np.allclose(starts[1:] % 20.0, 5.8)
