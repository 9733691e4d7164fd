"""Dispatch-bound steps: many small ops issued one at a time (an un-jitted JAX update, eager
PyTorch) are named as such, with their evidence, not "input" or "untraced host work"."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.model import open_run
from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import classify_steps
from stepscope.stats.bound import bound_by
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.vocab.dispatch import JITTED_FIX
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS, build
from tests.support.torch_steps import in_a_row, torch_steps

US = 1_000
STEPS = 6


def _jax_loop(ops: int = 190, op_us: int = 6, gap_us: int = 24) -> XSpaceBuilder:
    """Per 7 ms step: a 0.4 ms jitted gradient call, a 0.6 ms wait for it (computed on XLA's
    pool until 0.98 ms), then an un-jitted update: ``ops`` `PjitFunction(...)` dispatches
    ``op_us`` long, ``gap_us`` of Python apart, then untraced time to the step's end."""
    builder = XSpaceBuilder("jax")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    pool = host.line(2, "tf_XLAPjRtCpuClient/1")
    for k in range(STEPS):
        t0 = k * 10 * MS
        main.event("train", t0, 7 * MS, {"step_num": k, "_r": 1})
        main.event("PjitFunction(grad)", t0, 400 * US)
        pool.event("ThunkExecutor::Execute", t0 + 100 * US, 880 * US)
        main.event("CommonPjRtBuffer::Await", t0 + MS, 1 * US)
        t = t0 + MS + 10 * US
        for i in range(ops):
            main.event(f"PjitFunction({('multiply', 'add', 'sqrt')[i % 3]})", t, op_us * US)
            t += (op_us + gap_us) * US
    return builder


def test_an_unjitted_update_is_dispatch_bound() -> None:
    db = build_step_db(build(_jax_loop()))
    summary = summarize_steps({"h": db})
    headline = bound_by(summary)
    assert headline.first == "dispatch"
    # 190 ops x 30 µs less the last gap: 5.676 ms of each 7 ms step
    run_ns = 190 * 30 * US - 24 * US
    assert db.limit_ns()["dispatch"].tolist() == [run_ns] * (STEPS - 2)
    d = db.limits.dispatch
    assert d.ops.tolist() == [190] * (STEPS - 2)
    assert (d.median_op_ns, d.median_gap_ns) == (6 * US, 24 * US)
    assert d.top_ops[0] == ("PjitFunction(multiply)", 64 * (STEPS - 2))
    text = headline.headline
    assert text.startswith("Bound by dispatch / launch: 81.1% of the step time")
    assert "190 small ops dispatched one at a time per step" in text
    assert "jax.jit" in text  # what to do: the framework's fix
    # the gradient's wait is its computation, not host work; the 20 µs after the
    # computation ended and the 1 µs Await are an idle wait
    assert db.limit_ns()["compute"].tolist() == [980 * US] * (STEPS - 2)
    assert db.limit_ns()["waits"].tolist() == [21 * US] * (STEPS - 2)
    # XProf's line and categories stay XProf's: the dispatched ops are its 'All Others'
    xprof = classify_steps(summary)
    assert (xprof.classification, xprof.percent) == ("potential", 0.0)
    assert "78.0% of the total step time sampled is spent on 'All Others'" in xprof.statement


def test_few_ops_or_long_gaps_are_not_dispatch() -> None:
    few = build_step_db(build(_jax_loop(ops=5)))
    assert not few.limit_ns()["dispatch"].any()
    apart = build_step_db(build(_jax_loop(ops=20, gap_us=400)))  # each op alone
    assert not apart.limit_ns()["dispatch"].any()


def _torch_cpu_loop(big_op_us: int) -> XSpaceBuilder:
    """Eager PyTorch on the CPU: 30 small ops, one of them (a large elementwise op) taking
    ``big_op_us``."""
    ops = in_a_row(
        [("aten::mul", big_op_us * US) if i == 15 else ("aten::add_", 5 * US) for i in range(30)],
        5 * US,
    )
    return torch_steps(STEPS, 10 * MS, lambda k: ops, marker="train")


