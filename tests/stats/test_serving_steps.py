"""Inference traces: an inference framework's own per-batch call is the step (vLLM's
``execute_model``, Hugging Face's ``generate``), and a one-step profile says what it spans."""

from __future__ import annotations

from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.diagnostics.device import kernel_launch_bound
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.stats.steps.markers import find_step_markers
from stepscope.stats.summary import summarize_steps
from stepscope.vocab.serving import serving_call
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.gpu_fixtures import GpuTrace
from tests.support.torch_steps import torch_steps

US = 1_000
WORKER = "vllm/v1/worker/gpu_worker.py(412): execute_model"
RUNNER = "vllm/v1/worker/gpu_model_runner.py(2907): execute_model"


def _vllm() -> XSpaceBuilder:
    """One engine step as vLLM's profiler traces it (Kineto ``python_function`` names): the
    worker's ``execute_model`` from 2 to 82 ms calling the model runner's, inside it the
    forward's ops; the profile spans 0-85 ms (a setup op before, a sync after)."""
    builder = XSpaceBuilder("vllm")
    main = builder.plane("/host:CPU").line(1, "python")
    main.event("aten::zeros", 0, MS)
    main.event(WORKER, 2 * MS, 80 * MS)
    main.event(RUNNER, 2 * MS + 100 * US, 79 * MS)
    for k in range(40):
        main.event("aten::linear", 10 * MS + k * MS, 500 * US)
    main.event("cudaDeviceSynchronize", 84 * MS, MS)
    return builder


def test_one_vllm_execute_model_is_one_step_and_says_what_it_spans() -> None:
    profile = build(_vllm())
    markers = find_step_markers(profile)
    assert markers.source == "serving"
    assert len(markers) == 1
    # the outermost call: the worker's, with the model runner's inside it
    assert markers.start_ns.tolist() == [2 * MS] and markers.end_ns.tolist() == [82 * MS]
    assert markers.description.startswith("1 vLLM engine step (execute_model: ")
    summary = summarize_steps({"h": build_step_db(profile)})
    assert summary.description.startswith(markers.description)
    assert summary.description.endswith(
        "; a single step: 80.00 ms, 94.1% of the profile's 85.00 ms, so no step-to-step "
        "variation can be told"
    )
    # several hosts: the pairing describes them, not one host's single step
    two = summarize_steps({"a": build_step_db(profile), "b": build_step_db(profile)})
    assert "a single step" not in two.description


def _generate(names: list[str]) -> XSpaceBuilder:
    """A loop calling a function of each name in turn, 20 ms each with a forward inside, 5 ms
    of the loop's Python between them (stepscope's Python tracer names)."""
    builder = XSpaceBuilder("hf")
    main = builder.plane("/host:CPU").line(1, "python")
    t = MS
    for name in names:
        main.event(name, t, 20 * MS)
        main.event("aten::embedding", t + 2 * MS, MS)
        main.event("aten::linear", t + 4 * MS, 10 * MS)
        t += 25 * MS
    return builder


def test_hugging_face_generate_calls_are_the_steps() -> None:
    call = "$utils.py:2150 GenerationMixin.generate"
    markers = find_step_markers(build(_generate([call] * 3)))
    assert markers.source == "serving"
    assert markers.start_ns.tolist() == [MS, 26 * MS, 51 * MS]
    assert markers.end_ns.tolist() == [21 * MS, 46 * MS, 71 * MS]
    assert markers.description.startswith("3 Hugging Face generate() calls (one request batch")
    assert (
        "single step"
        not in summarize_steps({"h": build_step_db(build(_generate([call] * 3)))}).description
    )


def test_a_function_of_another_package_named_alike_is_no_serving_call() -> None:
    assert serving_call("transformers/generation/utils.py(2150): generate") is not None
    assert serving_call("vllm/v1/worker/gpu_model_runner.py(2907): execute_model") is not None
    assert serving_call("execute_context_1(888_788544)_generation_0(0)") is not None
    assert serving_call("myapp/serve.py(10): generate") is None
    assert serving_call("$serve.py:10 generate") is None
    assert serving_call("$runner.py:10 Runner.execute_model") is None
    assert serving_call("aten::linear") is None
    markers = find_step_markers(build(_generate(["$serve.py:10 generate"] * 3)))
    assert markers.source != "serving"


def test_a_profilers_step_markers_win_over_serving_calls() -> None:
    builder = _vllm()
    builder.plane("/host:CPU").line(1, "python").event("ProfilerStep#7", MS, 83 * MS)
    profile = build(builder)
    assert find_step_markers(profile).source == "profiler_step"
    assert "a single step: 83.00 ms" in summarize_steps({"h": build_step_db(profile)}).description


