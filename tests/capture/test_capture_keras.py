"""Keras callback: profile_batch parsing and the inclusive, 1-based global batch range."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture import session
from stepscope.capture.keras import BatchRangeProfiler, parse_profile_batch, unreached
from stepscope.errors import StepscopeError
from tests.support.capture import load_run, named


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, (3, 3)),
        ("10,15", (10, 15)),
        (" 2 , 4 ", (2, 4)),
        ((1, 1), (1, 1)),
        ([5, 9], (5, 9)),
        (0, (0, 0)),
        ("0,0", (0, 0)),
    ],
)
def test_profile_batch_forms(value: object, expected: tuple[int, int]) -> None:
    assert parse_profile_batch(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1, "5", "a,b", (4, 2), (0, 3), True, "1,2,3", 2.5])
def test_invalid_profile_batch_is_a_clear_error(value: object) -> None:
    # "5" too: Keras accepts an int or a "a,b" pair, not a single number as text.
    with pytest.raises(StepscopeError, match="profile_batch"):
        parse_profile_batch(value)  # type: ignore[arg-type]


def _drive(profiler: BatchRangeProfiler, epochs: int, batches: int) -> list[bool]:
    """What Keras does: begin/end per batch; returns whether a session ran in each batch."""
    recording = []
    for _ in range(epochs):
        for _ in range(batches):
            profiler.batch_begin()
            recording.append(session.is_running())
            profiler.batch_end()
    profiler.finish()  # on_train_end
    return recording


def test_range_counts_global_batches_across_epochs(tmp_path: Path) -> None:
    profiler = BatchRangeProfiler(tmp_path, profile_batch="4,6")
    recording = _drive(profiler, epochs=2, batches=3)
    assert recording == [False, False, False, True, True, True]
    assert not session.is_running()
    assert profiler.run_dir is not None
    assert profiler.run_dir.parent == tmp_path / "train" / "plugins" / "profile"
    steps = named(load_run(profiler.run_dir), "train")
    assert [s["stats"] for s in steps] == [{"step_num": n, "_r": 1} for n in (4, 5, 6)]


def test_training_ending_inside_the_range_still_saves(tmp_path: Path) -> None:
    profiler = BatchRangeProfiler(tmp_path, profile_batch=(2, 100))
    _drive(profiler, epochs=1, batches=3)
    assert not session.is_running()
    assert len(named(load_run(profiler.run_dir), "train")) == 2


def test_the_session_starts_before_the_first_profiled_batch_begins(tmp_path: Path) -> None:
    # Its start is in the previous batch's end hook, not in the profiled batch's time: the
    # first step is the whole batch (decision 1067). On main it started in batch 3's begin.
    profiler = BatchRangeProfiler(tmp_path, profile_batch="3,4")
    running_before_begin = []
    for _ in range(5):
        running_before_begin.append(session.is_running())
        profiler.batch_begin()
        profiler.batch_end()
    profiler.finish()
    assert running_before_begin == [False, False, True, True, False]
    steps = named(load_run(profiler.run_dir), "train")
    assert [s["stats"]["step_num"] for s in steps] == [3, 4]


def test_a_first_profiled_batch_opening_an_epoch_starts_at_the_epochs_begin(
    tmp_path: Path,
) -> None:
    # Batch 3 opens epoch 2: not at batch 2's end (the validation and the epoch-end hooks
    # between them stay out of the capture), but at the epoch's begin.
    profiler = BatchRangeProfiler(tmp_path, profile_batch="3,3")
    seen = []
    for _ in range(2):
        profiler.epoch_begin()
        for index in range(2):
            seen.append(session.is_running())
            profiler.batch_begin()
            profiler.batch_end(epoch_continues=index == 0)
        seen.append(session.is_running())  # the epoch's end
    profiler.finish()
    assert seen == [False, False, False, True, False, False]
    assert [s["stats"]["step_num"] for s in named(load_run(profiler.run_dir), "train")] == [3]


def test_profiling_from_the_first_batch_starts_at_the_first_epochs_begin(tmp_path: Path) -> None:
    profiler = BatchRangeProfiler(tmp_path, profile_batch="1,1")
    profiler.epoch_begin()
    assert session.is_running()
    profiler.batch_begin()
    profiler.batch_end()
    assert not session.is_running()
    assert [s["stats"]["step_num"] for s in named(load_run(profiler.run_dir), "train")] == [1]


def test_zero_disables(tmp_path: Path) -> None:
    profiler = BatchRangeProfiler(tmp_path, profile_batch=0)
    assert _drive(profiler, epochs=1, batches=3) == [False] * 3
    assert profiler.run_dir is None


def test_a_fit_ending_before_the_first_profiled_batch_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An epoch of 3 batches for profile_batch (5, 10): on main a silent nothing (decision
    # 1077). Batch 4 ending the fit (stop_training) after its end hook started the session
    # for batch 5: on main a saved run of no step, which `stepscope report` read as "Steps:
    # 0". Now neither saves, and the user is told what to change.
    for batches, started in ((3, False), (4, True)):
        logdir = tmp_path / str(batches)
        profiler = BatchRangeProfiler(logdir, profile_batch=(5, 10))
        profiler.epoch_begin()
        for _ in range(batches):
            profiler.batch_begin()
            profiler.batch_end()
        assert session.is_running() is started
        with caplog.at_level(logging.WARNING, logger="stepscope"):
            caplog.clear()
            profiler.finish()
        assert not session.is_running() and profiler.run_dir is None
        assert not logdir.exists() or not any(logdir.rglob("*.pb"))
        assert [r.getMessage() for r in caplog.records] == [
            "stepscope ProfileCallback: nothing was profiled and nothing saved: profile_batch "
            f"asks for batches 5-10, and training ended after batch {batches} (batches are "
            f"counted from 1 across epochs). To profile, give profile_batch a range within "
            f"batches 1-{batches}, or train for at least 5 batches."
        ]


def test_a_fit_of_one_batch_is_told_that_batch_not_a_range_of_one() -> None:
    """After one batch the advice named "a range within batches 1-1" (decision 1093)."""
    said = unreached("ProfileCallback", "batch", 1, 5, 10)
    assert "1-1" not in said
    assert said.endswith(
        "To profile, set profile_batch to 1 (the only batch it ran), or train for at least"
        " 5 batches."
    ), said


def test_a_fit_of_no_batch_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    profiler = BatchRangeProfiler(tmp_path, profile_batch=1)
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        profiler.finish()  # on_train_end of a fit that ran no batch
    assert "profile_batch asks for batch 1, and training ended before its first batch. " in (
        caplog.text
    )


@pytest.mark.integration
@pytest.mark.untimed
def test_real_keras_fit_stopped_before_the_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if "keras" not in sys.modules:
        monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "torch"))
    keras = pytest.importorskip("keras")
    import numpy as np

    import stepscope.keras

    class Stop(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            if batch == 3:  # the 4th: ours, before this one, started the session for the 5th
                self.model.stop_training = True

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    callback = stepscope.keras.ProfileCallback(tmp_path, profile_batch="5,6")
    x, y = np.zeros((32, 4), "float32"), np.zeros((32, 2), "float32")
    with caplog.at_level(logging.WARNING, logger="stepscope"):
        model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[callback, Stop()])
    assert callback.run_dir is None and not session.is_running()
    assert not any(tmp_path.rglob("*.pb"))
    assert "asks for batches 5-6, and training ended after batch 4" in caplog.text


@pytest.mark.integration
def test_real_keras_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "keras" not in sys.modules:  # the backend is chosen at import: torch needs no TF
        monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "torch"))
    keras = pytest.importorskip("keras")
    import numpy as np

    import stepscope.keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    callback = stepscope.keras.ProfileCallback(tmp_path, profile_batch="2,3")
    x, y = np.zeros((16, 4), "float32"), np.zeros((16, 2), "float32")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[callback])
    steps = named(load_run(callback.run_dir), "train")
    assert [s["stats"]["step_num"] for s in steps] == [2, 3]


@pytest.mark.integration
def test_real_keras_first_profiled_step_is_the_scripts_whole_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's callback before ours times each batch from its begin hook to its end hook.
    # The session's start was inside the first profiled batch, before its step began: step
    # 2 read that much under the script's batch (decision 1067). Untimed: each step is
    # compared with the script's own clock of the same batch. The start is made 50 ms
    # longer, as TensorFlow's profiler takes (160-246 ms there), so that the test's
    # margin for the hooks' own time cannot hide it.
    if "keras" not in sys.modules:
        monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "torch"))
    keras = pytest.importorskip("keras")
    import time

    import numpy as np

    import stepscope
    import stepscope.keras

    class Clock(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.ms: list[float] = []

        def on_train_batch_begin(self, batch: int, logs: object = None) -> None:
            self.t = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            self.ms.append((time.perf_counter() - self.t) * 1e3)

    real_start = session.start

    def slow_start(*args: Any, **kwargs: Any) -> None:
        real_start(*args, **kwargs)
        time.sleep(0.05)

    monkeypatch.setattr(session, "start", slow_start)
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(256), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    clock = Clock()
    callback = stepscope.keras.ProfileCallback(tmp_path, profile_batch="2,4")
    x, y = np.zeros((48, 64), "float32"), np.zeros((48, 2), "float32")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[clock, callback])
    steps = stepscope.Analysis(callback.run_dir).json("overview_page")["steps"]
    assert [s["step"] for s in steps] == [2, 3, 4]
    for s, script_ms in zip(steps, clock.ms[1:4], strict=True):
        assert s["duration_ns"] / 1e6 == pytest.approx(script_ms, rel=0.1, abs=10.0), s["step"]
