"""A step that is compiled already (torch.compile, jax.jit, tf.function) and bound by its
compiled code's host side is told so, and not to compile it (decision 1083):
a100_triton_tiny's step (a `Torch-Compiled Region` of 1.35 ms around one 1.8 us Triton kernel)
read "in traced host events that launch nothing" and "Run fewer, larger ops: compile the step
(tf.function / jit / torch.compile)". Steps built in code, and the fixture."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.model import profile_from_xspace
from stepscope.stats import build_step_db
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.summary import summarize_steps
from stepscope.vocab.compiled import compiled_framework
from stepscope.xspace.kineto import kineto_to_xspace
from tests.support.fixtures import FIXTURES
from tests.support.kineto import write_trace

TRITON_TINY = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
NOT_COMPILED = "Run fewer, larger ops: compile the step"


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def _events(guards: str, region: str, launcher: str) -> list[dict[str, Any]]:
    """Four 1 ms steps; in each, ``guards`` (30 us), then ``region`` (600 us) holding
    ``launcher`` (50 us) around a cuLaunchKernel of one 2 us kernel."""
    events = [_x("Trace", "PyTorch Profiler (0)", 0, 10_000, tid=0)]
    for k in range(4):
        t = 1000 + 1000 * k
        corr = 100 + k
        events += [
            _x("user_annotation", f"ProfilerStep#{k}", t, 1000),
            _x("cpu_op", guards, t + 10, 30),
            _x("cpu_op", region, t + 50, 600),
            _x("cpu_op", launcher, t + 500, 50),
            _x("cuda_runtime", "cuLaunchKernel", t + 520, 20, correlation=corr),
            _x("kernel", "triton_poi_fused_add_0", t + 545, 2, tid=7, stream=7, correlation=corr),
        ]
    return events


def _advised(tmp_path: Path, events: list[dict[str, Any]]) -> tuple[str, str, str]:
    """(the headline, the host limit's evidence, the advice's first line)."""
    db = build_step_db(profile_from_xspace(kineto_to_xspace(write_trace(tmp_path, events))))
    summary = summarize_steps({"h": db})
    bound = bound_by(summary)
    assert bound.limits[0].key == "host"
    return bound.headline, bound.limits[0].evidence, recommend(summary, bound).details[0]


def test_a_torch_compiled_step_bound_by_its_host_side_is_not_told_to_compile(
    tmp_path: Path,
) -> None:
    events = _events("TorchDynamo Cache Lookup", "Torch-Compiled Region: 0/0", "triton_0")
    headline, evidence, advice = _advised(tmp_path, events)
    assert evidence.startswith(
        "host work while the device waits, inside torch.compile'd code (most in "
        "'Torch-Compiled Region: 0/0': Dynamo's guard checks, the compiled graphs' Python "
        "wrappers and the host side of their kernel launches"
    )
    assert "launch nothing" not in headline
    assert NOT_COMPILED not in advice
    assert "step runs torch.compile'd code already" in advice
    assert 'torch.compile(mode="reduce-overhead")' in advice
    assert "(the device computes 0.2% of the step)" in advice  # 2 us of each 1 ms


def test_the_same_step_not_compiled_is_told_to_compile(tmp_path: Path) -> None:
    """The same events under names no compiler gives: the old fix, and true words."""
    _, evidence, advice = _advised(tmp_path, _events("setup", "MyModel.forward", "launch"))
    assert evidence.startswith(
        "host work while the device waits, in traced host events outside any kernel launch "
        "(framework ops' own time, annotations"
    )
    assert NOT_COMPILED in advice
    assert "already" not in advice


def test_a_jitted_step_is_told_to_dispatch_fewer_calls(tmp_path: Path) -> None:
    events = _events("PjitFunction(prepare)", "PjitFunction(train_step)", "ExecuteHelper")
    _, evidence, advice = _advised(tmp_path, events)
    assert "inside jitted calls (most in 'PjitFunction(train_step)'" in evidence
    assert "the step runs jitted code already" in advice
    assert "jax.lax.scan" in advice
    assert NOT_COMPILED not in advice


def test_the_compiled_names() -> None:
    assert compiled_framework("Torch-Compiled Region: 0/0") == "pytorch"
    assert compiled_framework("TorchDynamo Cache Lookup") == "pytorch"
    assert compiled_framework("CompiledFunctionBackward") == "pytorch"
    assert compiled_framework("## Call CompiledFxGraph fabc ##") == "pytorch"
    assert compiled_framework("PjitFunction(update)") == "jax"
    assert compiled_framework("EagerLocalExecute: __inference_train_422") == "tensorflow"
    assert compiled_framework("aten::add") == ""


@pytest.mark.skipif(not TRITON_TINY.exists(), reason="no fixture")
def test_the_triton_fixtures_report_says_its_step_is_compiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / TRITON_TINY.name
    shutil.copy(TRITON_TINY, trace)
    assert main(["report", str(trace), "--no-cache"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Bound by Python / host: 96.1% of the step time" in text
    assert "inside torch.compile'd code (most in 'Torch-Compiled Region: 0/0'" in text
    assert "80.1% of the step time" in text
    assert "launch nothing" not in text
    assert "compile the step" not in text
    assert 'torch.compile(mode="reduce-overhead")' in text


def test_a_tf_function_step_is_told_to_compile_with_xla_and_run_more_steps_per_call(
    tmp_path: Path,
) -> None:
    """A tf.function's concrete function is ``__inference_<name>_<n>``; its call from Python is
    named after the function, with stat ``tf_function_call``."""
    _, evidence, advice = _advised(tmp_path, _events("setup", "__inference_update_42", "launch"))
    assert "inside tf.function calls (most in '__inference_update_42'" in evidence
    assert "tf.function(jit_compile=True)" in advice
    assert "steps_per_execution" in advice
    assert NOT_COMPILED not in advice
    events = _events("setup", "update", "launch")
    for event in events:
        if event["name"] == "update":
            event["args"] = {"tf_function_call": "notTraced-nonXla"}
    _, evidence, advice = _advised(tmp_path, events)
    assert "inside tf.function calls (most in 'update'" in evidence
    assert NOT_COMPILED not in advice
