"""A jitted JAX loop that prints ``float(loss)`` every 10 iterations, captured with only
`stepscope.start` / `stop` around it: its steps are its iterations, as the script counts and
times them with ``time.perf_counter_ns``, and the host read's wait lies in the iteration that
makes it (decision 726: 100 iterations read as 10 steps of 10)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.stats import build_step_db
from tests.support.capture import load_run
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

LOOP = """
import json, sys, time
import numpy as np
import jax, jax.numpy as jnp
import stepscope

N, EVERY, B, D = 100, 10, 64, 256
rng = np.random.default_rng(0)
data = [rng.standard_normal((B, D)).astype(np.float32) for _ in range(8)]

def loss_fn(p, x):
    h = jnp.tanh(x @ p["w1"])
    return jnp.mean((h @ p["w2"] - x[:, :1]) ** 2)

@jax.jit
def train_step(p, x):
    loss, g = jax.value_and_grad(loss_fn)(p, x)
    return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), loss

k1, k2 = jax.random.split(jax.random.PRNGKey(0))
params = {"w1": jax.random.normal(k1, (D, 512)) * 0.02,
          "w2": jax.random.normal(k2, (512, 1)) * 0.02}
step = []
stepscope.start(sys.argv[1])
t0 = time.perf_counter_ns()
for i in range(N):
    params, loss = train_step(params, data[i % len(data)])
    if (i + 1) % EVERY == 0:
        print("step", i, float(loss), file=sys.stderr)
    t1 = time.perf_counter_ns()
    step.append(t1 - t0)
    t0 = t1
jax.block_until_ready(params)
run = stepscope.stop()
print(json.dumps({"run": str(run), "step": step}))
"""


def test_jax_loop_reading_its_loss_every_ten_iterations_has_steps_of_one(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    measured = run_script(LOOP, str(tmp_path))
    db = build_step_db(load_run(Path(measured["run"])))
    step = np.array(measured["step"], np.float64)
    assert "'PjitFunction(train_step)'" in db.description, db.description
    assert len(db.dur_ns) == len(step), db.description
    # the same run's iterations: the median (a dispatch, the update not waited for) and the
    # iterations that read the loss, which wait for the updates queued before them
    median = float(np.median(step[1:]))
    assert float(np.median(db.dur_ns[1:])) == pytest.approx(median, rel=0.2)
    reads = np.arange(9, len(step), 10)
    assert np.allclose(db.dur_ns[reads], step[reads], rtol=0.1, atol=1e6), (
        db.dur_ns[reads] / 1e6,
        step[reads] / 1e6,
    )
