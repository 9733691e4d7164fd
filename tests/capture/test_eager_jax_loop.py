"""A real JAX loop whose update is not under ``jax.jit`` is told to put it there; the same
loop jitted is not (decisions 491, 492). One interpreter captures both (JAX imported once).

Robust to load: no time is asserted, only what the advice says; a loop like this one (no
input) had 91.6% of its steps once warm in the un-jitted update's overhead at load 8.4
(decision 492), far above the 3% the advice needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.overview import overview_of_run
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

LOOPS = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
import stepscope

def loss(p, x, y):
    return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

def update(p, x, y):
    g = jax.grad(loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)

rng = np.random.default_rng(0)
data = [(rng.standard_normal((32, 16), dtype=np.float32),
         rng.standard_normal((32, 1), dtype=np.float32)) for _ in range(16)]
runs = []
for name, step in (("eager", update), ("jitted", jax.jit(update))):
    key = jax.random.PRNGKey(0)
    p = {"w1": jax.random.normal(key, (16, 64)), "w2": jax.random.normal(key, (64, 1))}
    stepscope.start(sys.argv[1] + "/" + name)
    for x, y in data:
        p = step(p, x, y)
        jax.block_until_ready(p)
    runs.append(str(stepscope.stop()))
print(json.dumps({"runs": runs}))
"""


def test_an_unjitted_update_is_told_to_go_under_jit_and_a_jitted_one_is_not(
    tmp_path: Path,
) -> None:
    pytest.importorskip("jax")
    eager, jitted = run_script(LOOPS, str(tmp_path))["runs"]
    details = overview_of_run(eager).recommendation.details
    told = [d for d in details if "not under jax.jit" in d]
    assert len(told) == 1, details
    assert "under jax.jit (@jax.jit on it" in told[0]
    # no input, nothing else to change: it is the first advice, after the machine's cores
    # when the loop's thread waited for one half its steps (decision 700)
    assert next(d for d in details if "waits for a CPU core" not in d) == told[0]
    assert not any("jax.jit" in d for d in overview_of_run(jitted).recommendation.details)
