"""Advice for a PyTorch run that never trains (no backward pass, no optimizer step: a forward
under ``torch.inference_mode()``, vLLM, ``generate()``) names no optimizer and no training
set's loader; the same steps with a backward pass keep the training advice."""

from __future__ import annotations

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.diagnostics.device import kernel_launch_bound
from stepscope.stats.diagnostics.host_steps import dispatch_bound, input_bound
from stepscope.stats.gpu.device import never_trains
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import build
from tests.support.gpu_fixtures import GpuTrace
from tests.support.torch_steps import BACKWARD, MS, US, in_a_row, torch_steps

STEPS = 6


def _small_ops(backward: bool) -> XSpaceBuilder:
    """Eager PyTorch on the CPU, dispatch-bound: 300 ops of 5 µs, 5 µs apart, per 3.2 ms
    step; with ``backward``, the first is a backward node (a model op: nothing before it
    is staged input)."""
    names = [
        BACKWARD if backward and i == 0 else ("aten::add", "aten::mul")[i % 2] for i in range(300)
    ]
    ops = in_a_row([(name, 5 * US) for name in names], 5 * US)
    return torch_steps(STEPS, 4 * MS, lambda k: ops, step_ns=3200 * US, marker="serve")


def test_a_run_without_backward_or_optimizer_never_trains() -> None:
    assert never_trains(build(_small_ops(backward=False)))
    assert not never_trains(build(_small_ops(backward=True)))
    builder = _small_ops(backward=False)
    builder.plane("/host:CPU").line(1, "MainThread").event("Optimizer.step#AdamW.step", 0, US)
    assert not never_trains(build(builder))


def test_dispatch_advice_of_inference_names_no_optimizer() -> None:
    for backward in (False, True):
        profile = build(_small_ops(backward))
        db = build_step_db(profile)
        headline = bound_by(summarize_steps({"h": db}))
        assert headline.first == "dispatch"
        data = HostData("h", profile, db, build_kernel_db(profile))
        finding = dispatch_bound(data, {})
        assert finding is not None
        for text in (headline.headline, finding.fix):
            assert ("fused=True" in text) is backward, text
            assert ("serve more requests per forward pass" in text) is not backward, text


def _staged_input(backward: bool) -> XSpaceBuilder:
    """PyTorch steps of 10 ms whose first 6 ms are untraced pre-processing before the first
    model op (an HF pipeline's preprocess), then the forward (and, training, a backward)."""
    ops = [("aten::linear", 6 * MS, 3 * MS)] + ([(BACKWARD, 9 * MS, 500 * US)] if backward else [])
    return torch_steps(STEPS, 10 * MS, lambda k: ops)


def test_input_advice_of_inference_is_about_requests_not_a_loader() -> None:
    for backward in (False, True):
        profile = build(_staged_input(backward))
        db = build_step_db(profile)
        summary = summarize_steps({"h": db})
        bound = bound_by(summary)
        assert bound.first == "input"
        details = "\n".join(recommend(summary, bound).details)
        finding = input_bound(HostData("h", profile, db, build_kernel_db(profile)), {})
        assert finding is not None
        for text in (details, finding.fix):
            assert ("DataLoader" in text) is backward, text
            # training: the advice names the profile's own loader (PyTorch's, decision 551),
            # the finding every framework's
            assert "tf.data" not in text, text  # a PyTorch run's own loader (548, 551)
            assert ("the next requests' inputs" in text) is not backward, text


def test_the_launch_finding_of_inference_names_no_optimizer() -> None:
    for backward in (False, True):
        t = GpuTrace()
        for s in range(8):
            base = s * 2 * MS
            t.step(s, base, 2 * MS)
            t.op("aten::add", base, 1900 * US)
            if backward:
                t.op(BACKWARD, base + 1900 * US, 50 * US)
            for k in range(150):
                at = base + 10 * US + k * 12 * US
                t.launch(at, "elementwise_add_kernel", at + 20 * US, 2 * US, launch_dur=10 * US)
        profile = t.profile()
        data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
        found = kernel_launch_bound(data, {})
        assert found is not None
        assert ("fused optimizers" in found.fix) is backward, found.fix
        assert ("serve more requests per forward pass" in found.fix) is not backward


def test_evaluation_over_a_dataloader_keeps_the_loaders_advice() -> None:
    """A forward-only loop fed by a DataLoader (evaluation, batch inference over a dataset):
    the loader is its lever, as in training."""
    fetch = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    ops = [(fetch, 0, 6 * MS), ("aten::linear", 6 * MS, 3 * MS)]
    profile = build(torch_steps(STEPS, 10 * MS, lambda k: ops))
    assert never_trains(profile)
    db = build_step_db(profile)
    assert db.limits.serves is False
    finding = input_bound(HostData("h", profile, db, build_kernel_db(profile)), {})
    assert finding is not None and "DataLoader(num_workers=N" in finding.fix
