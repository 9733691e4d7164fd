"""Hugging Face ``Trainer`` callback: every optimizer step is a `stepscope.step`.

    trainer = Trainer(..., callbacks=[StepscopeCallback()])     # marks steps; you start/stop
    trainer = Trainer(..., callbacks=[StepscopeCallback("logs", profile_steps="10,15")])

Steps are numbered as the Trainer numbers them (``state.global_step`` after the step, 1-based);
with gradient accumulation one step holds all its micro-batches. Each step is backdated to
include fetching its batches (see `steps.StepMarker`); evaluation, logging and checkpoints,
which the Trainer runs between steps, are left out. ``profile_steps`` counts steps seen by
this callback (1-based), as Keras's ``profile_batch``; with ``logdir`` the session starts at
the previous step's end (the first epoch's begin for step 1), before the first profiled
step's batches are fetched (decision 1076).

``transformers`` is imported on first use of ``StepscopeCallback``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from stepscope.capture.callbacks.steps import StepMarker, lazy_class
from stepscope.capture.options import ProfilerOptions
from stepscope.errors import StepscopeError


def _callback_base() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError as exc:
        raise StepscopeError(
            "StepscopeCallback needs Hugging Face transformers: pip install transformers"
        ) from exc
    base: type = TrainerCallback
    return base


def _make_class() -> type:
    class StepscopeCallback(_callback_base()):  # type: ignore[misc]
        """Marks (and with ``logdir`` profiles) Trainer optimizer steps."""

        def __init__(
            self,
            logdir: str | os.PathLike[str] | None = None,
            profile_steps: Any = "10,15",
            options: ProfilerOptions | None = None,
        ) -> None:
            self.marker = StepMarker(logdir, profile_steps, options)

        @property
        def run_dir(self) -> Path | None:
            return self.marker.run_dir

        def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.resume(opens_epoch=True)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.begin(int(getattr(state, "global_step", self.marker.count)) + 1)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.end()

        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.resume()

        def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.resume()

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.resume()

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marker.finish()

    return StepscopeCallback


__getattr__ = lazy_class("StepscopeCallback", _make_class, __name__)
