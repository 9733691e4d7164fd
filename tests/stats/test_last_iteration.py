"""The last iteration of a loop captured from its start is a step when it is whole
(`stepscope.stats.steps.last_step`, decision 475): the script counted it. Each loop here is
traced as a real one was (the events' names and order seen in `/tmp/steps10/runs`); each
lost its last iteration before, for N - 1 steps."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import FETCHES_LINE, FETCHES_LINE_OFFSET, STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.compiled_loop import compiled_loop

TRAIN = [  # one eager PyTorch iteration after its batch (name, ms)
    ("aten::lift_fresh", 0.02),
    ("Optimizer.zero_grad#SGD.zero_grad", 0.1),
    ("aten::linear", 0.2),
    ("aten::relu", 0.03),
    ("aten::linear", 0.03),
    ("aten::mse_loss", 0.1),
    ("autograd::engine::evaluate_function: MseLossBackward0", 0.05),
    ("autograd::engine::evaluate_function: AddmmBackward0", 0.1),
    ("Optimizer.step#SGD.step", 0.2),
]


def _loop_line(started_here: bool = True) -> tuple[XSpaceBuilder, LineBuilder]:
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    if started_here:
        plane.stats[STARTED_ON_THREAD_STAT] = 1
    return builder, plane.line(1, "python")


def _run(line: LineBuilder, t: float, events: list[tuple[str, float]]) -> float:
    """The events back to back from ``t`` (0.02 ms apart); the time after the last."""
    for name, dur in events:
        line.event(name, int(t * 1e6), int(dur * 1e6))
        t += dur + 0.02
    return t


def _steps(profile: Profile) -> tuple[np.ndarray, np.ndarray, str]:
    found = infer_steps(profile)
    assert found is not None
    return found.start_ns / MS, found.end_ns / MS, found.description


def _generator_loop(iterations: int, started_here: bool = True) -> tuple[Profile, float]:
    """A loop over a Python generator that makes each batch in 6 ms of untraced Python, then
    trains for about 1 ms: the steps start at the batch's conversion (``from_numpy``'s
    ``aten::lift_fresh``), so each period holds the next batch's making and the last
    iteration, without one, is a sixth of a period. Returns the profile and the end of the
    last iteration's work (ms)."""
    builder, line = _loop_line(started_here)
    t = 0.0
    for _ in range(iterations):
        t = _run(line, t + 6.0, TRAIN)
    return build(builder), t - 0.02


def test_a_generator_loop_keeps_its_last_iteration() -> None:
    """The qa9 generator loops: 29 steps for the script's 30 (its last iteration, 1.7 ms
    traced, was under half the median 8 ms period, which holds the next batch's making)."""
    profile, last = _generator_loop(30)
    starts, ends, description = _steps(profile)
    assert len(starts) == 30
    assert "the last one ends with its work" in description
    assert abs(ends[-1] - last) < 1e-6
    assert np.allclose(np.diff(starts), starts[1] - starts[0])


def test_step_0_begins_with_the_fetch_the_probe_timed() -> None:
    """The first batch's making (6 ms of untraced Python) comes before the thread's first
    traced event; the capture's fetch probe timed it. Step 0 starts with it, so the steps'
    total is the script's: 30 steps averaged 8.61 ms for the script's 8.84 (decision 476)."""
    builder, line = _loop_line()
    probe = builder.plane("/host:CPU").line(FETCHES_LINE_OFFSET + 1, FETCHES_LINE)
    probe.display_id = 1
    t = 0.0
    for k in range(30):
        if k < 4:  # the probe times the first fetches only
            probe.event("batches (loop.py)", int(t * 1e6), int(6.01 * 1e6), {"loop": "<module>"})
        t = _run(line, t + 6.0, TRAIN)
    starts, ends, description = _steps(build(builder))
    assert len(starts) == 30 and starts[0] == 0.0
    assert abs((ends - starts).sum() - (t - 0.02)) < 1e-6  # every ms from the first fetch on
    assert "step 0 from its batch's fetch" in description


def test_a_capture_begun_elsewhere_still_leaves_the_events_after_the_last_repeat() -> None:
    """Nothing says the events after the last lead are a whole iteration: N - 1 steps."""
    profile, _ = _generator_loop(30, started_here=False)
    assert len(_steps(profile)[0]) == 29


def test_a_first_op_called_twice_an_iteration_is_the_last_iterations_head() -> None:
    """An un-jitted JAX loop: ``x @ w1`` then ``tanh``, then ``h @ w2`` and the update. The
    matmul comes twice an iteration, so ``tanh`` leads the steps, and each period ends with
    the next iteration's first matmul, which the last iteration (whole) lacks: 29 steps
    for the script's 30 before."""
    builder, line = _loop_line()
    t = 0.0
    matmul, tanh = "PjitFunction(matmul)", "PjitFunction(tanh)"
    rest = [
        ("Wait for donation holds", 0.001),
        ("PjitFunction(matmul)", 0.3),
        ("PjitFunction(subtract)", 0.2),
        ("PjitFunction(mul)", 0.1),
        ("PjitFunction(dot_general)", 0.3),
        ("PjitFunction(subtract)", 0.05),
    ]
    for k in range(30):
        first = 60.0 if k == 0 else 0.3, 100.0 if k == 0 else 0.5  # iteration 0 compiles
        t = _run(line, t + 6.0, [(matmul, first[0]), (tanh, first[1]), *rest])
    starts, ends, description = _steps(build(builder))
    assert "'PjitFunction(tanh)'" in description
    assert len(starts) == 30
    assert abs(ends[-1] - (t - 0.02)) < 1e-6
    assert starts[0] == 6.0  # step 0 from the first matmul, the thread's first event


