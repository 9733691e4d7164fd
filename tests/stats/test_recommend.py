"""The "bound by" headline and the advice after it, word for word, on step summaries whose
limits are set by hand (stepscope.stats.bound, stepscope.stats.advice): what a user reads
first on the overview page and in `stepscope report`.

Four 10 ms steps; each limit's share is its time per step over 10 ms, so every percentage
below can be checked by eye.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.diagnostics.multi import _straggler_fix
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.input.ahead import TF_DATA_AHEAD, input_ahead
from stepscope.stats.input.input_pipeline import TF_DATA_FIX
from stepscope.stats.steps.fetch import Fetched
from stepscope.stats.summary import StepSummary

MS = 1_000_000
STEPS = 4


def _summary(has_device: bool = True, **limits_ms: float) -> StepSummary:
    dur = np.full(STEPS, 10 * MS, np.int64)
    return StepSummary(
        "marker",
        "4 steps marked",
        ("h",),
        has_device,
        np.arange(STEPS, dtype=np.int64),
        tuple(f"train {k}" for k in range(STEPS)),
        np.arange(STEPS, dtype=np.int64) * 10 * MS,
        dur,
        {c: np.zeros(STEPS, np.int64) for c in CATEGORY_NAMES},
        STEPS,
        0,
        limit_ns={k: np.full(STEPS, round(v * MS), np.int64) for k, v in limits_ms.items()},
    )


# compute 50%, dispatch 20% (high), input 6% and host 5% (moderate), copies 4% (under its
# 5%), collectives 3% (moderate), waits 2% (under its 3%)
MIXED = {
    "compute": 5.0,
    "dispatch": 2.0,
    "input": 0.6,
    "host": 0.5,
    "copies": 0.4,
    "collectives": 0.3,
    "waits": 0.2,
}

EVIDENCE = {
    "compute": "the device computing (kernels)",
    "dispatch": "the host launching work while the device waits (kernel launch time)",
    "input": "6.0% in input",
    "host": "host work while the device waits (Python, host ops); record with stepscope's "
    "stack sampler (python_sampler_hz) to name the functions",
    "copies": "device-to-host and device-to-device copies",
    # no collective event in this summary: no kind named (decision 1037)
    "collectives": "collective communication with nothing else running",
    "waits": "the step's thread blocked in a wait (synchronize, block_until_ready, .item()) "
    "while nothing traced computes: another process, a lock, or a thread not scheduled",
}

INPUT_LINE = (
    "6.0% of the step time is input: 6.0% in input. Prepare batches ahead of the step "
    f"({input_ahead('', True)})."
)
HOST_LINE = (
    "5.0% of the step time is Python / host work: host work while the device waits (Python, "
    "host ops); record with stepscope's stack sampler (python_sampler_hz) to name the "
    "functions."
)
COLLECTIVES_LINE = (
    "3.0% of the step time is spent in collective communication with nothing else running "
    "(on the devices, or on the host: gloo, MPI, XLA or TensorFlow collectives, mostly "
    "waiting for the rank that arrives last: see the pod viewer's stragglers for who and "
    "why): overlap communication with compute, use larger buckets, or check the interconnect."
)


def test_the_headline_names_the_largest_limit_then_the_next() -> None:
    bound = bound_by(_summary(**MIXED))
    assert bound.headline == (
        "Bound by compute: 50.0% of the step time (5.00 ms per step), then dispatch / launch "
        "(20.0%). The device computing (kernels)."
    )
    assert [(lim.key, lim.percent, lim.ms_per_step) for lim in bound.limits] == [
        ("compute", 50.0, 5.0),
        ("dispatch", 20.0, 2.0),
        ("input", 6.0, 0.6),
        ("host", 5.0, 0.5),
        ("copies", 4.0, 0.4),
        ("collectives", 3.0, 0.3),
        ("waits", 2.0, 0.2),
    ]
    assert {lim.key: lim.evidence for lim in bound.limits} == EVIDENCE


def test_without_a_device_host_work_is_what_no_traced_op_covers() -> None:
    bound = bound_by(_summary(has_device=False, compute=1.0, host=6.0, compilation=0.5))
    assert bound.headline == (
        "Bound by Python / host: 60.0% of the step time (6.00 ms per step), then compute "
        "(10.0%). Host work no traced op covers (Python, untraced I/O or synchronization); "
        "record with stepscope's stack sampler (python_sampler_hz) to name the functions."
    )
    assert [lim.evidence for lim in bound.limits[1:]] == [
        "the model's computation on the host (framework ops)",
        "XLA / TensorFlow / torch.compile compilation inside the steps",
    ]


def test_every_limit_past_its_threshold_gets_its_advice_high_ones_marked() -> None:
    """Most important first: the tf.data finding, then the limits in their order (the
    headline's own limit left out), HIGH: past the high threshold; then mixed precision and
    eager execution. Copies (4% < 5%) and waits (2% < 3%) get no line."""
    summary = _summary(**MIXED)
    advice = recommend(
        summary,
        bound_by(summary),
        precision_16_percent=5.0,
        eager_percent=12.0,
        uses_tf_data=True,
        tf_data_advice="tf.data: the Map stage is the bottleneck.",
    )
    assert advice.bottleneck == "compute"
    assert advice.statement.startswith("Bound by compute: 50.0%")
    assert advice.details == (
        "tf.data: the Map stage is the bottleneck.",
        INPUT_LINE,
        "HIGH: 20.0% of the step time is spent dispatching ops and launching kernels while "
        "nothing else runs: the host launching work while the device waits (kernel launch "
        "time) (set TF_GPU_THREAD_MODE=gpu_private so tf.data threads do not compete with "
        "kernel launches).",
        HOST_LINE,
        COLLECTIVES_LINE,
        "Only 5.0% of the device compute time runs in 16-bit precision: mixed precision "
        "(bf16/fp16) could speed it up.",
        "12.0% of the op time runs eagerly: wrap the step in tf.function (or jit / "
        "torch.compile) to run it as a graph.",
    )
    assert advice.tips == (
        "input_pipeline_analyzer: the breakdown of input time on the host",
        "op_stats: the most time-consuming ops",
        "trace_viewer: the timeline of each step",
    )


def test_topics_said_elsewhere_are_left_out() -> None:
    """A diagnostics finding already says dispatch and precision: no second line on them;
    without tf.data there is no thread-mode advice, and eager time at 10% is no finding."""
    summary = _summary(**{**MIXED, "input": 0.4})
    advice = recommend(
        summary,
        bound_by(summary),
        precision_16_percent=5.0,
        eager_percent=10.0,
        covered=frozenset({"dispatch", "precision"}),
    )
    assert advice.details == (HOST_LINE, COLLECTIVES_LINE)
    assert advice.tips == (
        "op_stats: the most time-consuming ops",
        "trace_viewer: the timeline of each step",
    )
    dispatch = recommend(summary, bound_by(summary)).details[0]
    assert dispatch.startswith("HIGH: 20.0% of the step time is spent dispatching ops")
    assert dispatch.endswith("(kernel launch time).")


def test_without_steps_nothing_is_bounded() -> None:
    empty = np.zeros(0, np.int64)
    summary = StepSummary(
        "none", "no step markers found", ("h",), True, empty, (), empty, empty,
        {c: empty for c in CATEGORY_NAMES}, 0, 0,
    )  # fmt: skip
    bound = bound_by(summary)
    assert (bound.headline, bound.limits) == (
        "No steps measured, so what bounds a step cannot be told.",
        (),
    )
    advice = recommend(summary, bound)
    assert (advice.bottleneck, advice.details, advice.tips) == (
        "unknown",
        ("no step markers found",),
        ("trace_viewer: look for the repeating work of a step",),
    )


def test_the_headlines_own_limit_gets_its_fix_first() -> None:
    """The headline says input bounds the steps and what the trace shows, not what to change:
    the advice's first line gives the fix (decision 456). Before, a loop over a plain
    generator read "bound by input 93%" and no advice on input at all."""
    summary = _summary(has_device=False, input=6.0, compute=3.0, host=0.5)
    advice = recommend(summary, bound_by(summary))
    assert advice.details == (
        "HIGH: What bounds the steps, input (60.0% of the step time): prepare batches ahead of "
        f"the step ({input_ahead('', False)}).",
        "5.0% of the step time is Python / host work: host work no traced op covers (Python, "
        "untraced I/O or synchronization); record with stepscope's stack sampler "
        "(python_sampler_hz) to name the functions.",
    )


def _fetched_from(function: str) -> StepSummary:
    """Input 80% of the step, all of it the loop's fetch from ``function`` (7 samples)."""
    return replace(
        _summary(has_device=False, input=8.0, compute=2.0),
        fetched=Fetched(
            function=(function,),
            samples=np.array([7], np.int64),
            ns=np.full(STEPS, 8 * MS, np.int64),
        ),
    )


def test_a_python_iterator_that_bounds_the_steps_is_named_in_the_fix() -> None:
    summary = _fetched_from("batches (train.py)")
    (line,) = recommend(summary, bound_by(summary)).details
    assert line.startswith(
        "HIGH: What bounds the steps, input (80.0% of the step time): the loop's Python "
        "iterator batches (train.py) makes each batch on the step's own thread"
    )
    assert "in worker processes" in line


def test_a_queue_that_bounds_the_steps_gets_the_producers_fix() -> None:
    """A loop taking batches from a queue another thread fills waits for that producer: the
    fix is to produce faster, not to move the work off the step's thread (decision 730)."""
    summary = _fetched_from("get (queue.py)")
    (line,) = recommend(summary, bound_by(summary)).details
    assert line.startswith(
        "HIGH: What bounds the steps, input (80.0% of the step time): the loop waits in get "
        "(queue.py) for its next batch: the thread or process filling the queue makes batches "
        "slower than the steps take them"
    )
    assert "step's own thread" not in line


def test_the_headlines_fix_is_left_to_the_loaders_advice_or_a_finding() -> None:
    """The DataLoader's or tf.data's advice says what to change for input; a finding that
    covers the limit says it with evidence: no second line."""
    summary = _summary(has_device=False, input=6.0, compute=4.0)
    loader = "The DataLoader makes its batches in the training process (num_workers=0)."
    assert recommend(summary, bound_by(summary), tf_data_advice=loader).details == (loader,)
    host = _summary(has_device=False, host=6.0, compute=4.0)
    assert recommend(host, bound_by(host), covered=frozenset({"host"})).details == ()
    (line,) = recommend(host, bound_by(host)).details
    assert line.startswith("HIGH: What bounds the steps, Python / host (60.0% of the step time)")


def test_a_dispatch_headline_with_its_fix_is_not_repeated() -> None:
    """Dispatch's evidence carries the fix when it found the ops; without them (GPU launches
    only) the fix is the advice's first line."""
    summary = _summary(dispatch=6.0, compute=4.0)
    (line,) = recommend(summary, bound_by(summary)).details
    assert line.startswith("HIGH: What bounds the steps, dispatch / launch (60.0% of the step")


def test_a_pytorch_trace_without_stacks_is_told_torch_profilers_switch_too() -> None:
    """A Kineto trace from torch.profiler without ``with_stack`` (the CPU gloo fixture: 14.9%
    untraced host time) was told to turn on stepscope's sampler only, which its user never
    ran; it is told torch.profiler's own switch as well."""
    summary = _summary(has_device=False, collectives=8.0, host=2.0)
    summary = replace(summary, limits=replace(summary.limits, framework="pytorch"))
    host = {lim.key: lim.evidence for lim in bound_by(summary).limits}["host"]
    assert host.endswith(
        "record with stepscope's stack sampler (python_sampler_hz) or "
        "torch.profiler(with_stack=True) to name the functions"
    )


# The input advice names the profile's own framework's loader (decision 551): a Keras fit
# (TensorFlow, input 39.1% of its steps once warm) was told to "prepare batches ahead of the
# step (a DataLoader with workers, ...)", and a straggling TensorFlow worker waiting for its
# tf.data pipeline to "give its data loader more workers (DataLoader(num_workers=...))".
# framework -> (a phrase its advice has, one it must not have)
INPUT_CASES = {
    "tensorflow": (TF_DATA_AHEAD, "DataLoader"),
    "pytorch": ("DataLoader(num_workers=N, persistent_workers=True), or a", "tf.data"),
    "jax": (f"{TF_DATA_AHEAD}; PyTorch DataLoader(", None),
    "": (f"{TF_DATA_AHEAD}; PyTorch DataLoader(", None),
}


@pytest.mark.parametrize("framework", sorted(INPUT_CASES))
def test_the_input_lines_name_the_frameworks_loader(framework: str) -> None:
    has, hasnt = INPUT_CASES[framework]
    # input as the headline's limit (its fix first), then as one limit among others
    for limits in ({"input": 6.0, "compute": 3.0, "host": 0.5}, MIXED):
        summary = _summary(has_device=False, **limits)
        summary = replace(summary, limits=replace(summary.limits, framework=framework))
        (line,) = [d for d in recommend(summary, bound_by(summary)).details if "input" in d]
        assert f"ahead of the step ({has}" in line
        assert hasnt is None or hasnt not in line


def test_a_late_rank_waiting_for_input_is_told_its_frameworks_loader() -> None:
    tf = _straggler_fix("input", False, "tensorflow")
    assert f"make its tf.data pipeline faster: {TF_DATA_FIX};" in tf and "DataLoader" not in tf
    torch = _straggler_fix("input", True, "pytorch")
    assert "DataLoader(num_workers=..., pin_memory=True, prefetch_factor=...)" in torch
    assert "tf.data" not in torch
    assert "DataLoader(" in _straggler_fix("input", False, "jax")
    assert "tf.data" in _straggler_fix("input", False, "jax")


def test_compilation_is_named_for_the_profiles_framework() -> None:
    """Decision 553: an un-jitted JAX loop compiling in its first steps (65.5% of all its
    steps' time) read "XLA / TensorFlow / torch.compile compilation inside the steps"."""
    named = {
        "jax": "JAX compiles each jitted function, and each op run outside jax.jit,",
        "tensorflow": "a tf.function with jit_compile=True compiles",
        "pytorch": "Compilation by torch.compile inside the steps (at its first call",
        "": "XLA / TensorFlow / torch.compile compilation inside the steps",
    }
    for framework, text in named.items():
        summary = _summary(has_device=False, compilation=6.0, compute=3.0)
        summary = replace(summary, limits=replace(summary.limits, framework=framework))
        bound = bound_by(summary)
        assert bound.first == "compilation" and text in bound.headline, bound.headline
        others = [t for f, t in named.items() if f not in (framework, "")]
        assert not [t for t in others if t in bound.headline]