def test_the_launch_finding_speaks_of_a_one_step_profile_as_its_step() -> None:
    t = GpuTrace()
    t.main.event(RUNNER, 0, 12 * MS)
    for k in range(900):
        at = 10 * US + k * 12 * US
        t.launch(at, "elementwise_add_kernel", at + 20 * US, 2 * US, launch_dur=10 * US)
    profile = t.profile()
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    assert data.steps.n_steps == 1
    found = kernel_launch_bound(data, {})
    assert found is not None
    assert found.summary.startswith("The profile's one step launches mostly kernels")
    assert "the GPU is idle" in found.summary and " in it (busy" in found.summary


def test_input_made_inside_the_steps_is_the_input_findings_evidence() -> None:
    from stepscope.stats.diagnostics.host_steps import input_bound

    preprocess = "pipelines/video_classification.py(129): preprocess"
    ops = [(preprocess, 0, 6 * MS), ("aten::linear", 6 * MS, 3 * MS)]
    profile = build(torch_steps(4, 10 * MS, lambda k: ops))
    db = build_step_db(profile)
    found = input_bound(HostData("h", profile, db, build_kernel_db(profile)), {})
    assert found is not None
    [evidence] = found.events
    assert evidence.name == "preprocess (video_classification.py:129)"
    assert (evidence.count, evidence.total_ns) == (4, 24 * MS)


def test_a_serving_calls_work_before_the_model_is_not_input() -> None:
    """A generate() call is handed its batch: its set-up before the first forward (2 ms a
    call here) is the framework's host work. The same work in a ProfilerStep the loop wraps
    around its own preparation is staged input."""
    call = "$utils.py:2150 GenerationMixin.generate"
    served = build_step_db(build(_generate([call] * 3)))
    assert served.limit_ns()["input"].tolist() == [0, 0, 0]
    marked = build_step_db(build(_generate([f"ProfilerStep#{k}" for k in range(3)])))
    assert marked.limit_ns()["input"].tolist() == [2 * MS] * 3


def test_a_serving_step_spans_the_decorators_around_the_call() -> None:
    """``model.generate(...)`` enters transformers' deprecation wrapper and torch's no_grad
    decorator first, and the decorator's exit comes after ``generate`` returns: the user's
    call is the wrapper's span. The request handler around it also tokenizes (2 ms, more
    than 1% of the call): it is the caller, not a wrapper."""
    builder = XSpaceBuilder("hf")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(3):
        t = k * 40 * MS
        main.event("$serve.py:5 handle", t, 35 * MS)
        main.event("$serve.py:9 tokenize", t, 2 * MS)
        main.event("$deprecation.py:121 wrapped_func", t + 3 * MS, 31 * MS)
        main.event("$_contextlib.py:120 decorate_context", t + 3 * MS + 10 * US, 30 * MS)
        main.event("$grad_mode.py:81 no_grad.__enter__", t + 3 * MS + 20 * US, 10 * US)
        main.event("$utils.py:2150 GenerationMixin.generate", t + 3 * MS + 50 * US, 26 * MS)
        main.event("aten::embedding", t + 4 * MS, MS)
        main.event("$grad_mode.py:85 no_grad.__exit__", t + 33 * MS, 20 * US)
    markers = find_step_markers(build(builder))
    assert markers.source == "serving"
    assert markers.start_ns.tolist() == [3 * MS, 43 * MS, 83 * MS]
    assert (markers.end_ns - markers.start_ns).tolist() == [31 * MS] * 3


def test_host_time_of_a_trace_with_python_frames_is_not_told_to_record_them() -> None:
    """vLLM's trace has its Python calls (with_stack=True): its host line was told to
    "record with ... torch.profiler(with_stack=True) to name the functions"."""
    from stepscope.stats.bound import bound_by

    def host_time(frames: bool) -> str:
        ops = [("aten::linear", 0, 6 * MS)]
        if frames:  # a Python call beside the op, 3 ms of the step untraced after it
            ops.append(("vllm/v1/worker/gpu_model_runner.py(1297): _prepare_inputs", 0, MS))
        builder = torch_steps(4, 10 * MS, lambda k: ops, thread="python")
        summary = summarize_steps({"h": build_step_db(build(builder))})
        [host] = [limit for limit in bound_by(summary).limits if limit.key == "host"]
        return host.evidence

    assert "torch.profiler(with_stack=True)" in host_time(frames=False)
    with_frames = host_time(frames=True)
    assert "record with" not in with_frames
    assert with_frames.endswith(
        "the trace records its Python calls: the trace viewer shows which ran then"
    )


def test_each_frames_two_longest_children_are_found_at_once() -> None:
    """The wrapper rule asks, per frame, for its longest child other than the call it
    climbs from: the two longest children of every event, found in one pass (decision 566)."""
    import numpy as np

    from stepscope.stats.steps.serving import _two_longest_children

    parent = np.array([-1, 0, 0, 0, 1, -1, 5, 5], np.int64)
    dur = np.array([100, 10, 30, 20, 5, 7, 3, 3], np.int64)
    first, second = _two_longest_children(parent, dur)
    assert first.tolist() == [2, 4, -1, -1, -1, 6, -1, -1]
    assert second.tolist() == [3, -1, -1, -1, -1, 7, -1, -1]
