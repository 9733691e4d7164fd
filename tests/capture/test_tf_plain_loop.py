"""A TensorFlow user's plain loop, unannotated, captured for real (decision 1046): ``for x in
ds: train(x)`` between ``stepscope.start()`` and ``stop()``, ``ds`` a tf.data pipeline (from
tensors, a map, a batch) and ``train`` a ``tf.function`` that builds its Keras model and
optimizer on its first call. The steps are the loop's iterations as the script timed them
with ``time.perf_counter`` in the same run: as many, step 0 (which traces and compiles) and
the mean within a tenth of the script's. Before, a TF worker thread's
``ExecutorDoneCallback`` made 17 steps of 30, step 0 42.61 ms for the script's 743.01."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.stats import build_step_db
from tests.support.capture import load_run
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

LOOP = """
import json, sys, time
import numpy as np
import tensorflow as tf
import stepscope

N = 30
data = np.random.default_rng(0).random((N * 16, 256), dtype=np.float32)
ds = tf.data.Dataset.from_tensor_slices(data).map(lambda v: v * 2.0 + 1.0).batch(16)
model = tf.keras.Sequential([tf.keras.layers.Dense(512, activation="relu"),
                             tf.keras.layers.Dense(10)])
opt = tf.keras.optimizers.SGD(0.01)

@tf.function
def train(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x)))
    g = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
    return loss

steps = []
stepscope.start(sys.argv[1])
t0 = time.perf_counter_ns()
for x in ds:
    train(x)
    t = time.perf_counter_ns(); steps.append(t - t0); t0 = t
run = stepscope.stop()
print(json.dumps({"run": str(run), "steps": steps}))
"""


def test_a_plain_tf_loop_has_the_scripts_steps(tmp_path: Path) -> None:
    out = run_script(LOOP, str(tmp_path / "run"))
    script = out["steps"]
    db = build_step_db(load_run(Path(out["run"])))
    found = db.dur_ns.tolist()
    assert len(found) == len(script) == 30, found
    # step 0 holds the first call's tracing and compile: hundreds of ms, the script's too
    assert abs(found[0] - script[0]) <= 0.1 * script[0], (found[0], script[0])
    mean, mean_script = sum(found) / len(found), sum(script) / len(script)
    assert abs(mean - mean_script) <= 0.1 * mean_script, (mean, mean_script)
