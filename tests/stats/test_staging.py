"""Input prepared inside a step, by position: everything before the step's first model op is
input, whichever op (if any) ends the preparation; XProf calls such loops 0% input."""

from __future__ import annotations

import numpy as np

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import classify_steps
from stepscope.stats.bound import bound_by
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.fetch_loop import sampled_main


def _loop(transfer: str, compute: str, with_transfer: bool = True) -> XSpaceBuilder:
    """6 steps of 10 ms: 2 ms building the batch, 0.6 ms copying it (``transfer``), the
    step's compute (``compute``) from 3 ms for 5 ms, and 1 ms of traced Python after it."""
    builder = XSpaceBuilder("loop")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("$batches.py:10 make_batch", t0, 2 * MS)
        if with_transfer:
            main.event(transfer, t0 + 2 * MS, 6 * MS // 10)
        main.event(compute, t0 + 3 * MS, 5 * MS)
        main.event("$train.py:40 log_metrics", t0 + 8 * MS, MS)
    return builder


def test_jax_batch_building_and_device_put_are_input() -> None:
    db = build_step_db(build(_loop("$api.py:2035 device_put", "PjitFunction(train_step)")))
    assert db.category_ns()["input"].sum() == 0  # as XProf counts it
    assert db.staged_ns.tolist() == [3 * MS] * db.n_steps  # up to the first model op
    summary = summarize_steps({"host": db})
    assert classify_steps(summary).classification == "potential"  # XProf's, unchanged
    limits = {limit.key: limit for limit in bound_by(summary).limits}
    assert round(limits["input"].percent) == 30
    assert "building the batch inside the step" in limits["input"].evidence


def test_torch_to_device_before_forward_is_input() -> None:
    db = build_step_db(build(_loop("aten::to", "nn.Module: Net")))
    assert db.staged_ns.tolist() == [3 * MS] * db.n_steps


def test_the_tensor_constructor_does_not_decide() -> None:
    """`torch.tensor(rows)` emits an `aten::to`, `torch.from_numpy` nothing: the same
    preparation is the same input (it was 26% against 0%)."""
    with_to = build_step_db(build(_loop("aten::to", "aten::linear")))
    without = build_step_db(build(_loop("", "aten::linear", with_transfer=False)))
    lifted = build_step_db(build(_loop("aten::lift_fresh", "aten::linear")))
    assert with_to.staged_ns.tolist() == without.staged_ns.tolist() == lifted.staged_ns.tolist()
    assert without.staged_ns.tolist() == [3 * MS] * without.n_steps
    assert with_to.limit_ns()["input"].tolist() == without.limit_ns()["input"].tolist()


def test_the_optimizer_before_the_model_is_not_input() -> None:
    builder = _loop("", "aten::linear", with_transfer=False)
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        main.event("Optimizer.zero_grad#SGD.zero_grad", 1_000 * MS + k * 10 * MS + 2 * MS, MS)
    db = build_step_db(build(builder))
    assert db.staged_ns.tolist() == [2 * MS] * db.n_steps


def test_no_model_op_no_staged_input() -> None:
    builder = XSpaceBuilder("loop")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("$batches.py:10 make_batch", t0, 2 * MS)
        main.event("$train.py:40 python_math", t0 + 3 * MS, 5 * MS)
    assert not build_step_db(build(builder)).staged_ns.any()
    # what comes after the first model op (fetching results) is not preparation either
    late = _loop("", "PjitFunction(f)", with_transfer=False)
    line = late.plane("/host:CPU").line(1, "python")
    for k in range(6):
        line.event("$api.py:2035 device_put", 1_000 * MS + k * 10 * MS + 9 * MS, MS // 2)
    assert build_step_db(build(late)).staged_ns.tolist() == [3 * MS] * 4


def test_all_hosts_average_the_staged_input_of_paired_steps() -> None:
    jax_host = build_step_db(build(_loop("$api.py:2035 device_put", "PjitFunction(f)")))
    builder = XSpaceBuilder("loop")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("PjitFunction(f)", t0, 8 * MS)
    plain = build_step_db(build(builder))
    assert not plain.staged_ns.any()
    summary = summarize_steps({"a": jax_host, "b": plain})
    assert summary.n_steps == jax_host.n_steps
    assert summary.staged_ns.tolist() == [3 * MS // 2] * summary.n_steps
    assert np.array_equal(
        summary.limit_ns["input"], (jax_host.limit_ns()["input"] + plain.limit_ns()["input"]) // 2
    )


def test_the_traced_python_that_built_the_batch_is_named() -> None:
    """A trace with PyTorch's Python frames (``with_stack=True``): an HF-style pipeline whose
    ``__call__`` spans the whole step, a ``preprocess`` that decodes (1 ms) then resizes each
    of 4 frames (0.9 ms each) before the model's first op. The input evidence names the
    outermost call inside the staged time and the deepest holding half of it; not the
    ``__call__`` around the whole step."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event(f"ProfilerStep#{k}", t0, 10 * MS)
        main.event("transformers/pipelines/base.py(1306): __call__", t0 + MS // 10, 9 * MS)
        main.event("video_classification.py(129): preprocess", t0 + MS // 5, 5 * MS)
        main.event("pipelines/video.py(174): read_video", t0 + MS // 4, MS)
        for f in range(4):
            main.event("models/img.py(235): resize", t0 + (5 + 4 * f) * MS // 4, 9 * MS // 10)
        main.event("aten::linear", t0 + 6 * MS, 3 * MS)
    summary = summarize_steps({"host": build_step_db(build(builder))})
    evidence = {limit.key: limit for limit in bound_by(summary).limits}["input"].evidence
    assert (
        "before its first model op in preprocess (video_classification.py:129) (5.00 ms per "
        "step), mostly in resize (img.py:235) (3.60 ms per step)"
    ) in evidence, evidence
    assert "__call__" not in evidence and "(Python, numpy" not in evidence


def test_a_frame_holding_little_of_the_staged_time_is_not_named() -> None:
    """Before the model, 0.5 ms of untraced batch making then a traced
    ``torch.cuda.synchronize`` of 0.2 ms: the frame is not where the batch was made."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event(f"ProfilerStep#{k}", t0, 10 * MS)
        main.event("torch/cuda/__init__.py(975): synchronize", t0 + MS // 2, MS // 5)
        main.event("aten::linear", t0 + 7 * MS // 10, 9 * MS)
    summary = summarize_steps({"host": build_step_db(build(builder))})
    evidence = {limit.key: limit for limit in bound_by(summary).limits}["input"].evidence
    assert "(Python, numpy, torch.tensor" in evidence and "synchronize" not in evidence


def _first_call_loop(stack: str) -> XSpaceBuilder:
    """6 steps of 10 ms: a 2 ms fetch, then 5 ms of untraced time the stack sampler saw from
    3 ms on as ``stack``, then the model's first op at 7 ms (a `torch.jit.script` module's
    first calls optimize its graph before running an op)."""
    builder, main, samples = sampled_main()
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, 2 * MS)
        samples.event(stack.rsplit(";", 1)[-1], t0 + 3 * MS, 4 * MS, {"stack": stack, "samples": 1})
        main.event("aten::conv2d", t0 + 7 * MS, 2 * MS)
    return builder


def test_a_model_call_sampled_before_its_first_op_is_no_input() -> None:
    """The sampler saw the thread inside ``Module.__call__`` from 3 ms: the batch was made by
    then, and what follows is the model's (decision 652); a sample outside it decides
    nothing. (The fetch, 0-2 ms, is the input wait: the staged time is after it.)"""
    in_call = (
        "<module> (infer.py:24);_wrapped_call_impl (module.py:1778);_call_impl (module.py:1789)"
    )
    db = build_step_db(build(_first_call_loop(in_call)))
    assert db.staged_ns.tolist() == [1 * MS] * db.n_steps
    outside = build_step_db(build(_first_call_loop("<module> (infer.py:22);collate (data.py:5)")))
    assert outside.staged_ns.tolist() == [5 * MS] * outside.n_steps