def test_a_long_op_in_a_run_is_compute_not_dispatch() -> None:
    db = build_step_db(build(_torch_cpu_loop(big_op_us=4000)))
    limits = db.limit_ns()
    # the 29 small ops around the 4 ms op are one run of dispatch, less that op: compute
    # (0 to 4.29 ms: 15 ops 10 µs apart, the 4 ms op, 14 ops; less the 4 ms)
    assert limits["dispatch"].tolist() == [290 * US] * 4
    assert limits["compute"].min() >= 4 * MS


def test_overview_report_and_diagnostics_agree(tmp_path: Path) -> None:
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(_jax_loop().build(), run_dir / "jax.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    overview = get_tool("overview_page").build(ctx)
    data = output.to_json(overview)
    assert list(data)[:2] == ["host", "bound_by"]  # the headline first
    assert data["bound_by"]["limits"][0]["key"] == "dispatch"
    assert overview.recommendation.bottleneck == "dispatch"
    found = output.to_json(get_tool("diagnostics").build(ctx))["findings"]
    [finding] = [f for f in found if f["id"] == "dispatch_bound"]
    assert finding["severity"] == "high"
    assert round(finding["metrics"]["ops_per_step"]) == 190
    assert not [f for f in found if f["id"] in ("input_bound", "untraced_host_work")]
    from stepscope.cli.commands.report import render

    text = render(overview, get_tool("input_pipeline_analyzer").build(ctx), top=5)
    assert text.splitlines()[2].startswith("Bound by dispatch / launch: 81.1%")
    assert np.isclose(overview.bound_by.limits[0].percent, finding["metrics"]["dispatch_pct"])


def test_a_python_loaders_wait_is_named_by_its_stage() -> None:
    """`stepscope.data` wraps each fetch in TensorFlow's `IteratorGetNextOp::DoCompute`; on a
    PyTorch run the input finding names the user's stage, not TensorFlow's op."""
    from stepscope.stats.diagnostics.base import HostData
    from stepscope.stats.diagnostics.host_steps import input_bound
    from stepscope.stats.gpu.kernels import build_kernel_db

    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(STEPS):
        t0 = k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("IteratorGetNextOp::DoCompute", t0, 5 * MS, {"id": 1, "iter_num": k})
        main.event("Iterator::Loader", t0 + 10 * US, 4 * MS, {"id": 2})
        main.event("aten::linear", t0 + 6 * MS, 3 * MS)
    profile = build(builder)
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    finding = input_bound(data, {})
    assert finding is not None and finding.events[0].name == "Iterator::Loader"
    assert "IteratorGetNextOp" not in finding.summary


def test_a_cpu_op_that_is_usually_short_still_computes_when_long() -> None:
    """Eager PyTorch on the CPU computes inline: three 5 ms matmuls among many short ones
    are compute, whatever the name's median (a PyTorch CPU loop read 64% "dispatch")."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(STEPS):
        t0 = k * 30 * MS
        main.event("train", t0, 30 * MS, {"step_num": k, "_r": 1})
        t = t0
        for i in range(40):
            dur = 5_000 * US if i in (10, 20, 30) else 20 * US
            main.event("aten::mm", t, dur)
            t += dur + 5 * US
    db = build_step_db(build(builder))
    assert db.limit_ns()["compute"].min() >= 15 * MS
    assert bound_by(summarize_steps({"h": db})).first == "compute"


def test_the_python_function_issuing_the_ops_is_named() -> None:
    """With the Python tracer's frames, the headline names the function whose frame holds
    the dispatch runs (here `update`, around each step's 190 ops)."""
    builder = _jax_loop()
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(STEPS):
        main.event("$train.py:12 update", k * 10 * MS + MS, 6 * MS)
    db = build_step_db(build(builder))
    assert db.limits.dispatch.caller == "update (train.py)"
    assert "24.0 µs apart, issued by update (train.py); fix: put the per-op code under jax.jit" in (
        bound_by(summarize_steps({"h": db})).headline
    )


def test_tiny_jitted_steps_are_told_to_do_more_per_call() -> None:
    # a small model's jitted step: one 40 µs call every 100 µs, each step marked; its calls
    # are a dispatch run, one call a step: jitted already (decision 491)
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(40):
        t = k * 100 * US
        main.event("train", t, 100 * US, {"step_num": k, "_r": 1})
        main.event("PjitFunction(update)", t, 40 * US)
    headline = bound_by(summarize_steps({"vm": build_step_db(build(builder))}))
    assert headline.first == "dispatch"
    assert JITTED_FIX in headline.headline and "per-op code" not in headline.headline


def _compiled_model_loop(
    compiled: bool, in_optimizer: bool, in_graph: bool = False
) -> XSpaceBuilder:
    """A PyTorch step on the CPU whose model runs torch.compile'd graphs (1 ms, when ``compiled``;
    else the same time in one eager op), then an AdamW step of 200 small ops, 5 µs each and 5
    µs apart (outside the optimizer's annotation unless ``in_optimizer``; inside a compiled
    graph's ``CompiledFunctionBackward`` when ``in_graph``), as /tmp/qa12/loops/compiled.py
    was traced (decision 536)."""
    builder = XSpaceBuilder("torch")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(STEPS):
        t0 = k * 5 * MS
        main.event("train", t0, 5 * MS, {"step_num": k, "_r": 1})
        if compiled:
            main.event("Torch-Compiled Region: 0/0", t0, MS)
            main.event("CompiledFunction", t0 + 10 * US, 980 * US)
            main.event("aten::addmm", t0 + 20 * US, 950 * US)
        else:
            main.event("aten::addmm", t0, MS)
        t = t0 + 1100 * US
        if in_optimizer:
            main.event("Optimizer.step#AdamW.step", t - 5 * US, 2010 * US)
        if in_graph:
            main.event("CompiledFunctionBackward", t - 5 * US, 2010 * US)
        for i in range(200):
            main.event(("aten::mul_", "aten::add_", "aten::lerp_")[i % 3], t, 5 * US)
            t += 10 * US
    return builder


def test_a_compiled_models_optimizer_ops_are_told_to_fuse_the_optimizer() -> None:
    """A torch.compile'd model whose AdamW step dispatches the small ops: "torch.compile the
    step" was the fix; the model is compiled, the optimizer is not."""
    db = build_step_db(build(_compiled_model_loop(compiled=True, in_optimizer=True)))
    headline = bound_by(summarize_steps({"h": db}))
    assert headline.first == "dispatch"
    text = " ".join(headline.headline.split())
    assert "the steps run torch.compile'd graphs already; these ops run outside them" in text
    assert "(100% of them in 'Optimizer.step#AdamW.step')" in text
    assert "fused=True" in text
    assert "torch.compile the step" not in text


def test_a_compiled_models_other_ops_are_told_to_compile_their_code() -> None:
    db = build_step_db(build(_compiled_model_loop(compiled=True, in_optimizer=False)))
    fix = db.limits.dispatch.fix("pytorch")
    assert fix.startswith("the steps run torch.compile'd graphs already; these ops run outside")
    assert "compile the code they come from too" in fix


def test_an_eager_models_ops_keep_the_compile_fix() -> None:
    db = build_step_db(build(_compiled_model_loop(compiled=False, in_optimizer=True)))
    assert db.limits.dispatch.fix("pytorch").startswith("fuse the small ops: torch.compile")


def test_ops_run_one_at_a_time_inside_compiled_graphs_are_told_the_graphs_are_not_fused() -> None:
    """A fixture's (v100_training_with_memory) CompiledFunction graphs hold 78% of its small
    ops, ``aten::t`` and ``aten::mul`` one at a time: "outside them" would be false."""
    db = build_step_db(build(_compiled_model_loop(True, in_optimizer=False, in_graph=True)))
    fix = db.limits.dispatch.fix("pytorch")
    assert fix.startswith(
        "100% of these ops run inside the steps' torch.compile'd graphs, one at a time"
    )


def test_a_compiled_model_that_never_trains_is_told_to_serve_more_per_pass() -> None:
    """No backward, no optimizer (decision 541: inference): the batch is its lever."""
    db = build_step_db(build(_compiled_model_loop(compiled=True, in_optimizer=False)))
    assert not db.limits.trains
    fix = db.limits.dispatch.fix("pytorch", db.limits.trains)
    assert fix.startswith("the steps run torch.compile'd graphs already; these ops run outside")
    assert "serve more requests per forward pass (a larger batch)" in fix
