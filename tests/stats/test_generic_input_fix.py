"""The input findings' generic fix, where no loader's settings were recorded (a DataLoader
with ``num_workers=0``, a JAX or TensorFlow loop): pinned memory only with a device to copy
to (decision 481). Synthetic profiles built in code."""

from __future__ import annotations

from dataclasses import replace

from stepscope.model import Profile
from stepscope.stats import summarize_steps
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.input.ahead import TF_DATA_AHEAD, input_ahead
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.vocab.pytorch import DATALOADER_NEXT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

IN_PROCESS_NEXT = f"{DATALOADER_NEXT}#_SingleProcessDataLoaderIter.__next__"
# a loader of the user's own, traced (`stepscope.trace`): its time between the steps is a gap
# (the DataLoader's own `__next__` before a step is that step's fetch, inside its span)
OWN_LOADER_NEXT = "ShardLoader.__next__"


def _loop(between: bool) -> Profile:
    """A CPU loop over a DataLoader without workers: 8 ms in ``__next__``, 12 ms of model
    op; ``between``: over a loader of the user's own, the step marker covering the model
    op only."""
    builder = XSpaceBuilder("synthetic")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(8):
        t = k * 20
        marked = (t + 8, 12) if between else (t, 20)
        main.event("train", marked[0] * MS, marked[1] * MS, {"step_num": k, "_r": 1})
        main.event(OWN_LOADER_NEXT if between else IN_PROCESS_NEXT, t * MS, 8 * MS)
        main.event("aten::addmm", (t + 8) * MS, 12 * MS)
    return build(builder)


def _findings(profile: Profile, has_device: bool | None = None) -> dict[str, Finding]:
    db = build_step_db(profile)
    if has_device is not None:
        db = replace(db, has_device=has_device)
    data = HostData("h", profile, db, build_kernel_db(profile))
    return {f.id: f for f in diagnose_host(data)}


def test_a_cpu_run_is_not_asked_to_pin_memory() -> None:
    """It was: "PyTorch DataLoader(num_workers=N, pin_memory=True, ...)" on a CPU loop."""
    fix = _findings(_loop(between=False))["input_bound"].fix
    assert "DataLoader(num_workers=N, persistent_workers=True)" in fix
    assert "pin_memory" not in fix
    gaps = _findings(_loop(between=True))["step_gaps"].fix
    assert gaps.startswith("The next batch is loaded between steps: load it in the background")
    assert "pin_memory" not in gaps and "GPU" not in gaps


def test_a_run_with_a_device_still_is() -> None:
    fix = _findings(_loop(between=False), has_device=True)["input_bound"].fix
    assert "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True)" in fix
    gaps = _findings(_loop(between=True), has_device=True)["step_gaps"].fix
    assert gaps.startswith("The next batch is loaded between steps while the GPU waits")
    assert "pin_memory=True" in gaps


# Decision 610: one spelling of "make the batches ahead" per framework, wherever it is said.
def _advice_input_line(profile: Profile) -> str:
    summary = summarize_steps({"h": build_step_db(profile)})
    (line,) = [d for d in recommend(summary, bound_by(summary)).details if "ahead" in d]
    return line


def test_a_pytorch_loop_is_told_one_way_to_load_ahead_everywhere() -> None:
    """A PyTorch loop's step gaps were told "tf.data prefetch(tf.data.AUTOTUNE)", its first
    page "a DataLoader with num_workers, or a background thread", its input finding
    "DataLoader(num_workers=N, persistent_workers=True), or a background thread or process
    for a Python loader": three spellings of one change on one run."""
    ahead = input_ahead("pytorch", False)
    assert ahead.startswith("DataLoader(num_workers=N, persistent_workers=True)")
    gaps = _findings(_loop(between=True))["step_gaps"].fix
    assert f"load it in the background ({ahead})" in gaps
    assert "tf.data" not in gaps
    assert (
        f"Prepare batches ahead of the step: {ahead}." in _findings(_loop(False))["input_bound"].fix
    )
    assert f"Prepare batches ahead of the step ({ahead})." in _advice_input_line(_loop(False))


def test_the_frameworks_get_one_spelling_of_tf_data() -> None:
    """TensorFlow's page said "tf.data's .prefetch(...)", its findings "tf.data .prefetch(...)";
    a JAX run's page "a DataLoader with workers, tf.data prefetch, a background thread"."""
    assert input_ahead("tensorflow", True) == TF_DATA_AHEAD
    for framework in ("jax", ""):
        assert input_ahead(framework, False).startswith(f"{TF_DATA_AHEAD}; PyTorch DataLoader(")
