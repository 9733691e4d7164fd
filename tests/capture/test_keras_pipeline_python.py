"""Keras ``fit`` over a tf.data map running Python (``tf.py_function``, busy 6 ms a batch,
no prefetch written: tf.data injects one), profiled by stepscope's Keras callback: the step
waits for the map's Python in its TensorFlow calls, not in ``IteratorGetNext``; it must read
as input with tf.data's fix, not as compute with no input advice (decision 495). (A map that
sleeps, the GIL released, is not here: whether it is blamed on the GIL follows the machine's
load, decision 555; `tests/stats/test_slowed_ops.py` checks decision 526's rule on built
traces.) Asserts the category and the advice only: no timing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.model import open_run
from stepscope.stats import build_step_db
from stepscope.stats.input.input_pipeline import TF_DATA_FIX
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.capture import load_run
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

KERAS_FIT = """
import json, sys, time
import numpy as np
import tensorflow as tf
import stepscope.keras

def busy(x, y):
    t = time.perf_counter()
    while time.perf_counter() - t < 0.006:
        pass
    return x, y

runs = {}
for name, fn in (("run", busy),):
    def py_map(x, y):
        x, y = tf.py_function(fn, [x, y], [tf.float32, tf.float32])
        x.set_shape([64, 32]); y.set_shape([64, 1])
        return x, y

    xs = np.random.rand(64 * 24, 32).astype(np.float32)
    ys = np.random.rand(64 * 24, 1).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(64, drop_remainder=True).map(py_map)
    model = tf.keras.Sequential([tf.keras.Input((32,)),
                                 tf.keras.layers.Dense(256, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    callback = stepscope.keras.ProfileCallback(f"{sys.argv[1]}/{name}", profile_batch="4,20")
    model.fit(ds, epochs=1, callbacks=[callback], verbose=0)
    runs[name] = str(callback.run_dir)

# steps_per_execution=4 (decision 816): 24 batches, 6 calls of 4; the callback's batch counter
# counts the calls, as Keras's own TensorBoard callback does
ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(64, drop_remainder=True)
model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
callback = stepscope.keras.ProfileCallback(f"{sys.argv[1]}/spe", profile_batch="2,5")
model.fit(ds, epochs=1, callbacks=[callback], verbose=0)
runs["spe"] = str(callback.run_dir)
print(json.dumps(runs))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The fit over the busy map, and one with steps_per_execution=4, in one interpreter."""
    pytest.importorskip("tensorflow")
    return run_script(KERAS_FIT, str(tmp_path_factory.mktemp("keras")))


def _overview(run_dir: Path) -> dict[str, Any]:
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    return output.to_json(get_tool("overview_page").build(ctx))


def test_keras_fit_over_a_python_map_is_told_the_maps_fix(runs: dict[str, Any]) -> None:
    run_dir = Path(runs["run"])
    db = build_step_db(load_run(run_dir))
    assert db.n_steps >= 10
    held = float(db.limits.held_ns.sum()) / float(db.dur_ns.sum())
    # the map's 6 ms against the model's ~1 ms: most of the step, however loaded the machine
    assert held > 0.2, db.limit_ns()
    page = _overview(run_dir)
    assert page["bound_by"]["limits"][0]["key"] == "input", page["bound_by"]["headline"]
    # the first advice, after the machine's cores when the steps' thread waited for one half
    # its steps (decision 700: the map's fix is the loop's own first)
    first = next(d for d in page["recommendation"]["details"] if "waits for a CPU core" not in d)
    # (said as "Express the map with tf ops" where the trace shows the Python keeping the
    # GIL, as "If it computes, ...: express the map with tf ops" where it cannot tell)
    assert "tf.py_function" in first and "xpress the map with tf ops" in first, first
    assert TF_DATA_FIX in first


def test_a_fit_with_steps_per_execution_says_each_step_runs_its_batches(
    runs: dict[str, Any],
) -> None:
    """Reads no timing: the steps' count and what their description says."""
    run_dir = Path(runs["spe"])
    db = build_step_db(load_run(run_dir))
    assert db.n_steps == 4  # the calls 2 to 5, each of 4 batches
    assert "each step runs 4 batches (steps_per_execution=4): " in db.description
    page = _overview(run_dir)
    assert "each step runs 4 batches (steps_per_execution=4)" in page["step_source_detail"]
