"""TensorFlow eager ops in the host op table (decision 1032): each ``EagerLocalExecute: X``
span of a program that calls no tf.function is op X of type X, run eagerly; beside tf.function
calls, those that do not feed the function (decision 1022)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.model import Profile
from stepscope.model.from_xspace import profile_from_xspace
from stepscope.stats.op_metrics import OpTable, build_op_metrics
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.tf_mixed_loop import US, WRAPPERS, mixed_loop, mixed_space


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


def test_eager_ops_beside_a_tf_function_are_their_own_eager_rows() -> None:
    """A loop with eager data prep beside its tf.function listed only the function's ops: the
    eager part's 600 us were host idle. Now each eager op is its own row, all of it eager, and
    the function's graph op, the pipeline's ops and what feeds the function are as before."""
    plain = build_op_metrics(mixed_loop(())).host
    table = build_op_metrics(mixed_loop(("Cast", "Sub"), once="LogicalAnd")).host
    rows = _rows(table)
    assert rows[("Cast", "Cast")] == (3, 300 * US, 300 * US)
    assert rows[("Sub", "Sub")] == (3, 300 * US, 300 * US)
    for key, row in _rows(plain).items():  # graph op, EagerPyFunc, Iterator::Root: unchanged
        assert rows[key] == row
    assert set(rows) == set(_rows(plain)) | {("Cast", "Cast"), ("Sub", "Sub")}
    assert rows[("dense/MatMul", "MatMul")] == (3, 450 * US, 0)  # not in the call's span
    assert rows[("EagerPyFunc", "EagerPyFunc")] == (3, 300 * US, 0)  # its eager Mul is its own
    left_out = {"Mul", "_EagerConst", "IteratorGetNext", "LogicalAnd"}
    assert not left_out & {name for name, _ in rows}


def test_a_one_step_capture_keeps_an_eager_op_run_once() -> None:
    """Where the function ran once, an op run once is the step's, not the capture's edge."""
    rows = _rows(build_op_metrics(mixed_loop(("Cast",), steps=1)).host)
    assert rows[("Cast", "Cast")] == (1, 100 * US, 100 * US)
    assert ("_EagerConst", "_EagerConst") not in rows
    assert ("IteratorGetNext", "IteratorGetNext") not in rows


def test_the_report_marks_the_top_ops_that_ran_eagerly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's top host ops say which are eager ops (the overview's `eager_percent`)."""
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(mixed_space(("Cast",)).SerializeToString())
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["report", str(path), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("Cast (eager)" in line and line.rstrip().endswith("Cast") for line in lines)
    matmul = next(line for line in lines if "dense/MatMul" in line)
    assert "eager" not in matmul


def test_an_eager_op_run_once_between_the_calls_is_a_row() -> None:
    """A user's eager op run once mid-loop (a 1500x1500 tf.linalg.inv, 298 ms of a 540 ms
    capture) was host idle: the rule for the capture's edges left it out wherever it ran.
    Now only one before the first call or after the last is left out."""
    rows = _rows(
        build_op_metrics(mixed_loop(("Cast",), once="LogicalAnd", between="MatrixInverse")).host
    )
    assert rows[("MatrixInverse", "MatrixInverse")] == (1, 2000 * US, 2000 * US)
    assert ("LogicalAnd", "LogicalAnd") not in rows  # after the last call: the capture's edge


def test_the_compute_headline_says_the_ops_ran_eagerly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A loop whose host compute is mostly eager ops read "The model's computation on the
    host (framework ops)", as a tf.function's graph would (decision 1026)."""
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(mixed_space(("Cast", "RealDiv", "Sub"), steps=6).SerializeToString())
    monkeypatch.setenv("COLUMNS", "1000")
    assert main(["report", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "ran eagerly, one op at a time from the Python thread (" in out
    assert "outside any tf.function" in out
