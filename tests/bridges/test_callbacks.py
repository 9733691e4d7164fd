"""Lightning and Hugging Face callbacks: fakes of both libraries in-process, the real ones in
a subprocess when installed (pip install lightning transformers)."""

from __future__ import annotations

import importlib.util
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture.callbacks import huggingface, lightning
from stepscope.capture.callbacks.steps import StepMarker
from stepscope.errors import StepscopeError
from tests.support.capture import load_run, named
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

FETCH_S = 0.02


def test_steps_are_backdated_to_include_the_batch_fetch(tmp_path: Path) -> None:
    marker = StepMarker()
    stepscope.start(tmp_path)
    marker.resume()  # epoch start
    for _ in range(3):
        with stepscope.trace("fetch"):  # the trainer fetching the batch, before its hook
            time.sleep(FETCH_S)
        marker.begin()
        marker.end()
    marker.finish()
    profile = load_run(stepscope.stop())
    steps = named(profile, "train")
    assert [s["stats"]["step_num"] for s in steps] == [1, 2, 3]
    for s, fetch in zip(steps, named(profile, "fetch"), strict=True):
        assert s["start_ns"] <= fetch["start_ns"] and fetch["end_ns"] <= s["end_ns"]


def test_evaluation_between_steps_is_left_out(tmp_path: Path) -> None:
    marker = StepMarker()
    stepscope.start(tmp_path)
    marker.resume()
    marker.begin()
    marker.end()
    with stepscope.trace("evaluation"):
        time.sleep(0.05)
    marker.resume()  # ... ended
    marker.begin()
    marker.end()
    profile = load_run(stepscope.stop())
    first, second = named(profile, "train")
    (evaluation,) = named(profile, "evaluation")
    assert first["end_ns"] <= evaluation["start_ns"]  # in neither step
    assert evaluation["end_ns"] <= second["start_ns"]


def test_a_step_range_is_profiled_with_its_own_session(tmp_path: Path) -> None:
    marker = StepMarker(tmp_path, profile_steps="2,3")
    for _ in range(5):
        marker.resume()
        marker.begin()
        marker.end()
    marker.finish()
    assert marker.run_dir is not None and not stepscope.capture.is_running()
    steps = named(load_run(marker.run_dir), "train")
    assert [s["stats"]["step_num"] for s in steps] == [2, 3]


def _fake(monkeypatch: pytest.MonkeyPatch, module: str, attr: str) -> type:
    base = type(attr, (), {"__init__": lambda self: None})
    fake = types.ModuleType(module)
    setattr(fake, attr, base)
    monkeypatch.setitem(sys.modules, module, fake)
    return base


def test_lightning_callback_with_a_fake_lightning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _fake(monkeypatch, "lightning.pytorch", "Callback")
    monkeypatch.setitem(sys.modules, "lightning", types.ModuleType("lightning"))
    monkeypatch.setattr(lightning, "_class", None)
    callback = lightning.StepscopeCallback(tmp_path, profile_batch="2,3")
    assert isinstance(callback, base)
    trainer = module = object()
    for _epoch in range(2):
        callback.on_train_epoch_start(trainer, module)
        for i in range(2):
            callback.on_train_batch_start(trainer, module, None, i)
            callback.on_train_batch_end(trainer, module, None, None, i)
        callback.on_validation_start(trainer, module)
        callback.on_validation_end(trainer, module)
    callback.on_train_end(trainer, module)
    steps = named(load_run(callback.run_dir), "train")
    assert [s["stats"]["step_num"] for s in steps] == [2, 3]


def test_huggingface_callback_with_a_fake_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake(monkeypatch, "transformers", "TrainerCallback")
    monkeypatch.setattr(huggingface, "_class", None)
    callback = huggingface.StepscopeCallback()
    state = types.SimpleNamespace(global_step=0)
    stepscope.start(tmp_path)
    callback.on_epoch_begin(None, state, None)
    for _ in range(3):
        callback.on_step_begin(None, state, None)
        state.global_step += 1
        callback.on_step_end(None, state, None)
        callback.on_log(None, state, None)
    callback.on_train_end(None, state, None)
    steps = named(load_run(stepscope.stop()), "train")
    assert [s["stats"]["step_num"] for s in steps] == [1, 2, 3]


def test_missing_libraries_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("lightning", "lightning.pytorch", "pytorch_lightning", "transformers"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(lightning, "_class", None)
    monkeypatch.setattr(huggingface, "_class", None)
    with pytest.raises(StepscopeError, match="pip install lightning"):
        lightning.StepscopeCallback  # noqa: B018
    with pytest.raises(StepscopeError, match="pip install transformers"):
        huggingface.StepscopeCallback  # noqa: B018


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


LIGHTNING_SCRIPT = """
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch, lightning as L
from torch.utils.data import DataLoader, TensorDataset
import stepscope
from stepscope.capture.callbacks.lightning import StepscopeCallback

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

data = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
callback = StepscopeCallback(sys.argv[1], profile_batch="3,5")
trainer = L.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, callbacks=[callback])
trainer.fit(Model(), data)
print(json.dumps({"run": str(callback.run_dir)}))
"""

HF_SCRIPT = """
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
import stepscope
from stepscope.capture.callbacks.huggingface import StepscopeCallback

# A tiny BERT built from its config: no download, a few thousand weights.
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=32, num_labels=2)
model = BertForSequenceClassification(config)
data = [{"input_ids": torch.randint(0, 64, (12,)), "labels": torch.tensor(k % 2)}
        for k in range(64)]
args = TrainingArguments(output_dir=sys.argv[1] + "/out", max_steps=6,
                         per_device_train_batch_size=8, report_to=[], save_strategy="no",
                         logging_strategy="no", use_cpu=True, disable_tqdm=True)
callback = StepscopeCallback(sys.argv[1], profile_steps="2,4")
Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()
print(json.dumps({"run": str(callback.run_dir)}))
"""


def _check_real(run: dict[str, Any], expected: list[int]) -> None:
    profile = load_run(Path(run["run"]))
    steps = named(profile, "train")
    assert [s["stats"]["step_num"] for s in steps] == expected
    ops = [e for e in named(profile, "aten::linear")]
    assert ops and all(
        any(s["start_ns"] <= o["start_ns"] <= s["end_ns"] for s in steps) for o in ops
    )


@pytest.mark.skipif(not _installed("lightning", "torch"), reason="pip install lightning")
def test_real_lightning_trainer(tmp_path: Path) -> None:
    _check_real(run_script(LIGHTNING_SCRIPT, str(tmp_path)), [3, 4, 5])


@pytest.mark.skipif(
    not _installed("transformers", "accelerate", "torch"),
    reason="pip install transformers accelerate",
)
def test_real_huggingface_trainer(tmp_path: Path) -> None:
    _check_real(run_script(HF_SCRIPT, str(tmp_path)), [2, 3, 4])
