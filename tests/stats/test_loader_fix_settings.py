"""The input findings' fix for a loop whose DataLoader workers were captured (decision 459):
the workers' verdict's advice, as on the overview, or the changes the loader can make from
its own settings; never a setting it already has, nor pin_memory without a device."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.input.loader_workers import dataloader_fix, loader_workers
from stepscope.stats.steps.breakdown import build_step_db
from tests.support.analysis import build
from tests.support.gpu_fixtures import tf_profile
from tests.support.loader import plain_loader_space

PERSISTENT = {"num_workers": 2, "prefetch_factor": 2, "persistent_workers": 1, "pin_memory": 0}


def _input_bound(profile: Profile) -> Finding:
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    return next(f for f in diagnose_host(data) if f.id == "input_bound")


def test_the_input_finding_says_what_the_workers_verdict_says() -> None:
    """Workers busy all the time the loop waits: the verdict's "add workers" with its
    figures; the generic fix asked for persistent_workers=True, which the loader has."""
    profile = build(plain_loader_space(100, 40, 90, steps=8, settings=PERSISTENT))
    [workers] = loader_workers(profile, build_step_db(profile))
    fix = _input_bound(profile).fix
    assert fix == workers.advice and workers.verdict == "workers_busy"
    assert "persistent_workers=True" not in fix and "pin_memory" not in fix


def test_a_loaders_fix_leaves_out_what_it_has() -> None:
    assert dataloader_fix((PERSISTENT,), has_device=False) == (
        "the DataLoader has num_workers=2, prefetch_factor=2, persistent_workers=True, "
        "pin_memory=False: raise num_workers or prefetch_factor"
    )
    fresh = {**PERSISTENT, "persistent_workers": 0}
    assert dataloader_fix((fresh,), has_device=True).endswith(
        ": raise num_workers or prefetch_factor; set pin_memory=True, persistent_workers=True"
    )
    # two loaders: a setting is asked for unless every one has it
    assert dataloader_fix((PERSISTENT, fresh), has_device=False).endswith(
        "; set persistent_workers=True"
    )


def test_a_tensorflow_run_is_told_tf_data_not_a_dataloader() -> None:
    """The tf/ctl fixture (input-bound on `IteratorGetNext`): the finding's fix named tf.data
    and then PyTorch's `DataLoader(...)` to a TensorFlow user (decision 548)."""
    fix = _input_bound(tf_profile("ctl")).fix
    assert fix.startswith("Prepare batches ahead of the step: tf.data .prefetch(")
    assert "DataLoader" not in fix and "PyTorch" not in fix
