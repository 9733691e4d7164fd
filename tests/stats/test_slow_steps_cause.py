"""What the slow-steps finding says slows those steps, and its fix (decision 457): read from
the limits the headline ranks, not XProf's categories, so a loop's fetch from a Python
generator is input there too; and a DataLoader's fix does not ask for a setting the loader
already has. Synthetic profiles built in code."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.input.loader_workers import captured_settings, loader_settings
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.vocab.pytorch import DATALOADER_SETTING_PREFIX
from stepscope.vocab.tensorflow import is_iterator
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.fetch_loop import FETCH, TRAIN, sampled_main
from tests.support.loader import LOOP_NEXT, PLAIN_STAGE

STEPS = 12
OLD_STAGE = "Iterator::DataLoader(Old)"
SLOW = (4, 8)  # the steps whose batch takes 30 ms, not 6


def _slow_steps(profile: Profile) -> Finding:
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    found = {f.id: f for f in diagnose_host(data)}
    assert "slow_steps" in found, sorted(found)
    return found["slow_steps"]


def _generator_loop() -> Profile:
    """Marked steps: the model's op (4 ms), then the loop gets its next batch from the
    generator ``batches`` (untraced; the sampler sees it there): 6 ms, 30 ms at `SLOW`."""
    builder, main, samples = sampled_main()
    t = 0
    for k in range(STEPS):
        fetch = 30 if k in SLOW else 6
        main.event("train", t, (4 + fetch) * MS, {"step_num": k, "_r": 1})
        main.event("aten::mm", t, 4 * MS)
        samples.event("forward", t, 4 * MS, {"stack": TRAIN, "samples": 4})
        stats = {"stack": FETCH, "samples": fetch, "next_frames": "2"}
        samples.event("decode", t + 4 * MS, fetch * MS, stats)
        t += (4 + fetch) * MS
    return build(builder)


def test_slow_fetches_from_a_python_generator_are_input() -> None:
    """XProf's categories put the untraced fetch in "all others", and the fix was the
    default one ("periodic logging, checkpointing..."), where the headline said input."""
    f = _slow_steps(_generator_loop())
    assert f.metrics["cause"] == "input"
    assert "mostly in input." in f.summary
    assert f.fix.startswith("The loop's Python iterator batches (data.py) takes longer")
    assert "worker processes" in f.fix


def _loader_loop(settings: dict[str, int], unrecorded_first: bool = False) -> Profile:
    """A loop over a DataLoader with 2 workers whose batches carry the loader's
    ``settings``: each step waits 1 ms in ``__next__`` (25 ms at `SLOW`), then computes
    20 ms. ``unrecorded_first``: another loader's workers made the first batch, without
    settings stats (as captured before decision 425)."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    workers = [host.line(100 + w, f"DataLoader worker {w} (pid {100 + w})") for w in (0, 1)]
    t = 0
    for k in range(STEPS):
        wait = 25 if k in SLOW else 1
        main.event("train", t * MS, (wait + 20) * MS, {"step_num": k, "_r": 1})
        main.event(LOOP_NEXT, t * MS, wait * MS)
        main.event("aten::addmm", (t + wait) * MS, 20 * MS)
        stats = {"parent_id": 9, "worker": k % 2, "batch": k}
        stage = PLAIN_STAGE
        if unrecorded_first and k == 0:
            stage = OLD_STAGE
        else:
            stats.update({DATALOADER_SETTING_PREFIX + n: v for n, v in settings.items()})
        workers[k % 2].event(f"{stage}::Worker", t * MS, (wait + 10) * MS, stats)
        t += wait + 20
    return build(builder)


def test_a_loader_is_not_told_to_set_what_it_has() -> None:
    """persistent_workers=True already: no "keep workers persistent"; its prefetch_factor
    is quoted. Without it, the advice keeps asking for persistent workers."""
    has = _slow_steps(_loader_loop({"persistent_workers": 1, "prefetch_factor": 4}))
    assert has.metrics["cause"] == "input"
    assert "prefetch deeper (prefetch_factor, now 4), add loader workers." in has.fix
    assert "persistent" not in has.fix
    lacks = _slow_steps(_loader_loop({"persistent_workers": 0, "prefetch_factor": 2}))
    assert lacks.fix.endswith("add loader workers, keep workers persistent.")


def test_a_loader_without_recorded_settings_is_not_the_one_quoted() -> None:
    """Two loaders, the first without settings stats: the advice quotes the one that has
    them (decision 480); it quoted nothing ("prefetch deeper") and asked for persistent
    workers the other loader has."""
    profile = _loader_loop({"persistent_workers": 1, "prefetch_factor": 4}, True)
    names = profile.strings.strings
    loaders = profile.strings.ids_matching(is_iterator).tolist()
    raw = [loader_settings(profile, np.flatnonzero(profile.name == i)) for i in loaders]
    assert names[loaders[0]].startswith(OLD_STAGE) and raw[0] == {}
    assert captured_settings(profile) == (raw[1],)
    f = _slow_steps(profile)
    assert "prefetch deeper (prefetch_factor, now 4), add loader workers." in f.fix
    assert "persistent" not in f.fix


def test_a_tf_data_pipeline_is_told_its_own_settings() -> None:
    """A TensorFlow loop whose steps wait in ``IteratorGetNext`` for a tf.data pipeline (no
    DataLoader settings captured): the fix names tf.data's prefetch and parallel map; it
    asked to "add loader workers, keep workers persistent" (decision 469)."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    pipeline = host.line(2, "tf_data_iterator_resource/1")
    t = 0
    for k in range(STEPS):
        wait = 25 if k in SLOW else 1
        main.event("train", t * MS, (wait + 20) * MS, {"step_num": k, "_r": 1})
        main.event("IteratorGetNext", t * MS, wait * MS)
        main.event("FunctionRun", (t + wait) * MS, 20 * MS)
        main.event("MatMul", (t + wait) * MS, 19 * MS)
        pipeline.event("Iterator::Root", t * MS, wait * MS)
        pipeline.event("Iterator::Root::Prefetch", t * MS, wait * MS)
        t += wait + 20
    f = _slow_steps(build(builder))
    assert f.metrics["cause"] == "input", f.metrics
    assert "The tf.data pipeline stalls on those steps" in f.fix
    assert "num_parallel_calls=tf.data.AUTOTUNE" in f.fix
    assert "loader workers" not in f.fix and "persistent" not in f.fix
