"""TensorFlow eager ops in the host op table (decision 1032): each ``EagerLocalExecute: X``
span of a program that calls no tf.function is op X of type X, run eagerly."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.model.from_xspace import profile_from_xspace
from stepscope.stats.op_metrics import OpTable, build_op_metrics
from stepscope.xspace.builder import XSpaceBuilder

US = 1_000
# One eager op as TensorFlow 2.21 traces it on the calling thread (the runtime's wrappers,
# no op event inside: the op runs as a one-op function).
WRAPPERS = ("EagerKernelExecute", "KernelAndDeviceFunc::Run")


def _eager_loop(ops: tuple[str, ...], *, inner: str = "", function: str = "") -> Profile:
    """Three steps of eager ``ops`` (100 us each, 10 us of wrappers above and below), with
    ``inner`` traced inside each op's kernel (an older TensorFlow) and a tf.function call
    ``function`` after them."""
    builder = XSpaceBuilder(hostname="h")
    main = builder.plane("/host:CPU").line(1, "MainThread", timestamp_ns=0)
    at = 0
    for step in range(3):
        start = at
        at += 10 * US
        for op in ops:
            main.event("EagerExecute", at, 110 * US, {"eager_op": op, "is_func": 0})
            main.event(f"EagerLocalExecute: {op}", at + 5 * US, 100 * US)
            for depth, name in enumerate(WRAPPERS):
                main.event(name, at + (10 + depth) * US, (90 - 2 * depth) * US)
            if inner:
                main.event(inner, at + 20 * US, 60 * US)
            at += 120 * US
        if function:
            main.event(f"EagerLocalExecute: {function}", at, 50 * US)
            at += 60 * US
        main.event("Iterator::range", at, 2 * US)
        at += 10 * US
        main.event("train", start, at - start, {"step_num": step, "_r": 1})
    return profile_from_xspace(builder.build())


def _rows(table: OpTable) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {
        (name, kind): (int(n), int(own), int(eager))
        for name, kind, n, own, eager in zip(
            table.names,
            table.types,
            table.occurrences,
            table.self_ns,
            table.eager_self_ns,
            strict=True,
        )
    }


def test_an_eager_loop_lists_its_ops_by_name_and_type() -> None:
    """The eager loop's table read KernelAndDeviceFunc::Run (every host event, each its own
    type): now each op, with the whole span as its self time, all of it eager."""
    rows = _rows(build_op_metrics(_eager_loop(("MatMul", "Relu", "_EagerConst"))).host)
    assert rows[("MatMul", "MatMul")] == (3, 300 * US, 300 * US)
    assert rows[("Relu", "Relu")] == (3, 300 * US, 300 * US)
    assert rows[("_EagerConst", "_EagerConst")] == (3, 300 * US, 300 * US)
    assert ("Iterator::range", "Dataset") in rows
    names = {name for name, _ in rows}
    assert not names & {*WRAPPERS, "EagerExecute", "EagerLocalExecute: MatMul", "train"}


def test_an_op_traced_inside_its_span_is_the_op() -> None:
    """An older TensorFlow traced the kernel inside (``MatMul:MatMul``, XProf's eager op): that
    event is the op, once, not the span around it too."""
    rows = _rows(build_op_metrics(_eager_loop(("MatMul",), inner="MatMul:MatMul")).host)
    assert rows[("MatMul", "MatMul")] == (3, 180 * US, 0)  # the kernel's, not the span's


def test_a_program_calling_tf_functions_keeps_xprofs_table() -> None:
    """With tf.function calls the table is XProf's: its graph ops, not the eager spans (the
    TF fixtures' constants and fetches; tests/stats/test_golden_tf.py)."""
    profile = _eager_loop(("MatMul",), function="__inference_train_step_12")
    names = set(build_op_metrics(profile).host.names)
    assert "MatMul" not in names and "EagerLocalExecute: MatMul" in names
