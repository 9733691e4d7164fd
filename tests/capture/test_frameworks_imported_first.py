"""stepscope's own step markers are whole whatever framework bridges the program's imports
start (decision 671): `stepscope.steps` over a TensorFlow custom loop read 38 of its 40 steps
(TF's trace marks each `FunctionRun` with `_r`), and a capture of 8 `stepscope.step` markers
in a process where TensorFlow and JAX had run was said to read 6 (the XProf compatibility
tests were pinned to no bridges, cb9df79). In a fresh interpreter, with the bridges "auto"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.stats import build_step_db
from tests.support.capture import load_run
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf
import jax, jax.numpy as jnp
import stepscope

tf.function(lambda x: x * 2)(tf.constant(1.0))
jax.jit(lambda x: x * 2)(jnp.ones(3)).block_until_ready()

ds = tf.data.Dataset.from_tensor_slices(np.ones((12 * 8, 4), np.float32)).batch(8)
w = tf.Variable(tf.ones((4, 1)))

@tf.function
def train_step(x):
    w.assign_sub(0.01 * tf.reduce_mean(tf.matmul(x, w)) * tf.ones((4, 1)))
    return tf.reduce_sum(w)

stepscope.start(sys.argv[1] + "/tf")
for _, x in stepscope.steps(ds):
    float(train_step(x))
runs = {"tf": str(stepscope.stop())}
stepscope.start(sys.argv[1] + "/own")
for step in range(8):
    with stepscope.step(step):
        sum(i * i for i in range(20_000))
runs["own"] = str(stepscope.stop())
print(json.dumps(runs))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("tensorflow")
    pytest.importorskip("jax")
    return run_script(SCRIPT, str(tmp_path_factory.mktemp("imported")))


def test_a_tf_loop_under_stepscope_steps_keeps_every_step(runs: dict[str, Any]) -> None:
    db = build_step_db(load_run(Path(runs["tf"])))
    assert db.step_num.tolist() == list(range(12)), db.description


def test_own_markers_after_tf_and_jax_ran_keep_every_step(runs: dict[str, Any]) -> None:
    db = build_step_db(load_run(Path(runs["own"])))
    assert db.step_num.tolist() == list(range(8)), db.description
