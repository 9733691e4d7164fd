"""The trainer callbacks' own session (``logdir``): it starts before the first profiled step
begins, so that step holds its batch's fetch and not the session's start (decision 1076);
a training that ends before that step saves nothing and says so (decision 1077)."""

from __future__ import annotations

import logging
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture import session
from stepscope.capture.callbacks import lightning, steps
from stepscope.capture.callbacks.steps import StepMarker
from stepscope.vocab.profiler import STEP_HOLDS_FETCH_STAT
from tests.support.capture import load_run, named
from tests.support.scripts import run_script


def _slow_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each session the callbacks start ends with a traced 20 ms of its own (a framework
    profiler's start takes hundreds of milliseconds)."""
    real_start = session.start

    def start(*args: Any, **kwargs: Any) -> None:
        real_start(*args, **kwargs)
        with stepscope.trace("starting"):
            time.sleep(0.02)

    monkeypatch.setattr(steps.session, "start", start)


def test_the_first_profiled_step_holds_its_fetch_not_the_sessions_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On main the session started in step 2's begin hook, after its batch was fetched, and
    # the step was not backdated: it held neither (Lightning 3.56 ms for the script's 195.41,
    # Hugging Face 283.78 for 474.66, the start ~190 ms of it).
    _slow_start(monkeypatch)
    marker = StepMarker(tmp_path, profile_steps="2,3")
    marker.resume(opens_epoch=True)  # epoch start
    running = []
    for _ in range(4):
        running.append(session.is_running())
        with stepscope.trace("fetch"):  # recorded when a session runs
            time.sleep(0.005)
        marker.begin()
        marker.end()
    marker.finish()
    assert running == [False, True, True, False]
    profile = load_run(marker.run_dir)
    found = named(profile, "train")
    assert [s["stats"]["step_num"] for s in found] == [2, 3]
    fetches = named(profile, "fetch")
    assert len(fetches) == 2
    (starting,) = named(profile, "starting")
    for s, fetch in zip(found, fetches, strict=True):
        assert starting["end_ns"] <= s["start_ns"] <= fetch["start_ns"]
        assert fetch["end_ns"] <= s["end_ns"]
        assert s["stats"].get(STEP_HOLDS_FETCH_STAT) == 1


def test_a_first_profiled_step_opening_an_epoch_starts_at_the_epochs_start(
    tmp_path: Path,
) -> None:
    # The Lightning callback says when a batch ends its epoch: the validation between the
    # epochs stays out of the capture, which starts at the next epoch's start.
    marker = StepMarker(tmp_path, profile_steps="3,3")
    seen = []
    for _ in range(2):
        marker.resume(opens_epoch=True)
        for index in range(2):
            seen.append(session.is_running())
            marker.begin()
            marker.end(epoch_continues=index == 0)
        seen.append(session.is_running())  # the validation
    marker.finish()
    assert seen == [False, False, False, True, False, False]
    assert [s["stats"]["step_num"] for s in named(load_run(marker.run_dir), "train")] == [3]


def test_a_driver_of_no_hook_before_the_step_still_profiles_it(tmp_path: Path) -> None:
    marker = StepMarker(tmp_path, profile_steps="1,1")
    marker.begin()  # no resume before: the session starts here, as before
    marker.end()
    assert not session.is_running()
    assert [s["stats"]["step_num"] for s in named(load_run(marker.run_dir), "train")] == [1]


def test_training_ending_before_the_first_profiled_step_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # On main: a silent nothing when the session had not started, and, once it starts at the
    # step before, a saved run of no step. Now nothing is saved and the user is told.
    for profile_steps, steps_run, started in (("5,10", 3, False), ("4,6", 3, True)):
        logdir = tmp_path / profile_steps.replace(",", "-")
        marker = StepMarker(logdir, profile_steps=profile_steps)
        marker.resume(opens_epoch=True)
        for _ in range(steps_run):
            marker.begin()
            marker.end()
        assert session.is_running() is started  # the session for step 4 began at 3's end
        with caplog.at_level(logging.WARNING, logger="stepscope"):
            caplog.clear()
            marker.finish()
            marker.finish()  # Lightning's on_exception, then on_train_end: said once
        assert not session.is_running() and marker.run_dir is None
        assert not logdir.exists() or not any(logdir.rglob("*.pb"))
        first, last = profile_steps.split(",")
        assert [r.getMessage() for r in caplog.records] == [
            f"stepscope StepscopeCallback: nothing was profiled and nothing saved: "
            f"profile_steps asks for steps {first}-{last}, and training ended after step 3 "
            f"(steps are counted from 1 across epochs). To profile, give profile_steps a "
            f"range within steps 1-3, or train for at least {first} steps."
        ]


def _one_epoch_of_a_fake_lightning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The Lightning callback for batch 3 over a fake Lightning, after an epoch of 2 batches
    (its validation begun); the callback and the trainer."""
    fake = types.ModuleType("lightning.pytorch")
    fake.Callback = type("Callback", (), {"__init__": lambda self: None})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lightning.pytorch", fake)
    monkeypatch.setitem(sys.modules, "lightning", types.ModuleType("lightning"))
    monkeypatch.setattr(lightning, "_class", None)
    callback = lightning.StepscopeCallback(tmp_path, profile_batch="3,3")
    trainer = types.SimpleNamespace(num_training_batches=2)
    callback.on_train_epoch_start(trainer, None)
    for i in range(2):
        callback.on_train_batch_start(trainer, None, None, i)
        callback.on_train_batch_end(trainer, None, None, None, i)
    callback.on_validation_start(trainer, None)
    return callback, trainer


def test_lightning_says_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    callback, trainer = _one_epoch_of_a_fake_lightning(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        callback.on_train_end(trainer, None)  # ... and it ended there
    assert callback.run_dir is None
    assert "profile_batch asks for batch 3, and training ended after batch 2" in caplog.text


def test_lightning_knows_an_epochs_last_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    callback, trainer = _one_epoch_of_a_fake_lightning(tmp_path, monkeypatch)
    assert not session.is_running()  # batch 2 ended the epoch: not started for batch 3
    callback.on_train_epoch_start(trainer, None)
    assert session.is_running()  # ... but at the next epoch's start
    callback.on_train_batch_start(trainer, None, None, 0)
    callback.on_train_batch_end(trainer, None, None, None, 0)
    assert [s["stats"]["step_num"] for s in named(load_run(callback.run_dir), "train")] == [3]


# A user's Lightning fit whose dataset is read in the loop's process (no workers), each
# sample's read traced: the first profiled batch's step holds the read of its batch.
LIGHTNING_FETCH_SCRIPT = """
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import torch, lightning as L
from torch.utils.data import DataLoader, Dataset
import stepscope
from stepscope.capture.callbacks.lightning import StepscopeCallback
from tests.support.lightning_model import linear_model

class Slow(Dataset):
    def __len__(self): return 48
    def __getitem__(self, i):
        with stepscope.trace("read"):
            time.sleep(0.002)
            return torch.randn(8), torch.randn(1)

callback = StepscopeCallback(sys.argv[1], profile_batch=sys.argv[2])
trainer = L.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])
trainer.fit(linear_model(), DataLoader(Slow(), batch_size=4))
print(json.dumps({"run": str(callback.run_dir)}))
"""


@pytest.mark.integration
@pytest.mark.untimed
@pytest.mark.parametrize("profile_batch", ["3,5", "13,14"])  # 13 opens the second epoch
def test_real_lightning_first_profiled_step_holds_a_batch_read(
    tmp_path: Path, profile_batch: str
) -> None:
    pytest.importorskip("lightning")
    run = run_script(LIGHTNING_FETCH_SCRIPT, str(tmp_path), profile_batch)
    profile = load_run(Path(run["run"]))
    found = named(profile, "train")
    first, last = (int(v) for v in profile_batch.split(","))
    assert [s["stats"]["step_num"] for s in found] == list(range(first, last + 1))
    reads = named(profile, "read")
    for s in found:  # on main the first held none: it began after its batch was read
        held = [r for r in reads if s["start_ns"] <= r["start_ns"] and r["end_ns"] <= s["end_ns"]]
        assert held, s["stats"]["step_num"]
