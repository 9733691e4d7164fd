"""PyTorch Lightning callback: every training batch is a `stepscope.step`.

    trainer = Trainer(callbacks=[StepscopeCallback()])          # marks steps; you start/stop
    trainer = Trainer(callbacks=[StepscopeCallback("logs", profile_batch="10,15")])

Steps are numbered by the 1-based count of training batches (across epochs, as Keras's
``profile_batch``); each is backdated to include fetching its batch (see `steps.StepMarker`);
validation, which Lightning runs between training batches, is left out. With ``logdir`` the
session starts before the first profiled batch is fetched: at the previous batch's end, or
at its epoch's start when it opens one (decision 1076). With the PyTorch
bridge (torch imported, the default options) the steps hold Lightning's ops and kernels.

Lightning (``lightning.pytorch``, else ``pytorch_lightning``) is imported on first use of
``StepscopeCallback``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from stepscope.capture.callbacks.steps import StepMarker, lazy_class
from stepscope.capture.options import ProfilerOptions
from stepscope.errors import StepscopeError

_MODULES = ("lightning.pytorch", "pytorch_lightning")


def _callback_base() -> type:
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        base: type = module.Callback
        return base
    raise StepscopeError(
        "StepscopeCallback needs PyTorch Lightning: pip install lightning (or pytorch-lightning)"
    )


def _make_class() -> type:
    class StepscopeCallback(_callback_base()):  # type: ignore[misc]
        """Marks (and with ``logdir`` profiles) Lightning training steps."""

        def __init__(
            self,
            logdir: str | os.PathLike[str] | None = None,
            profile_batch: Any = "10,15",
            options: ProfilerOptions | None = None,
        ) -> None:
            super().__init__()
            self.marker = StepMarker(logdir, profile_batch, options, unit="batch")

        @property
        def run_dir(self) -> Path | None:
            return self.marker.run_dir

        def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
            self.marker.resume(opens_epoch=True)

        def on_train_batch_start(
            self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
        ) -> None:
            self.marker.begin()

        def on_train_batch_end(
            self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
        ) -> None:
            # the epoch's length (inf for an iterable of unknown length); the validation
            # after an epoch's last batch stays out of a session started for the next one
            batches = getattr(trainer, "num_training_batches", None)
            ends_epoch = isinstance(batches, (int, float)) and batch_idx + 1 >= batches
            self.marker.end(epoch_continues=not ends_epoch)

        def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
            self.marker.resume()

        def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
            self.marker.resume()

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.marker.finish()

        def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
            self.marker.finish()

    return StepscopeCallback


__getattr__ = lazy_class("StepscopeCallback", _make_class, __name__)
