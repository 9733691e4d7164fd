"""Framework names live in `stepscope.vocab`, one module per framework: code elsewhere uses
the tables instead of writing the names again (messages and docs may still quote them)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

import pytest

from stepscope.vocab import pytorch, tensorflow, xla
from tests.support import source

# Names whose meaning is a framework's convention: a literal equal to one, or starting with
# a prefix, outside the tables is a second copy of the rule.
NAMES = {
    pytorch.PROFILER_STEP,
    pytorch.DATALOADER_NEXT,
    tensorflow.ITERATOR_PREFIX,
    tensorflow.GET_NEXT,
    tensorflow.KERAS_BATCH,
    tensorflow.EXECUTOR_PROCESS,
    *tensorflow.GET_NEXT_KERNELS,
    *tensorflow.INFEED_OPS,
    xla.STEPS_LINE,
    xla.XLA_OPS_LINE,
    xla.XLA_MODULES_LINE,
}


def _docstrings(nodes: Iterable[ast.AST]) -> set[int]:
    found = set()
    for node in nodes:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def test_framework_names_are_written_only_in_vocab() -> None:
    offenders = []
    for module in source.modules():
        if "vocab" in module.path.parts or "proto" in module.path.parts:
            continue
        docs = _docstrings(module.nodes)
        for node in module.nodes:
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and node.value in NAMES
            ):
                offenders.append(f"{module.where}:{node.lineno}: {node.value!r}")
    assert offenders == []


def test_profiler_step_numbers() -> None:
    assert pytorch.profiler_step_number("ProfilerStep#17") == 17
    assert pytorch.profiler_step_number("ProfilerStep#x") is None
    assert pytorch.profiler_step_number("ProfilerStep#" + "9" * 19) is None  # beyond int64
    assert pytorch.PROFILER_STEP_ANY.sub("#", "a ProfilerStep#3 b") == "a # b"
    assert tensorflow.is_root_iterator("Iterator::Root")
    assert not tensorflow.is_root_iterator("Iterator::Root::Map")
    assert tensorflow.is_get_next("iteratorgetnextsync")


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("EagerLocalExecute: __inference_train_step_1392", True),  # a tf.function call
        ("EagerLocalExecute: MatMul", True),
        ("EagerLocalExecute: _MklNativeFusedMatMul", True),
        ("sequential_1/dense_1/Relu:_MklNativeFusedMatMul", True),  # a graph op, scope:type
        ("EagerLocalExecute: ReadVariableOp", False),
        ("EagerLocalExecute: IteratorGetNext", False),
        ("sgd/Cast/ReadVariableOp:ReadVariableOp", False),
        ("KernelAndDeviceFunc::Run", False),
        ("MatMul", False),  # no scope: not a graph op's name
    ],
)
def test_tensorflow_model_ops(name: str, model: bool) -> None:
    assert tensorflow.is_model_op(name) is model


def test_the_wrapper_frames_name_functions_stepscope_has() -> None:
    """`WRAPPER_FRAMES` are read from sampled stacks as ``func (file.py)``: each must be a
    function defined in a file of that name in the package (a rename would leave the name
    behind, and the frame would be named as the user's iterator again)."""
    from pathlib import Path

    import stepscope
    from stepscope.vocab.profiler import WRAPPER_FRAMES

    root = Path(stepscope.__file__).parent
    for frame in sorted(WRAPPER_FRAMES):
        func, _, file = frame.rstrip(")").partition(" (")
        defined = {
            node.name
            for path in root.rglob(file)
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef)
        }
        assert func in defined, frame