def test_a_last_iteration_with_other_work_than_most_is_a_step() -> None:
    """Iterations whose work varies: a rank that runs matmuls until a deadline (the qa9 DDP
    loop's rank 1: 4 to 40 of them an iteration, its last one unlike most) or a metric
    logged on some iterations. Every member of the cycle is there, in order: 39 steps for
    the script's 40 on that rank, and 39 pod steps paired across the ranks."""
    builder, line = _loop_line()
    t = 0.0
    counts = np.random.default_rng(7).integers(4, 40, size=40).tolist()
    for k in range(40):
        inner = [("aten::matmul", 0.5), ("aten::tanh", 0.3)] * counts[k]
        events = [TRAIN[1], ("DistributedDataParallel.forward", 0.7), *inner, *TRAIN[5:]]
        t = _run(line, t + 0.3, events)
    starts, ends, description = _steps(build(builder))
    assert len(starts) == 40
    assert abs(ends[-1] - (t - 0.02)) < 1e-6
    # compiled_loop's metric logged at the last iteration only
    profile, _ = compiled_loop(10, compile_ms=1.0, backward_compile_ms=0.0, extra={9: 1.0})
    starts, ends, description = _steps(profile)
    assert len(starts) == 10 and "the last one ends with its work" in description


def test_a_last_iteration_cut_by_the_capture_is_no_step() -> None:
    """``stop()`` from another thread, or ``duration_ms``, inside the last iteration: its
    optimizer step is missing, so neither rule makes it a step."""
    builder, line = _loop_line()
    t = 0.0
    for k in range(20):
        t = _run(line, t + 6.0, TRAIN if k < 19 else TRAIN[:-1])
    starts, _, description = _steps(build(builder))
    assert len(starts) == 19
    assert "the last one ends" not in description


def test_a_loaded_machine_does_not_make_the_last_iteration_too_short() -> None:
    """A ``tf.function`` loop on a loaded machine (a real run, `tf_loop.py` under load 3.7):
    calls of 0.8 to 6.6 ms, median 1.6, and the last one 0.8 ms. Half the median made it no
    step (11 of the script's 12) in 3 of 14 runs; the shortest call is the yardstick."""
    builder, line = _loop_line()
    t = 0.0
    for dur in [519.6, 1.66, 6.56, 1.57, 1.02, 4.11, 1.0, 0.89, 5.88, 1.1, 0.84, 0.77]:
        t = _run(line, t + 0.1, [("train_step", dur), ("TFE_DeleteTensorHandle", 0.001)])
    starts, ends, description = _steps(build(builder))
    assert len(starts) == 12 and "the last one ends with its work" in description
    assert abs(ends[-1] - (t - 0.02)) < 1e-6


def test_the_last_iteration_keeps_work_it_runs_every_nth_iteration() -> None:
    """A loop that computes a second loss now and then, the last iteration among them (as a
    loop accumulating gradients steps its optimizer in its last): its most common work
    (without it) ended the last step before it; the longest work the loop ran at least twice
    is the last iteration's (decision 535)."""
    builder, line = _loop_line()
    t = 0.0
    for k in range(12):
        logged = [("aten::mse_loss", 0.3)] if k in (2, 7, 11) else []
        t = _run(line, t + 6.0, TRAIN + logged)
    starts, ends, _ = _steps(build(builder))
    assert len(starts) == 12
    assert abs(ends[-1] - (t - 0.02)) < 1e-6  # after its second aten::mse_loss


def test_a_compiled_loop_whose_first_call_compiles_keeps_its_last_iteration() -> None:
    """A torch.compile'd model (a real loop, /tmp/user23/loop2.py: 30 iterations, 29 steps):
    once warm, each call looks its graph up (``TorchDynamo Cache Lookup``) before its region,
    but the first call compiled there instead. Rule 1's head, read before the first lead, was
    the compilation's; rule 2 wanted the lookup, the head, in the last iteration too: the
    script's last step was in no step (decision 1041)."""
    builder, line = _loop_line()
    t = 0.0
    for k in range(30):
        head = [("dynamo", 500.0)] if k == 0 else [("TorchDynamo Cache Lookup", 0.03)]
        t = _run(line, t + 0.1, [*head, ("Torch-Compiled Region: 0/0", 0.3), *TRAIN[5:]])
    starts, ends, description = _steps(build(builder))
    assert len(starts) == 30, description
    assert "the last one ends with its work" in description
    assert abs(ends[-1] - (t - 0.02)) < 1e-6
