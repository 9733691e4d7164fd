"""Keras 3 callback: profile a range of batches, each marked as a step.

    model.fit(x, y, callbacks=[stepscope.keras.ProfileCallback("logs", profile_batch="10,15")])

``profile_batch`` as Keras's ``TensorBoard``: an int N (that one batch), ``"a,b"`` or
``(a, b)`` -- an inclusive range of the global, 1-based batch counter (it keeps counting
across epochs); 0 disables profiling. Unlike Keras 3's own callback, whose ``Profiled batch``
events carry no ``_r`` (so XProf finds no steps), each batch is a `stepscope.step` numbered
by that counter. Profiles go where Keras puts them: ``<logdir>/train/plugins/profile/<run>``.
With ``steps_per_execution=N`` Keras calls the batch callbacks once per N batches: the counter
counts those calls (as Keras's TensorBoard callback does), each step runs N batches, and the
step description says so with the time per batch (`stats.steps.executions`, decision 816).
The session starts before the first profiled batch begins -- at the previous batch's end,
or at its epoch's begin when it opens an epoch -- so that the session's own start (hundreds
of milliseconds) falls in no profiled batch and the first step is the whole batch
(decision 1067). A fit that ends before the first profiled batch (an epoch shorter than
``profile_batch`` counts to, early stopping) saves nothing and says so (decision 1077).

Keras is imported only when ``ProfileCallback`` is first used; the batch-range logic lives in
`BatchRangeProfiler`, which needs no Keras (and is what the tests drive).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from stepscope import log
from stepscope.capture import session
from stepscope.capture.options import ProfilerOptions, resolve_options
from stepscope.capture.step import step
from stepscope.errors import StepscopeError
from stepscope.logdir import check_logdir


def parse_profile_batch(profile_batch: int | str | tuple[int, int] | list[int]) -> tuple[int, int]:
    """Keras's ``profile_batch`` as an inclusive (first, last) range; (0, 0) means off."""
    value: Any = profile_batch
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            value = [int(p) for p in parts]
        except ValueError:
            value = None
    if isinstance(value, bool):
        value = None
    if isinstance(value, int):
        value = [value, value]
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        first, last = value
        if (first, last) == (0, 0):
            return 0, 0
        if 1 <= first <= last:
            return first, last
    raise StepscopeError(
        f"profile_batch must be a positive int, 'a,b' or (a, b) with 1 <= a <= b, or 0 to "
        f"disable; got {profile_batch!r}"
    )


def unreached(callback: str, unit: str, seen: int, first: int, last: int) -> str:
    """What a callback says when training ended before its first profiled ``unit`` (after
    ``seen``): what was asked for, why nothing was saved, what to change (decision 1077)."""
    option = "profile_batch" if unit == "batch" else "profile_steps"
    plural = "batches" if unit == "batch" else "steps"
    asked = f"{unit} {first}" if first == last else f"{plural} {first}-{last}"
    least = f"{first} {plural}" if first > 1 else f"one {unit}"
    ran = (
        f"after {unit} {seen} ({plural} are counted from 1 across epochs)"
        if seen
        else f"before its first {unit}"
    )
    within = ""  # none ran: nothing to give
    if seen > 1:
        within = f"give {option} a range within {plural} 1-{seen}, or "
    elif seen == 1:  # no range of one ("batches 1-1")
        within = f"set {option} to 1 (the only {unit} it ran), or "
    return (
        f"stepscope {callback}: nothing was profiled and nothing saved: {option} asks for "
        f"{asked}, and training ended {ran}. To profile, {within}train for at least {least}."
    )


class BatchRangeProfiler:
    """Starts a session at batch ``first``, marks batches as steps, stops after ``last``."""

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        profile_batch: Any = "10,15",
        options: ProfilerOptions | None = None,
    ) -> None:
        checked = check_logdir(logdir, "ProfileCallback")
        self.logdir = str(Path(checked) / "train")
        self.first, self.last = parse_profile_batch(profile_batch)
        self.options = resolve_options(options)  # checked now, not at the first profiled batch
        self.global_batch = 0  # 1-based once the first batch begins
        self.run_dir: Path | None = None
        self._span: Any = None
        self._started = False
        self._told = False  # said that training ended before the first profiled batch

    def _start_before_first(self) -> None:
        """Start now if the next batch to begin is the first profiled and none is running."""
        if self.first and self.global_batch + 1 == self.first and not self._started:
            session.start(self.logdir, self.options)
            self._started = True

    def epoch_begin(self) -> None:
        """Before an epoch's first batch (Keras's ``on_epoch_begin``)."""
        self._start_before_first()

    def batch_begin(self) -> None:
        self.global_batch += 1
        if self.first == 0 or not self.first <= self.global_batch <= self.last:
            return
        if self.global_batch == self.first and not self._started:
            # No hook came before it (a driver without epoch hooks): the start is in this
            # batch's time, though not in its step.
            session.start(self.logdir, self.options)
            self._started = True
        if self._started:
            self._span = step(self.global_batch)
            self._span.__enter__()

    def batch_end(self, epoch_continues: bool = True) -> None:
        """A batch ended; ``epoch_continues``: another batch of its epoch follows (if known).

        At the end of an epoch the start waits for the next epoch's begin: the validation
        and the epoch-end callbacks between them stay out of the capture.
        """
        if self._span is not None:
            span, self._span = self._span, None
            span.__exit__(None, None, None)
        if self._started and self.global_batch >= self.last:
            self.finish()
        elif epoch_continues:
            self._start_before_first()

    def finish(self) -> None:
        """Stop (and save) if a session of ours is running: training may end inside the range.

        Ended before the first profiled batch: a session begun for it holds no step and is
        dropped, and the user is told why nothing was saved (decision 1077)."""
        if self._span is not None:
            span, self._span = self._span, None
            span.__exit__(None, None, None)
        if self._started:
            self._started = False
            if self.global_batch < self.first:
                session.stop(save=False)
            else:
                self.run_dir = session.stop()
        if self.first and self.global_batch < self.first and not self._told:
            self._told = True
            log.warn(
                unreached("ProfileCallback", "batch", self.global_batch, self.first, self.last)
            )


def _make_callback_class() -> type:
    import keras  # deferred: importing Keras costs seconds and picks a backend

    class ProfileCallback(keras.callbacks.Callback):
        """Keras callback profiling the global batch range ``profile_batch`` (inclusive)."""

        def __init__(
            self,
            logdir: str | os.PathLike[str],
            profile_batch: Any = "10,15",
            options: ProfilerOptions | None = None,
        ) -> None:
            super().__init__()
            self.profiler = BatchRangeProfiler(logdir, profile_batch, options)

        @property
        def run_dir(self) -> Path | None:
            return self.profiler.run_dir

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.profiler.epoch_begin()

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.profiler.batch_begin()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            # `batch` is the epoch's index of the call's last batch (with
            # steps_per_execution too); the epoch's length is unknown for a dataset of
            # unknown cardinality, then the start is at this end.
            steps = (self.params or {}).get("steps")
            self.profiler.batch_end(epoch_continues=not isinstance(steps, int) or batch + 1 < steps)

        def on_train_end(self, logs: Any = None) -> None:
            self.profiler.finish()

    return ProfileCallback


_callback_class: type | None = None


def __getattr__(name: str) -> Any:
    global _callback_class
    if name == "ProfileCallback":
        if _callback_class is None:
            _callback_class = _make_callback_class()
        return _callback_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
