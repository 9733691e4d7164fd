"""A JAX run that never computes a gradient (decision 561) is told so by its programs (no
``transpose(``/``jvp(`` scope in their HLO) and by its stack samples (JAX's Python seen, never
its autodiff): its dispatch fix names no optimizer update and its input fix no training
set's loader; a run whose programs or samples show a gradient keeps the training texts."""

from __future__ import annotations

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.diagnostics.host_steps import dispatch_bound, input_bound
from stepscope.stats.gpu.device import MIN_JAX_SAMPLES, never_trains
from stepscope.stats.gpu.kernels import build_kernel_db
from tests.support.analysis import build
from tests.support.jax_inference import GRAD_CALL, JAX_CALL, LOOP, STEPS, jax_loop

BACKWARD_OPS = ("jit(update)/jvp()/dot_general", "jit(update)/transpose(jvp())/dot_general")


def test_a_jax_run_never_trains_only_when_programs_and_samples_say_so() -> None:
    assert STEPS * 2 >= MIN_JAX_SAMPLES
    assert never_trains(build(jax_loop()))
    # a jitted step's backward pass in its program
    assert not never_trains(build(jax_loop(op_names=BACKWARD_OPS)))
    # an un-jitted jax.grad: its programs are clean, one sample in its backward pass
    assert not never_trains(build(jax_loop(stacks=(JAX_CALL,) * 5 + (GRAD_CALL,))))
    # too few samples of JAX's Python to say: unknown
    assert not never_trains(build(jax_loop(stacks=(JAX_CALL, LOOP, LOOP))))  # 4 samples
    # programs whose ops name no JAX operation: unknown
    assert not never_trains(build(jax_loop(op_names=())))


def test_the_dispatch_fix_of_jax_inference_names_no_optimizer_update() -> None:
    for trains in (False, True):
        stacks = (JAX_CALL,) * 5 + (GRAD_CALL,) if trains else (JAX_CALL,)
        profile = build(jax_loop(stacks=stacks))
        db = build_step_db(profile)
        headline = bound_by(summarize_steps({"h": db}))
        assert headline.first == "dispatch", headline.headline
        finding = dispatch_bound(HostData("h", profile, db, build_kernel_db(profile)), {})
        assert finding is not None
        for text in (headline.headline, finding.fix):
            assert "jax.jit" in text, text
            assert ("optax" in text) is trains, text
            assert ("the model on a batch" in text) is not trains, text


def test_the_input_fix_of_jax_inference_is_about_requests_unless_tf_data_feeds_it() -> None:
    for trains, tf_data in ((False, False), (True, False), (False, True)):
        stacks = (JAX_CALL,) * 5 + (GRAD_CALL,) if trains else (JAX_CALL,)
        profile = build(jax_loop(stacks=stacks, ops_per_step=4, staged_ms=6, tf_data=tf_data))
        db = build_step_db(profile)
        summary = summarize_steps({"h": db})
        bound = bound_by(summary)
        assert bound.first == "input", bound.headline
        details = "\n".join(recommend(summary, bound).details)
        finding = input_bound(HostData("h", profile, db, build_kernel_db(profile)), {})
        assert finding is not None
        serves = not trains and not tf_data
        for text in (details, finding.fix):
            assert ("the next requests' inputs" in text) is serves, text
            assert ("tf.data" in text) is not serves, text
