"""Keras callback: profile_batch parsing and the inclusive, 1-based global batch range."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stepscope.capture import session
from stepscope.capture.keras import BatchRangeProfiler, parse_profile_batch
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


def test_zero_disables(tmp_path: Path) -> None:
    profiler = BatchRangeProfiler(tmp_path, profile_batch=0)
    assert _drive(profiler, epochs=1, batches=3) == [False] * 3
    assert profiler.run_dir is None


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
